// parallel_reduce(pool, first, last, init [, op [, grain]]): the meaning of std::reduce(first,
// last, init, op): init and the elements combined with op (std::plus<> by default) in an
// unspecified grouping and order, so op must be associative and commutative.
// parallel_transform_reduce(pool, first, last, init, op, map [, grain]) means
// std::transform_reduce(first, last, init, op, map): it reduces map(element). Both also take a
// sized random-access range in place of first, last (range_splitter.hpp). grain as in
// parallel_for: 0 splits on demand, a positive grain splits until pieces are at most that long.
//
// Each piece of the range (split as in parallel_for.hpp) folds its elements on one thread in four
// interleaved lanes (fold_piece), each seeded with an element, so no identity element is needed;
// the halves are combined with op as the join tree unwinds, and init joins last.
//
// On the stage-5 scheduler with the automatic grain, the range is cut into about 64 leaves per
// thread (5 to 100 us each), timed on its first elements (range_splitter.hpp, "Timed leaves";
// README.md, step 'Timed leaves'); the fold of those first elements joins on the left.
//
// Exceptions (from op or map): as in parallel_for: pieces not started are skipped, one exception
// (the leftmost thrown in the split tree) is rethrown.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <iterator>
#include <optional>
#include <ranges>
#include <type_traits>
#include <utility>

#include "../../common/thread_pool.hpp"
#include "../fork_join/join.hpp"
#include "range_splitter.hpp"

