// How the range algorithms decide whether to split a range once more: a fixed grain when the
// caller gives one, and otherwise splitting on demand.
//
// On demand (Rayon's adaptive scheme): a range starts with a budget of about `threads` splits,
// halved at each split, so without any stealing the work is cut into roughly one piece per
// thread and each piece runs as one tight sequential loop. Whenever a piece turns out to have
// been stolen (it runs on a thread other than the one that forked it), someone was idle, so the
// piece gets its budget back and splits again. The piece count thus follows the observed demand
// rather than a fixed chunk count: a balanced loop pays for a handful of forks, an unbalanced
// one is cut finer exactly where the thieves are.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>

#include "common/thread_pool.hpp"
#include "stage5_parallel_algos/chase_lev_join.hpp"

namespace wslab {

class RangeSplitter {
 public:
  bool adaptive() const noexcept { return grain_ == 0; }

  // grain == 0 picks the adaptive mode; otherwise ranges are split until no longer than grain.
  RangeSplitter(std::size_t grain, std::size_t threads) noexcept
      : grain_(grain), threads_(std::max<std::size_t>(threads, 1)), budget_(threads_) {}

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
};

// Splitting a piece that is already running (lazy binary splitting, Tzannes et al., PPoPP 2010):
// on demand, a piece is cut once per split and then runs as one loop, so at the very end one
// thread may still be in a long loop while the others have nothing left to steal. On a
// ChaseLevPool in adaptive mode, a piece therefore runs in blocks and, between two blocks, asks
// the pool whether a worker is idle (one relaxed load); if so, the rest of the piece is split
// again, and the idle worker steals half of it.
//
// How long a block is matters more than how many there are. A worker that runs out of work
// searches for about 20 us and then parks, and waking it costs 20 us to milliseconds on the test
// VM. With blocks of a sixteenth of the piece (the first version: ~300 us for a quarter of a
// 10-million-element loop), the idle worker had parked long before the busy one looked, and
// every call lost 100-240 us of one thread to the wake-up. So the first block of a piece is a
// short timed probe, and the blocks after it last about kBlockNanoseconds each: the busy worker
// looks while the idle one is still searching. Still at most a sixteenth of the piece, so a
// piece of few, long elements keeps its blocks.
inline constexpr std::size_t kLazyBlocks = 16;
inline constexpr std::size_t kProbeElements = 256;
inline constexpr double kBlockNanoseconds = 10'000.0;

class IdleProbe {
 public:
  IdleProbe(IThreadPool& pool, const RangeSplitter& splitter) noexcept
      : pool_(splitter.adaptive() && pool.thread_count() > 1 ? detail::chase_lev_pool_of(pool)
                                                             : nullptr) {}

  // Runs run(lo, lo + block) for the blocks of [lo, hi), advancing lo, while more than one
  // block's worth remains; returns true if it stopped because a worker went idle (the caller
  // splits [lo, hi)), false if the caller should run the last part, [lo, hi), itself.
  template <class Run>
  bool run_blocks(std::size_t& lo, std::size_t hi, Run&& run) const {
    std::size_t block = block_for(hi - lo);
    if (block == 0) return false;
    // The probe: a few elements, timed (two clock reads per piece, not per block).
    const std::size_t probe = std::min(block, kProbeElements);
    const auto start = std::chrono::steady_clock::now();
    run(lo, lo + probe);
    lo += probe;
    const double probe_ns =
        static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                std::chrono::steady_clock::now() - start)
                                .count());
    if (pool_->has_idle_workers()) return true;
    const double per_element_ns = std::max(probe_ns, 1.0) / static_cast<double>(probe);
    block = std::clamp<std::size_t>(static_cast<std::size_t>(kBlockNanoseconds / per_element_ns), 1,
                                    block);
    while (hi - lo >= 2 * block) {
      run(lo, lo + block);
      lo += block;
      if (pool_->has_idle_workers()) return true;
    }
    return false;
  }

 private:
  // The block length for a piece of `length`, or 0: run it as one loop.
  std::size_t block_for(std::size_t length) const noexcept {
    return pool_ != nullptr && length >= 2 * kLazyBlocks ? length / kLazyBlocks : 0;
  }

  ChaseLevPool* pool_;
};

}  // namespace wslab
