// parallel_for(pool, first, last, f [, grain]): f(element&) for every element of a random-access
// range, like std::for_each; parallel_for(pool, range, f [, grain]) the same over a sized
// random-access range (a std::vector, std::array, std::span, C array); parallel_for(pool, begin,
// end, f [, grain]) with integral bounds: f(index) for every index in [begin, end).
//
// The index form's bounds may have different integer types: the index has their common type
// (std::common_type_t), so parallel_for(pool, 0, v.size(), f) calls f(std::size_t). An empty or
// reversed range (end <= begin, compared as numbers, whatever the types) does nothing. When the
// index type is unsigned and a bound is negative, as in parallel_for(pool, -1, v.size(), f), no
// index type holds the range: the call throws std::out_of_range before calling f. bool is no
// index.
//
// The range is cut by recursive halving with join(), so the pieces form a tree that work-stealing
// balances: a thief takes the biggest untaken half. grain == 0 (the default) splits on demand
// (range_splitter.hpp); a positive grain splits until pieces are at most that long.
//
// Exceptions: once a call of f throws, pieces not yet started are skipped and pieces running
// finish; the call rethrows one of the thrown exceptions (the one from the leftmost piece in the
// split tree that threw; the others are dropped).
//
// On the stage-5 scheduler with the automatic grain, the range is cut into about 64 leaves per
// thread (5 to 100 us each), timed on its first elements (range_splitter.hpp, "Timed leaves";
// README.md, step 'Timed leaves'), and a leaf that is running splits what is left of it when a
// thread runs out of work (same file, "Leaves that split while they run").
#pragma once

#include <atomic>
#include <concepts>
#include <cstddef>
#include <functional>
#include <iterator>
#include <ranges>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include "../../common/thread_pool.hpp"
#include "../fork_join/join.hpp"
#include "range_splitter.hpp"

