// parallel_inclusive_scan(pool, first, last, out [, op [, init]]) and
// parallel_exclusive_scan(pool, first, last, out, init [, op]): the meaning of std::inclusive_scan
// and std::exclusive_scan. out[i] is the elements up to i (inclusive) or before i (exclusive,
// after init) combined with op (std::plus<> by default) in their order, so op must be associative
// but need not be commutative. Both return out + (last - first). out may equal first (a scan in
// place); otherwise [out, out + n) must not overlap [first, last). Both also take a sized
// random-access range in place of first, last (range_splitter.hpp).
//
// Both take a grain last, as the other algorithms do: (..., op, init, grain) and (..., init, op,
// grain). The inclusive scan without init takes it as (..., op, ScanGrain{grain}): there a plain
// integer is init, as in std::inclusive_scan. 0 (the default) keeps the blocks described below; a
// positive grain cuts blocks of at most that many elements, within the bounds of
// scan_block_count (at most kScanBlocksPerThread per thread, at least 2 * kScanLanes elements).
//
// The accumulator has the type of init, or without init the input's value type, as in the
// standard; op(acc, element), op(acc, acc) and op(element, element) must convert to it.
//
// Two passes over blocks, at most kScanBlocksPerThread per thread. The first folds every block in
// parallel; a sequential scan over those sums gives every block its offset; the second scans every
// block in parallel from its offset. Within a block both passes run its four quarters as four
// interleaved lanes: a sequential scan of doubles is one dependency chain and runs at the latency
// of an addition (parallel_reduce.hpp, fold_piece), four quarters are four chains. The sums of the
// quarters, not only of the blocks, are kept between the passes, so that the second pass can start
// every quarter at its own offset.
//
// Cost: op runs about twice per element and the input is read twice, so an expensive op gains
// little on two threads. One-thread pools, ranges cut into fewer than two blocks, and with grain 0
// ranges shorter than 2 * kMinScanBlock, take one sequential pass. Allocates one array of four
// partial results (std::optional) per block.
//
// Exceptions (from op, from copying elements or from assigning to out): as in parallel_for: blocks
// not yet started are skipped, one exception is rethrown, and what out holds is unspecified.
#pragma once

#include <algorithm>
#include <cstddef>
#include <functional>
#include <iterator>
#include <memory>
#include <optional>
#include <ranges>
#include <utility>

#include "../../common/thread_pool.hpp"
#include "parallel_for.hpp"
#include "range_splitter.hpp"

