// How the range algorithms decide whether to split a range once more: a fixed grain when the
// caller gives one, otherwise splitting on demand, except on the stage-5 scheduler, where the
// automatic grain is a tree of timed leaves (below; README.md, step 'Timed leaves').
//
// On demand (Rayon's adaptive scheme): a range starts with a budget of about `threads` splits,
// halved at each split, so without any stealing the work is cut into roughly one piece per
// thread and each piece runs as one tight sequential loop. Whenever a piece turns out to have
// been stolen (it runs on a thread other than the one that forked it), someone was idle, so the
// piece gets its budget back and splits again. The piece count thus follows the observed demand
// rather than a fixed chunk count: a balanced loop pays for a handful of forks, an unbalanced
// one is cut finer exactly where the thieves are.
//
// It also says which ranges the range overloads of the algorithms take (SizedRandomAccessRange).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <iterator>
#include <ranges>

#include "../../common/thread_pool.hpp"
#include "../fork_join/pool_handle.hpp"
#include "../scheduler/port.hpp"

namespace wslab {

// What the range overloads take (parallel_for(pool, range, f), parallel_sort(pool, range), ...):
// a random-access range that knows its size, such as std::vector, std::array, std::span or a
// C array. No integer or iterator of the standard library is such a range, so these overloads
// never take a call meant for the index or iterator forms.
template <class R>
concept SizedRandomAccessRange = std::ranges::random_access_range<R> && std::ranges::sized_range<R>;

namespace detail {

// The end of a sized random-access range as an iterator (its sentinel may be another type).
template <SizedRandomAccessRange R>
std::ranges::iterator_t<R&> range_last(R& r) {
  return std::ranges::begin(r) +
         static_cast<std::ranges::range_difference_t<R&>>(std::ranges::size(r));
}

}  // namespace detail

class RangeSplitter {
 public:
  bool adaptive() const noexcept { return grain_ == 0; }

  // True when the grain came from probe_leaf_grain() (timed leaves, below).
  bool timed() const noexcept { return timed_; }
  std::size_t grain() const noexcept { return grain_; }

  // grain == 0 picks the adaptive mode; otherwise ranges are split until no longer than grain.
  RangeSplitter(std::size_t grain, std::size_t threads, bool timed = false) noexcept
      : grain_(grain),
        threads_(std::max<std::size_t>(threads, 1)),
        budget_(threads_),
        timed_(timed) {}

  // Called once per range, with whether this range migrated to another thread.
  bool should_split(std::size_t length, bool migrated) noexcept {
    if (length < 2) return false;
    if (grain_ != 0) return length > grain_;
    if (migrated) {
      budget_ = std::max(threads_, budget_ / 2);
      return true;
    }
    if (budget_ == 0) return false;
    budget_ /= 2;
    return true;
  }