namespace wslab {

namespace detail {

// A timed leaf: chunk over [lo, hi) in steps of `step`, split in halves whenever hungry() says
// so (range_splitter.hpp, "Leaves that split while they run").
template <ForkJoinPool Pool, class Chunk, class Hungry>
void run_timed_leaf(Pool pool, std::size_t lo, std::size_t hi, std::size_t step, Chunk& chunk,
                    const Hungry& hungry, std::atomic<bool>& failed) {
  if (failed.load(std::memory_order_relaxed)) return;
  run_in_steps(lo, hi, step, chunk, hungry, [&](std::size_t from, std::size_t to) {
    const std::size_t mid = from + (to - from) / 2;
    join_context(
        pool, [&] { run_timed_leaf(pool, from, mid, step, chunk, hungry, failed); },
        [&](bool) { run_timed_leaf(pool, mid, to, step, chunk, hungry, failed); });
  });
}

// Calls chunk(lo, hi) on disjoint pieces covering [lo, hi), in parallel.
template <ForkJoinPool Pool, class Chunk>
void split_and_run(Pool pool, std::size_t lo, std::size_t hi, RangeSplitter splitter, bool migrated,
                   Chunk& chunk, std::atomic<bool>& failed) {
  if (failed.load(std::memory_order_relaxed)) return;
  if (splitter.should_split(hi - lo, migrated)) {
    const std::size_t mid = lo + (hi - lo) / 2;
    join_context(
        pool, [&] { split_and_run(pool, lo, mid, splitter, false, chunk, failed); },
        [&pool, mid, hi, splitter, &chunk, &failed](bool stolen) {
          split_and_run(pool, mid, hi, splitter, stolen, chunk, failed);
        });
    return;
  }
  try {
    if (splitter.timed()) {
      run_timed_leaf(pool, lo, hi, leaf_step(splitter.grain()), chunk, ThiefWaiting<Pool>{pool},
                     failed);
    } else {
      chunk(lo, hi);
    }
  } catch (...) {
    // relaxed: only a hint to skip work; the exception itself travels through join.
    failed.store(true, std::memory_order_relaxed);
    throw;
  }
}

template <ForkJoinPool Pool, class Chunk>
void parallel_chunks(Pool pool, std::size_t n, std::size_t grain, Chunk&& chunk) {
  if (n == 0) return;
  if (n == 1) {
    chunk(std::size_t{0}, std::size_t{1});
    return;
  }
  std::size_t lo = 0;
  const bool timed = wants_timed_leaves(pool, grain);
  if (timed) {
    grain = probe_leaf_grain(lo, n, pool.thread_count(), chunk);  // runs the first elements here
    if (lo == n) return;
  }
  std::atomic<bool> failed{false};
  split_and_run(pool, lo, n, RangeSplitter(grain, pool.thread_count(), timed), true, chunk, failed);
}

// parallel_chunks() on `pool`'s handle, resolved here once for the whole call.
template <class Chunk>
void parallel_chunks_on(IThreadPool& pool, std::size_t n, std::size_t grain, Chunk&& chunk) {
  with_fork_join_pool(pool,
                      [&](ForkJoinPool auto handle) { parallel_chunks(handle, n, grain, chunk); });
}

}  // namespace detail

// An integer type that can be an index bound: any integral type but bool.
template <class T>
concept IndexBound = std::integral<T> && !std::same_as<std::remove_cv_t<T>, bool>;

// The type of the indices parallel_for(pool, begin, end, f) passes to f.
template <IndexBound B, IndexBound E>
using index_t = std::common_type_t<B, E>;

template <IndexBound B, IndexBound E, class F>
  requires std::invocable<F&, index_t<B, E>>
void parallel_for(IThreadPool& pool, B begin, E end, F&& f, std::size_t grain = 0) {
  using Index = index_t<B, E>;
  // Unary plus promotes character types, which std::cmp_less does not take.
  if (!std::cmp_less(+begin, +end)) return;
  // A bound falls outside Index only when it is negative and Index unsigned; with begin < end, a
  // negative end implies a negative begin.
  if constexpr (std::is_unsigned_v<Index> && std::is_signed_v<B>) {
    if (begin < 0) {
      throw std::out_of_range("wslab::parallel_for: the bounds [" + std::to_string(+begin) + ", " +
                              std::to_string(+end) +
                              ") do not fit their common index type, which is unsigned; give "
                              "both bounds one signed type");
    }
  }
  using U = std::make_unsigned_t<Index>;
  const U first = static_cast<U>(static_cast<Index>(begin));
  // The outer cast wraps the difference back: types shorter than int are promoted for it.
  const auto n =
      static_cast<std::size_t>(static_cast<U>(static_cast<U>(static_cast<Index>(end)) - first));
  detail::parallel_chunks_on(pool, n, grain, [&](std::size_t lo, std::size_t hi) {
    for (std::size_t i = lo; i < hi; ++i) {
      std::invoke(f, static_cast<Index>(static_cast<U>(first + static_cast<U>(i))));
    }
  });
}

template <std::random_access_iterator It, class F>
  requires(!std::integral<It>) && std::invocable<F&, std::iter_reference_t<It>>
void parallel_for(IThreadPool& pool, It first, It last, F&& f, std::size_t grain = 0) {
  if (!(first < last)) return;
  const auto n = static_cast<std::size_t>(last - first);
  detail::parallel_chunks_on(pool, n, grain, [&](std::size_t lo, std::size_t hi) {
    using Diff = std::iter_difference_t<It>;
    const It stop = first + static_cast<Diff>(hi);
    for (It it = first + static_cast<Diff>(lo); it != stop; ++it)
      std::invoke(f, *it);
  });
}

template <class R, class F>
  requires SizedRandomAccessRange<R> && std::invocable<F&, std::ranges::range_reference_t<R>>
void parallel_for(IThreadPool& pool, R&& range, F&& f, std::size_t grain = 0) {
  parallel_for(pool, std::ranges::begin(range), detail::range_last(range), std::forward<F>(f),
               grain);
}

}  // namespace wslab