namespace wslab {

// Blocks per thread: enough that stealing evens out the passes (the last block of a pass is at
// most 1/16 of a thread's share), few enough that the sequential scan of their sums is nothing.
inline constexpr std::size_t kScanBlocksPerThread = 16;
// With grain 0 no block is shorter: a block costs two forks and a few combinations of sums.
inline constexpr std::size_t kMinScanBlock = 4096;

// The grain of a scan. A type of its own because after op, without init, an integer is init (as
// in std::inclusive_scan); it converts from an integer so that, after init, a plain integer is a
// grain as in the other algorithms.
struct ScanGrain {
  std::size_t value = 0;
  constexpr ScanGrain(std::size_t grain = 0) noexcept : value(grain) {}  // NOLINT: implicit
};

namespace detail {

inline constexpr std::size_t kScanLanes = 4;

// How many blocks a scan of n > 0 elements is cut into; fewer than two means one sequential pass.
// A positive grain asks for blocks of at most `grain` elements, but never more than
// kScanBlocksPerThread per thread: those already balance the passes, and more would only lengthen
// the sequential scan of their sums (kScanLanes calls of op per block, on one thread) and the
// array of sums, so that grain 1 on a long range would cost more than it gains. Nor shorter than
// two elements per lane, which fold_quarters needs to seed a lane without making Acc from one
// element.
inline std::size_t scan_block_count(std::size_t n, std::size_t threads,
                                    std::size_t grain) noexcept {
  if (threads < 2) return 1;
  const std::size_t most = kScanBlocksPerThread * threads;
  if (grain == 0) return n < 2 * kMinScanBlock ? 1 : std::min(n / kMinScanBlock, most);
  const std::size_t wanted = n / grain + (n % grain != 0 ? 1 : 0);  // n + grain - 1 may overflow
  return std::min({wanted, most, n / (2 * kScanLanes)});
}

// Element i of out takes acc op first[i] (inclusive) or acc (exclusive), and acc moves past
// first[i]. The element is read before out[i] is written: out may be first.
template <bool Exclusive, class Acc, class It, class Out, class Op>
inline void scan_step(It first, Out out, std::size_t i, Acc& acc, Op& op) {
  const auto from = static_cast<std::iter_difference_t<It>>(i);
  const auto to = static_cast<std::iter_difference_t<Out>>(i);
  if constexpr (Exclusive) {
    Acc next = std::invoke(op, acc, first[from]);
    out[to] = std::move(acc);
    acc = std::move(next);
  } else {
    acc = std::invoke(op, std::move(acc), first[from]);
    out[to] = acc;
  }
}

// The quarters of [lo, hi): lanes [at[j], at[j + 1]); the last takes the remainder.
struct Quarters {
  std::size_t at[kScanLanes + 1];
  Quarters(std::size_t lo, std::size_t hi) noexcept {
    const std::size_t q = (hi - lo) / kScanLanes;
    for (std::size_t j = 0; j < kScanLanes; ++j)
      at[j] = lo + j * q;
    at[kScanLanes] = hi;
  }
};

// The first pass over one block: the sums of its quarters (each at least two elements long), in
// order within each quarter, folded as four interleaved lanes. Never inlined, for the reason
// given at fold_piece (parallel_reduce.hpp).
template <class Acc, class It, class Op>
[[gnu::noinline]] void fold_quarters(It first, std::size_t lo, std::size_t hi, Op& op,
                                     std::optional<Acc>* sums) {
  using Diff = std::iter_difference_t<It>;
  auto x = [&](std::size_t i) -> decltype(auto) { return first[static_cast<Diff>(i)]; };
  const Quarters q(lo, hi);
  // Seeded with op of two elements: the standard does not ask Acc to be made from one.
  Acc s0 = std::invoke(op, x(q.at[0]), x(q.at[0] + 1));
  Acc s1 = std::invoke(op, x(q.at[1]), x(q.at[1] + 1));
  Acc s2 = std::invoke(op, x(q.at[2]), x(q.at[2] + 1));
  Acc s3 = std::invoke(op, x(q.at[3]), x(q.at[3] + 1));
  const std::size_t length = q.at[1] - q.at[0];
  for (std::size_t t = 2; t < length; ++t) {
    s0 = std::invoke(op, std::move(s0), x(q.at[0] + t));
    s1 = std::invoke(op, std::move(s1), x(q.at[1] + t));
    s2 = std::invoke(op, std::move(s2), x(q.at[2] + t));
    s3 = std::invoke(op, std::move(s3), x(q.at[3] + t));
  }
  for (std::size_t i = q.at[3] + length; i < hi; ++i)
    s3 = std::invoke(op, std::move(s3), x(i));
  sums[0].emplace(std::move(s0));
  sums[1].emplace(std::move(s1));
  sums[2].emplace(std::move(s2));
  sums[3].emplace(std::move(s3));
}

// The second pass over one block: each quarter scanned from its offset (offsets[j], everything
// before quarter j), as four interleaved lanes. Only the first quarter of an inclusive scan
// without init has no offset (Seeded false): its first element is its own prefix.
template <bool Exclusive, bool Seeded, class Acc, class It, class Out, class Op>
[[gnu::noinline]] void scan_quarters(It first, Out out, std::size_t lo, std::size_t hi, Op& op,
                                     std::optional<Acc>* offsets) {
  const Quarters q(lo, hi);
  std::size_t begin[kScanLanes] = {q.at[0], q.at[1], q.at[2], q.at[3]};
  if constexpr (!Seeded) {
    if (!offsets[0]) {
      offsets[0].emplace(first[static_cast<std::iter_difference_t<It>>(lo)]);
      out[static_cast<std::iter_difference_t<Out>>(lo)] = *offsets[0];
      ++begin[0];
    }
  }
  Acc a0 = std::move(*offsets[0]);
  Acc a1 = std::move(*offsets[1]);
  Acc a2 = std::move(*offsets[2]);
  Acc a3 = std::move(*offsets[3]);
  const std::size_t common = q.at[1] - begin[0];  // the shortest lane
  for (std::size_t t = 0; t < common; ++t) {
    scan_step<Exclusive>(first, out, begin[0] + t, a0, op);
    scan_step<Exclusive>(first, out, begin[1] + t, a1, op);
    scan_step<Exclusive>(first, out, begin[2] + t, a2, op);
    scan_step<Exclusive>(first, out, begin[3] + t, a3, op);
  }
  // What is left: one element of lanes 1 and 2 if lane 0 gave its first to the seed, and the
  // remainder of lane 3.
  for (std::size_t i = begin[1] + common; i < q.at[2]; ++i)
    scan_step<Exclusive>(first, out, i, a1, op);
  for (std::size_t i = begin[2] + common; i < q.at[3]; ++i)
    scan_step<Exclusive>(first, out, i, a2, op);
  for (std::size_t i = begin[3] + common; i < hi; ++i)
    scan_step<Exclusive>(first, out, i, a3, op);
}

template <bool Exclusive, bool Seeded, class Acc, class It, class Out, class Op>
void scan_sequentially(It first, std::size_t n, Out out, std::optional<Acc> init, Op& op) {
  std::size_t i = 0;
  if constexpr (!Seeded) {
    init.emplace(*first);
    *out = *init;
    i = 1;
  }
  Acc acc = std::move(*init);
  for (; i < n; ++i)
    scan_step<Exclusive>(first, out, i, acc, op);
}

// The scan of [first, last) into out; init is empty exactly when Seeded is false.
template <bool Exclusive, bool Seeded, class Acc, ForkJoinPool Pool, class It, class Out, class Op>
Out blocked_scan(Pool pool, It first, It last, Out out, std::optional<Acc> init, Op& op,
                 std::size_t grain) {
  if (!(first < last)) return out;
  const auto n = static_cast<std::size_t>(last - first);
  const Out out_end = out + static_cast<std::iter_difference_t<Out>>(n);
  const std::size_t blocks = scan_block_count(n, pool.thread_count(), grain);
  if (blocks < 2) {
    scan_sequentially<Exclusive, Seeded, Acc>(first, n, out, std::move(init), op);
    return out_end;
  }
  const std::size_t length = n / blocks;
  const std::size_t longer = n % blocks;  // the first `longer` blocks have one more element
  auto block_start = [&](std::size_t b) { return b * length + std::min(b, longer); };
  // The sums of the quarters, then (after the sequential scan) their offsets.
  std::unique_ptr<std::optional<Acc>[]> parts(new std::optional<Acc>[kScanLanes * blocks]);
  parallel_chunks(pool, blocks, 1, [&](std::size_t lo, std::size_t hi) {
    for (std::size_t b = lo; b < hi; ++b)
      fold_quarters<Acc>(first, block_start(b), block_start(b + 1), op, &parts[kScanLanes * b]);
  });
  std::optional<Acc> running = std::move(init);
  for (std::size_t k = 0; k < kScanLanes * blocks; ++k) {
    std::optional<Acc> sum = std::move(parts[k]);
    parts[k] = running;
    if (running) {
      *running = std::invoke(op, std::move(*running), std::move(*sum));
    } else {
      running = std::move(sum);
    }
  }
  parallel_chunks(pool, blocks, 1, [&](std::size_t lo, std::size_t hi) {
    for (std::size_t b = lo; b < hi; ++b) {
      scan_quarters<Exclusive, Seeded>(first, out, block_start(b), block_start(b + 1), op,
                                       &parts[kScanLanes * b]);
    }
  });
  return out_end;
}

// blocked_scan() on `pool`'s handle, resolved here once for the whole call.
template <bool Exclusive, bool Seeded, class Acc, class It, class Out, class Op>
Out scan_on(IThreadPool& pool, It first, It last, Out out, std::optional<Acc> init, Op& op,
            ScanGrain grain) {
  return with_fork_join_pool(pool, [&](ForkJoinPool auto handle) {
    return blocked_scan<Exclusive, Seeded, Acc>(handle, first, last, out, std::move(init), op,
                                                grain.value);
  });
}

}  // namespace detail

// A ScanGrain right after op is a grain, not init: the overload that takes it is more specialised
// than the one that takes init of any type T, so it wins, and every other argument there stays
// init.
template <std::random_access_iterator It, std::random_access_iterator Out, class Op = std::plus<>>
Out parallel_inclusive_scan(IThreadPool& pool, It first, It last, Out out, Op op = {}) {
  return detail::scan_on<false, false, std::iter_value_t<It>>(pool, first, last, out, std::nullopt,
                                                              op, ScanGrain{});
}

template <std::random_access_iterator It, std::random_access_iterator Out, class Op>
Out parallel_inclusive_scan(IThreadPool& pool, It first, It last, Out out, Op op, ScanGrain grain) {
  return detail::scan_on<false, false, std::iter_value_t<It>>(pool, first, last, out, std::nullopt,
                                                              op, grain);
}

template <std::random_access_iterator It, std::random_access_iterator Out, class Op, class T>
Out parallel_inclusive_scan(IThreadPool& pool, It first, It last, Out out, Op op, T init,
                            ScanGrain grain = {}) {
  return detail::scan_on<false, true, T>(pool, first, last, out, std::optional<T>(std::move(init)),
                                         op, grain);
}

template <std::random_access_iterator It, std::random_access_iterator Out, class T,
          class Op = std::plus<>>
Out parallel_exclusive_scan(IThreadPool& pool, It first, It last, Out out, T init, Op op = {},
                            ScanGrain grain = {}) {
  return detail::scan_on<true, true, T>(pool, first, last, out, std::optional<T>(std::move(init)),
                                        op, grain);
}

template <SizedRandomAccessRange R, std::random_access_iterator Out, class Op = std::plus<>>
Out parallel_inclusive_scan(IThreadPool& pool, R&& range, Out out, Op op = {}) {
  return parallel_inclusive_scan(pool, std::ranges::begin(range), detail::range_last(range), out,
                                 std::move(op));
}

template <SizedRandomAccessRange R, std::random_access_iterator Out, class Op>
Out parallel_inclusive_scan(IThreadPool& pool, R&& range, Out out, Op op, ScanGrain grain) {
  return parallel_inclusive_scan(pool, std::ranges::begin(range), detail::range_last(range), out,
                                 std::move(op), grain);
}

template <SizedRandomAccessRange R, std::random_access_iterator Out, class Op, class T>
Out parallel_inclusive_scan(IThreadPool& pool, R&& range, Out out, Op op, T init,
                            ScanGrain grain = {}) {
  return parallel_inclusive_scan(pool, std::ranges::begin(range), detail::range_last(range), out,
                                 std::move(op), std::move(init), grain);
}

template <SizedRandomAccessRange R, std::random_access_iterator Out, class T,
          class Op = std::plus<>>
Out parallel_exclusive_scan(IThreadPool& pool, R&& range, Out out, T init, Op op = {},
                            ScanGrain grain = {}) {
  return parallel_exclusive_scan(pool, std::ranges::begin(range), detail::range_last(range), out,
                                 std::move(init), std::move(op), grain);
}

}  // namespace wslab
