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
// Blocks of kScanBlockBytes of accumulators, taken in order by one loop per thread. A loop folds
// its block, takes the block's offset from the block before it (which published everything up to
// its end), publishes its own, and scans the block from that offset while the fold has left it in
// the core's cache: the input comes from memory once, as in a sequential scan, where folding the
// whole range before scanning it reads it from memory twice. Within a block the fold and the scan
// run its four quarters as four interleaved lanes: a sequential scan of doubles is one dependency
// chain and runs at the latency of an addition (parallel_reduce.hpp, fold_piece), four quarters
// are four chains. The fold keeps the sums of the quarters, so that the scan can start every
// quarter at its own offset.
//
// A block waits for the block before it only about as long as a block takes (ScanWait): that
// block was taken earlier, by a thread that is usually folding at the same time, but that thread
// may be descheduled, or blocked inside op, even in a wait that runs this very loop further up its
// own stack. Then the block is deferred, and every block after it finds the one before it
// deferred and defers at once; once every loop has finished, a sequential pass over their sums
// gives them their offsets and they are scanned in parallel, reading them from memory again.
//
// Cost: op runs about twice per element (the fold and the scan), so an expensive op gains little
// on two threads. One-thread pools, ranges cut into fewer than two blocks, and with grain 0 ranges
// shorter than 2 * kMinScanBlock, take one sequential pass. Allocates one cache-aligned record
// per block (its state, its prefix and its quarters' sums, each a std::optional of the
// accumulator).
//
// Exceptions (from op, from copying elements or from assigning to out): as in parallel_for: blocks
// not yet started are skipped, one exception is rethrown, and what out holds is unspecified.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <iterator>
#include <memory>
#include <optional>
#include <ranges>
#include <utility>

#include "../../common/config.hpp"
#include "../../common/thread_pool.hpp"
#include "parallel_for.hpp"
#include "range_splitter.hpp"