namespace wslab {

namespace detail {

inline constexpr std::ptrdiff_t kFoldLanes = 4;

// The sequential fold of one piece, seeded with its first element. Never inlined: inlined into a
// stolen job's entry point, GCC 12 keeps a double accumulator in a general-purpose register and
// moves it to and from an SSE register on every iteration (the register must survive the calls
// around the loop there), which puts two extra transfers on the loop's dependency chain and makes
// a thief fold several times slower than the caller. Compiled on its own, the loop keeps it in a
// register; the call costs nanoseconds per leaf.
template <class T, class It, class Op, class Map>
[[gnu::noinline]] T fold_piece(It first, std::size_t lo, std::size_t hi, Op& op, Map& map) {
  using Diff = std::iter_difference_t<It>;
  It it = first + static_cast<Diff>(lo);
  const It stop = first + static_cast<Diff>(hi);
  auto mapped = [&](It at) { return static_cast<T>(std::invoke(map, *at)); };
  T acc = mapped(it);
  ++it;
  if (stop - it >= 2 * kFoldLanes) {
    // Four accumulators, each seeded with an element, each folding every fourth element: four
    // independent dependency chains instead of one, so a cheap op (a floating-point add: 3-4
    // cycles of latency, 2 per cycle of throughput) is no longer bound by its latency.
    // std::reduce's contract (op associative and commutative) allows the regrouping; libstdc++'s
    // own std::reduce regroups by fours too.
    T lane1 = mapped(it), lane2 = mapped(it + 1), lane3 = mapped(it + 2);
    it += 3;
    for (; stop - it >= kFoldLanes; it += kFoldLanes) {
      acc = std::invoke(op, std::move(acc), mapped(it));
      lane1 = std::invoke(op, std::move(lane1), mapped(it + 1));
      lane2 = std::invoke(op, std::move(lane2), mapped(it + 2));
      lane3 = std::invoke(op, std::move(lane3), mapped(it + 3));
    }
    acc = std::invoke(op, std::invoke(op, std::move(acc), std::move(lane1)),
                      std::invoke(op, std::move(lane2), std::move(lane3)));
  }
  for (; it != stop; ++it)
    acc = std::invoke(op, std::move(acc), mapped(it));
  return acc;
}

// acc = acc op part, or part if acc is empty.
template <class T, class Op>
void fold_into(std::optional<T>& acc, T part, Op& op) {
  acc.emplace(acc ? std::invoke(op, std::move(*acc), std::move(part)) : std::move(part));
}

// A timed leaf: the fold of [lo, hi) in steps of `step`, left to right, the rest split in halves
// whenever hungry() says so (range_splitter.hpp, "Leaves that split while they run"). Empty when
// a failure elsewhere skipped part of it.
template <class T, ForkJoinPool Pool, class Fold, class Op, class Hungry>
std::optional<T> reduce_timed_leaf(Pool pool, std::size_t lo, std::size_t hi, std::size_t step,
                                   Fold& fold, Op& op, const Hungry& hungry,
                                   std::atomic<bool>& failed) {
  if (failed.load(std::memory_order_relaxed)) return std::nullopt;
  std::optional<T> acc;
  bool skipped = false;
  auto run = [&](std::size_t a, std::size_t b) { fold_into(acc, fold(a, b), op); };
  run_in_steps(lo, hi, step, run, hungry, [&](std::size_t from, std::size_t to) {
    const std::size_t mid = from + (to - from) / 2;
    auto [left, right] = join_context(
        pool, [&] { return reduce_timed_leaf<T>(pool, from, mid, step, fold, op, hungry, failed); },
        [&](bool) { return reduce_timed_leaf<T>(pool, mid, to, step, fold, op, hungry, failed); });
    if (!left || !right) {
      skipped = true;
      return;
    }
    fold_into(acc, std::invoke(op, std::move(*left), std::move(*right)), op);
  });
  if (skipped) return std::nullopt;
  return acc;
}

// The fold of [lo, hi), or nothing if the piece was skipped after a failure elsewhere.
template <class T, ForkJoinPool Pool, class Fold, class Op>
std::optional<T> split_and_reduce(Pool pool, std::size_t lo, std::size_t hi, RangeSplitter splitter,
                                  bool migrated, Fold& fold, Op& op, std::atomic<bool>& failed) {
  if (failed.load(std::memory_order_relaxed)) return std::nullopt;
  if (splitter.should_split(hi - lo, migrated)) {
    const std::size_t mid = lo + (hi - lo) / 2;
    auto [left, right] = join_context(
        pool, [&] { return split_and_reduce<T>(pool, lo, mid, splitter, false, fold, op, failed); },
        [&pool, mid, hi, splitter, &fold, &op, &failed](bool stolen) {
          return split_and_reduce<T>(pool, mid, hi, splitter, stolen, fold, op, failed);
        });
    if (!left || !right) return std::nullopt;
    return std::optional<T>(std::invoke(op, std::move(*left), std::move(*right)));
  }
  try {
    if (splitter.timed()) {
      return reduce_timed_leaf<T>(pool, lo, hi, leaf_step(splitter.grain()), fold, op,
                                  ThiefWaiting<Pool>{pool}, failed);
    }
    return std::optional<T>(fold(lo, hi));
  } catch (...) {
    failed.store(true, std::memory_order_relaxed);  // a hint only; the exception carries the news
    throw;
  }
}

// The reduction of fold over [0, n), on the handle parallel_transform_reduce() resolved.
template <class T, ForkJoinPool Pool, class Op, class Fold>
T reduce_on(Pool pool, std::size_t n, T init, Op& op, Fold& fold, std::size_t grain) {
  std::size_t lo = 0;
  std::optional<T> head;  // the fold of the elements the probe ran, if any
  const bool timed = wants_timed_leaves(pool, grain);
  if (timed) {
    grain = probe_leaf_grain(lo, n, pool.thread_count(), [&](std::size_t a, std::size_t b) {
      fold_into(head, fold(a, b), op);
    });
    if (lo == n) return std::invoke(op, std::move(init), std::move(*head));
  }
  std::atomic<bool> failed{false};
  std::optional<T> total = split_and_reduce<T>(
      pool, lo, n, RangeSplitter(grain, pool.thread_count(), timed), true, fold, op, failed);
  if (head) total.emplace(std::invoke(op, std::move(*head), std::move(*total)));
  return std::invoke(op, std::move(init), std::move(*total));
}

}  // namespace detail

template <std::random_access_iterator It, class T, class Op, class Map>
T parallel_transform_reduce(IThreadPool& pool, It first, It last, T init, Op op, Map map,
                            std::size_t grain = 0) {
  if (!(first < last)) return init;
  const auto n = static_cast<std::size_t>(last - first);
  auto fold = [&](std::size_t lo, std::size_t hi) -> T {
    return detail::fold_piece<T>(first, lo, hi, op, map);
  };
  return with_fork_join_pool(pool, [&](ForkJoinPool auto handle) {
    return detail::reduce_on<T>(handle, n, std::move(init), op, fold, grain);
  });
}

template <std::random_access_iterator It, class T, class Op = std::plus<>>
T parallel_reduce(IThreadPool& pool, It first, It last, T init, Op op = {}, std::size_t grain = 0) {
  return parallel_transform_reduce(
      pool, first, last, std::move(init), std::move(op),
      [](auto&& x) -> decltype(auto) { return std::forward<decltype(x)>(x); }, grain);
}

template <SizedRandomAccessRange R, class T, class Op, class Map>
T parallel_transform_reduce(IThreadPool& pool, R&& range, T init, Op op, Map map,
                            std::size_t grain = 0) {
  return parallel_transform_reduce(pool, std::ranges::begin(range), detail::range_last(range),
                                   std::move(init), std::move(op), std::move(map), grain);
}

template <SizedRandomAccessRange R, class T, class Op = std::plus<>>
T parallel_reduce(IThreadPool& pool, R&& range, T init, Op op = {}, std::size_t grain = 0) {
  return parallel_reduce(pool, std::ranges::begin(range), detail::range_last(range),
                         std::move(init), std::move(op), grain);
}

}  // namespace wslab