 private:
  std::size_t grain_;
  std::size_t threads_;
  std::size_t budget_;
  bool timed_;
};

// Timed leaves (the stage-5 scheduler, automatic grain). There a fork costs a deque push and
// pop, so the range can be cut into a full binary tree of leaves, and every untaken half waits on
// a deque where an idle thread can steal it. Splitting only on demand (above, or a running piece
// that splits when it sees an idle worker) keeps the rest of a piece private to the thread
// running it: when that thread is preempted (a virtual machine's kernel threads can take a CPU
// for milliseconds), nobody can take over its remaining work, and a call of a few milliseconds
// can take longer than one thread alone. With timed leaves the stall is one leaf.
//
// How long a leaf should be is a trade. Each leaf costs more than its fork: a leaf starts its
// loop cold (its accumulator, its first cache lines), which a fold whose loop is one long
// dependency chain pays in full, so many short leaves slow a call down. Long leaves cost at the
// end instead, where the last leaf is a thread's idle time at worst. So a range gets about
// kLeavesPerThread leaves per thread, but none longer than kMaxLeafNanoseconds (a long
// parallel_for stays balanced to within one leaf) nor shorter than kMinLeafNanoseconds (a short
// loop is not cut).
//
// The durations come from timing the first elements on the calling thread: 1, then 4, 16, ...
// up to 4,096 more, until the elements run have taken at least kProbeNanoseconds (one clock
// read per step; a range of slow elements is measured after its first element). An element's
// cost is read from the last step alone: the first elements of a large array come from DRAM
// and its first pages miss the TLB, and averaged over the whole probe they make cheap elements
// look several times slower than they are, and the leaves too many. A probe can still mislead
// (an interrupt lands in its last step), so whatever it says there are never more than
// kMaxLeavesPerThread leaves per thread: without that bound, the rare call whose probe misled
// is cut into so many leaves that it takes many times its usual time.
inline constexpr double kMinLeafNanoseconds = 5'000.0;
inline constexpr double kMaxLeafNanoseconds = 100'000.0;
inline constexpr double kProbeNanoseconds = 2'000.0;
inline constexpr std::size_t kMaxProbeSteps = 7;
inline constexpr std::size_t kLeavesPerThread = 64;
inline constexpr std::size_t kMaxLeavesPerThread = 256;

// True when a range should be cut into timed leaves: the automatic grain, several threads, and a
// pool that asks for them (on the scheduler, SchedulerKnobs::timed_leaves). Once per call.
template <ForkJoinPool Pool>
bool wants_timed_leaves(const Pool& pool, std::size_t grain) noexcept {
  return grain == 0 && pool.thread_count() >= 2 && pool.timed_leaves();
}

// Runs the first elements of [lo, hi) with run(a, b), timed, advancing lo past them; returns the
// grain (elements per leaf) for the rest.
template <class Run>
std::size_t probe_leaf_grain(std::size_t& lo, std::size_t hi, std::size_t threads, Run&& run) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  double elapsed_ns = 0;
  double last_step_ns = 0;  // the last step alone: the steadiest view of an element's cost
  std::size_t last_step_length = 1;
  std::size_t step = 1;
  for (std::size_t i = 0; i < kMaxProbeSteps && lo < hi; ++i, step *= 4) {
    const std::size_t stop = lo + std::min(step, hi - lo);
    run(lo, stop);
    last_step_length = stop - lo;
    lo = stop;
    const double before = elapsed_ns;
    elapsed_ns = static_cast<double>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count());
    last_step_ns = elapsed_ns - before;
    if (elapsed_ns >= kProbeNanoseconds) break;
  }
  const double per_element_ns = std::max(last_step_ns, 1.0) / static_cast<double>(last_step_length);
  const auto shortest = static_cast<std::size_t>(kMinLeafNanoseconds / per_element_ns);
  const auto longest = static_cast<std::size_t>(kMaxLeafNanoseconds / per_element_ns);
  const std::size_t even = (hi - lo) / (kLeavesPerThread * threads) + 1;
  const std::size_t bounded = (hi - lo) / (kMaxLeavesPerThread * threads) + 1;
  return std::max({std::min(even, longest), shortest, bounded});
}

// Leaves that split while they run. A running leaf is invisible to thieves:
// once every other piece is taken, a thread that runs out of work waits for the leaves still
// running, up to a whole leaf's time at the end of every call (oneTBB's pieces shrink as they
// are stolen). So a timed leaf runs in steps
// of 1/kLeafSteps of the grain, and between two steps, if a thread is searching for work and
// this worker's deque is empty, it forks half of what is left: the searcher steals it. This is
// splitting on demand again, but on top of the tree of leaves rather than instead of it: every
// leaf is still stealable as a whole before it starts, so a preempted thread still holds back at
// most one leaf (above). The check is a thread-local read and two relaxed loads of lines that
// stay in the cache while everyone is busy. The more steps, the shorter the wait at the end (a
// remainder under two steps is not split), down to where a step is about what a stolen fork
// costs. The halves of a split keep the leaf's step, so nothing shorter than a step is ever
// forked.
inline constexpr std::size_t kLeafSteps = 32;

namespace detail {

inline std::size_t leaf_step(std::size_t grain) noexcept {
  return std::max<std::size_t>(1, grain / kLeafSteps);
}

// Runs run(a, b) over [lo, hi) in steps of `step` elements. After a step, if at least two steps
// remain and hungry() is true, passes the rest to split(from, hi) instead and returns.
template <class Run, class Hungry, class Split>
void run_in_steps(std::size_t lo, std::size_t hi, std::size_t step, Run& run, Hungry&& hungry,
                  Split&& split) {
  while (hi - lo > step) {
    run(lo, lo + step);
    lo += step;
    if (hi - lo >= 2 * step && hungry()) {
      split(lo, hi);
      return;
    }
  }
  run(lo, hi);
}

// Whether the calling worker of `pool` should hand part of its running leaf to a thief. Asked
// between two steps of a leaf: one TLS load and a compare, then two relaxed loads.
template <ForkJoinPool Pool>
struct ThiefWaiting {
  Pool pool;
  bool operator()() const noexcept {
    return pool.with_worker_queue(
        [](sched::WorkerQueue auto queue) { return queue.thief_waiting(); }, [] { return false; });
  }
};

}  // namespace detail

}  // namespace wslab