namespace wslab {

// With a positive grain, blocks per thread at most: more balance no better, and each costs a
// hand-off between threads.
inline constexpr std::size_t kScanBlocksPerThread = 16;
// With grain 0 no block is shorter: a block costs a few combinations of sums and a hand-off.
inline constexpr std::size_t kMinScanBlock = 4096;
// With grain 0, the accumulators' bytes per block: the block is read from memory by its fold and
// again, from the core's own cache, by its scan, so it must fit there beside the lines the scan
// writes (half of a 256 KiB L2, the smallest in common use).
inline constexpr std::size_t kScanBlockBytes = 128 * 1024;

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
// Grain 0: blocks of kScanBlockBytes of accumulators (`acc_size` bytes each), at least
// kMinScanBlock elements long. A positive grain asks for blocks of at most `grain` elements, but
// never more than kScanBlocksPerThread per thread (more balance no better, and each costs a
// hand-off, so that grain 1 on a long range would cost more than it gains), nor shorter than two
// elements per lane, which fold_quarters needs to seed a lane without making Acc from one element.
inline std::size_t scan_block_count(std::size_t n, std::size_t threads, std::size_t grain,
                                    std::size_t acc_size) noexcept {
  if (threads < 2) return 1;
  if (grain == 0) {
    if (n < 2 * kMinScanBlock) return 1;
    const std::size_t length =
        std::max(kMinScanBlock, kScanBlockBytes / std::max<std::size_t>(acc_size, 1));
    return std::max<std::size_t>(2, n / length);
  }
  const std::size_t most = kScanBlocksPerThread * threads;
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

// How a block waits for the block before it to publish its prefix. `bounded`: twice as long as
// this thread's previous block took, or its own fold if it has none, and at least kScanPatience;
// then it defers. `forever`: a deliberately broken variant for tests, which waits however long it
// takes, so that a block whose predecessor's thread is blocked inside op until this thread gets
// further waits for good (ScanApi.ABlockBlockedInsideOpDoesNotHoldUpTheBlocksAfterIt).
enum class ScanWait { bounded, forever };
inline constexpr std::chrono::microseconds kScanPatience{50};

// One block's hand-off to the next: its state, and what the state says is there.
template <class Acc>
struct alignas(kCacheLineSize) ScanBlock {
  enum State : std::uint8_t {
    pending,    // not finished yet
    published,  // `prefix` holds everything up to the block's end; the block is scanned by its
                // thread
    deferred,   // `sums` holds its quarters' sums; it is scanned after every loop has finished
    failed      // op threw: the call rethrows, nothing more is published
  };
  std::atomic<State> state{pending};
  std::optional<Acc> prefix;
  std::optional<Acc> sums[kScanLanes];
};

// The offsets of a block's quarters from `before` (everything before the block; empty only for
// the first block of an inclusive scan without init) and its quarters' sums, then in `prefix`
// everything up to the block's end: kScanLanes calls of op (one fewer without `before`).
template <class Acc, class Op>
void block_offsets(const std::optional<Acc>& before, std::optional<Acc>* sums, Op& op,
                   std::optional<Acc>* offsets, std::optional<Acc>& prefix) {
  std::optional<Acc> running = before;
  for (std::size_t j = 0; j < kScanLanes; ++j) {
    offsets[j] = running;
    if (running) {
      running.emplace(std::invoke(op, std::move(*running), std::move(*sums[j])));
    } else {
      running = std::move(sums[j]);
    }
  }
  prefix = std::move(running);
}

// The state of block `before` once it is no longer pending, or pending when the wait gave up.
template <ScanWait Wait, class Acc>
typename ScanBlock<Acc>::State wait_for_block(const ScanBlock<Acc>& before,
                                              std::chrono::steady_clock::duration patience) {
  // acquire: the prefix (or the sums) the block's thread stored before its state.
  auto state = before.state.load(std::memory_order_acquire);
  if (state != ScanBlock<Acc>::pending) return state;
  const auto give_up = std::chrono::steady_clock::now() +
                       std::max<std::chrono::steady_clock::duration>(patience, kScanPatience);
  for (std::uint32_t spins = 1;; ++spins) {
    cpu_relax();
    state = before.state.load(std::memory_order_acquire);
    if (state != ScanBlock<Acc>::pending) return state;
    if (Wait == ScanWait::bounded && spins % 64 == 0 && std::chrono::steady_clock::now() >= give_up)
      return state;
  }
}

// Block b of blocked_scan(): fold, take the offset the block before published, publish this
// block's, scan the block while the fold left it in this core's cache. Or, when the block before
// does not publish in time (or deferred), leave the sums for later (deferred). `took`: how long
// this thread's previous block took, zero before its first; this block's time on return.
template <bool Exclusive, bool Seeded, ScanWait Wait, class Acc, class It, class Out, class Op>
void scan_block(It first, Out out, std::size_t lo, std::size_t hi, Op& op,
                const std::optional<Acc>& init, ScanBlock<Acc>* blocks, std::size_t b,
                std::chrono::steady_clock::duration& took) {
  using Block = ScanBlock<Acc>;
  using Clock = std::chrono::steady_clock;
  Block& mine = blocks[b];
  std::optional<Acc> sums[kScanLanes];
  try {
    const auto start = Clock::now();
    fold_quarters<Acc>(first, lo, hi, op, sums);
    const std::optional<Acc>* before = &init;
    if (b != 0) {
      const Block& prior = blocks[b - 1];
      const auto patience = took != Clock::duration::zero() ? 2 * took : Clock::now() - start;
      const auto state = wait_for_block<Wait>(prior, patience);
      if (state != Block::published) {
        for (std::size_t j = 0; j < kScanLanes; ++j)
          mine.sums[j] = std::move(sums[j]);
        // release: the sums, for whoever reads the state (the scan's last part, after the join)
        mine.state.store(state == Block::failed ? Block::failed : Block::deferred,
                         std::memory_order_release);
        return;
      }
      before = &prior.prefix;
    }
    std::optional<Acc> offsets[kScanLanes];
    block_offsets(*before, sums, op, offsets, mine.prefix);
    // release: the prefix, for the next block's acquire load of the state
    mine.state.store(Block::published, std::memory_order_release);
    scan_quarters<Exclusive, Seeded>(first, out, lo, hi, op, offsets);
    took = Clock::now() - start;
  } catch (...) {
    if (mine.state.load(std::memory_order_relaxed) == Block::pending)
      mine.state.store(Block::failed, std::memory_order_release);
    throw;
  }
}

// The scan of [first, last) into out; init is empty exactly when Seeded is false.
//
// One loop per thread takes the blocks in order (a shared counter) and runs scan_block() on each
// (the file's comment says why). A block that stops waiting for the one before it (ScanWait) is
// deferred, and so is every block after it, which finds the one before it deferred: once every
// loop has finished, a sequential pass over their sums gives their offsets, and they are scanned
// in parallel.
template <bool Exclusive, bool Seeded, class Acc, ScanWait Wait = ScanWait::bounded,
          ForkJoinPool Pool, class It, class Out, class Op>
Out blocked_scan(Pool pool, It first, It last, Out out, std::optional<Acc> init, Op& op,
                 std::size_t grain) {
  if (!(first < last)) return out;
  const auto n = static_cast<std::size_t>(last - first);
  const Out out_end = out + static_cast<std::iter_difference_t<Out>>(n);
  const std::size_t count = scan_block_count(n, pool.thread_count(), grain, sizeof(Acc));
  if (count < 2) {
    scan_sequentially<Exclusive, Seeded, Acc>(first, n, out, std::move(init), op);
    return out_end;
  }
  const std::size_t length = n / count;
  const std::size_t longer = n % count;  // the first `longer` blocks have one more element
  auto block_start = [&](std::size_t b) { return b * length + std::min(b, longer); };
  std::unique_ptr<ScanBlock<Acc>[]> blocks(new ScanBlock<Acc>[count]);
  std::atomic<std::size_t> next{0};
  std::atomic<bool> stop{false};
  const std::size_t loops = std::min(count, pool.thread_count());
  parallel_chunks(pool, loops, 1, [&](std::size_t, std::size_t) {
    std::chrono::steady_clock::duration took{};
    for (;;) {
      // relaxed: blocks hand their prefixes on through their states, not through this count
      const std::size_t b = next.fetch_add(1, std::memory_order_relaxed);
      if (b >= count || stop.load(std::memory_order_relaxed)) return;
      try {
        scan_block<Exclusive, Seeded, Wait>(first, out, block_start(b), block_start(b + 1), op,
                                            init, blocks.get(), b, took);
      } catch (...) {
        stop.store(true, std::memory_order_relaxed);  // a hint: blocks not started are skipped
        throw;
      }
    }
  });
  // The deferred blocks: every block from the first deferred one on (the join ordered their sums
  // before this).
  std::size_t first_deferred = 0;
  while (first_deferred < count && blocks[first_deferred].state.load(std::memory_order_relaxed) ==
                                       ScanBlock<Acc>::published) {
    ++first_deferred;
  }
  if (first_deferred == count) return out_end;
  // A sequential pass over their sums: each block's offsets go where its sums were. Block 0 waits
  // for no block, so it published: the pass starts from a published prefix.
  WSLAB_ASSERT(first_deferred > 0);
  std::optional<Acc> before = std::move(blocks[first_deferred - 1].prefix);
  for (std::size_t b = first_deferred; b < count; ++b) {
    WSLAB_ASSERT(blocks[b].state.load(std::memory_order_relaxed) == ScanBlock<Acc>::deferred);
    std::optional<Acc> offsets[kScanLanes];
    std::optional<Acc> prefix;
    block_offsets(before, blocks[b].sums, op, offsets, prefix);
    for (std::size_t j = 0; j < kScanLanes; ++j)
      blocks[b].sums[j] = std::move(offsets[j]);
    before = std::move(prefix);
  }
  parallel_chunks(pool, count - first_deferred, 1, [&](std::size_t lo, std::size_t hi) {
    for (std::size_t b = first_deferred + lo; b < first_deferred + hi; ++b) {
      scan_quarters<Exclusive, Seeded>(first, out, block_start(b), block_start(b + 1), op,
                                       blocks[b].sums);
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
