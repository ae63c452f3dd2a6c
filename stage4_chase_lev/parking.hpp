// Parking: how stage-4 workers spin, then sleep on a futex, with no lost wake-up and no
// thundering herd. The numbered steps and the proof sketch are in README.md ("Parking"); the
// counts word (searching, sleepers, tokens) and the sleep loop are common/idle_counts.hpp's.
// Invariant: sleepers + tokens = the threads between announce() and the end of park().
#pragma once

#include <atomic>
#include <climits>
#include <cstdint>

#include "../common/futex_epoch.hpp"
#include "../common/idle_counts.hpp"
#include "../common/std_atomics.hpp"

namespace wslab::chase_lev {

// `Atomics` and `Epoch` are the atomics and the futex it runs on: std::atomic and FutexEpoch, or
// the model checker's (stage4_chase_lev/tests/parking_model_test.cpp runs this code under it).
template <class Atomics = StdAtomics, class Epoch = FutexEpoch>
class BasicParking : IdleCounts<Atomics, Epoch> {
  using Counts = IdleCounts<Atomics, Epoch>;
  using Counts::kSearcher, Counts::kSleeper, Counts::kToken, Counts::counts_, Counts::epoch_;
  using Counts::searching, Counts::sleepers;

 public:
  using Counts::begin_search;  // step 1: a worker out of local work starts searching
  using Counts::end_search;    // the searcher stops without work: the pool is drained
  using Counts::park;          // step 5: blocks until a token is ours; returns as a searcher
  using typename Counts::Ticket;

  // Step 6: called after publishing work (a deque push, an injector push). Wakes one sleeper, and
  // only if nobody searches: a searcher will find the work, or hand the duty on (found_work()).
  void notify_one() noexcept {
    const std::uint64_t c = this->load_after_publishing();
    if (searching(c) == 0 && sleepers(c) != 0) wake_one(c);
  }

  // Step 7, for shutdown: every sleeper gets a token. Always an RMW (even with no sleeper), so
  // that a worker announcing after it reads from it and sees what the caller did before.
  void notify_all() noexcept {
    std::uint64_t c = counts_.load(std::memory_order_relaxed);
    while (!counts_.compare_exchange_weak(
        c, c - sleepers(c) * kSleeper + sleepers(c) * (kToken + kSearcher),
        std::memory_order_seq_cst, std::memory_order_relaxed)) {
    }
    epoch_.bump_and_wake(INT_MAX);
  }

  // Step 2: the searcher found work. If it was the last searcher it wakes a sleeper in its
  // stead: a pusher may have skipped its wake-up counting on us, and we run something else.
  void found_work() noexcept {
    const std::uint64_t c = counts_.fetch_sub(kSearcher, std::memory_order_seq_cst) - kSearcher;
    if (searching(c) == 0 && sleepers(c) != 0) wake_one(c);
  }

  // Step 3: the searcher becomes a sleeper. The caller must then scan every queue once more with
  // seq_cst loads (step 4) and call cancel_park() or park(ticket).
  Ticket announce() noexcept {
    // Read before announcing: a waker that counts us bumps the epoch after it read the counts,
    // so its bump is newer than this ticket and park() cannot block through it.
    const Ticket ticket = epoch_.ticket();
    // seq_cst RMW: the parker's half of the store-load pair with notify_one().
    counts_.fetch_add(kSleeper - kSearcher, std::memory_order_seq_cst);
    return ticket;
  }

  // The re-scan found work (or the pool is drained): back to searching. If a waker already
  // turned our count into a token, we consume the token instead (sleepers are anonymous).
  void cancel_park() noexcept {
    std::uint64_t c = counts_.load(std::memory_order_relaxed);
    for (;;) {
      const std::uint64_t next = sleepers(c) != 0 ? c - kSleeper + kSearcher : c - kToken;
      if (counts_.compare_exchange_weak(c, next, std::memory_order_seq_cst,
                                        std::memory_order_relaxed)) {
        return;
      }
    }
  }

 private:
  // Turns one sleeper into a token and a searcher in one CAS, so that the next pusher already
  // sees a searcher and wakes nobody (no herd), then wakes one blocked thread.
  void wake_one(std::uint64_t c) noexcept {
    do {
      if (searching(c) != 0 || sleepers(c) == 0) return;
    } while (!counts_.compare_exchange_weak(c, c - kSleeper + kToken + kSearcher,
                                            std::memory_order_seq_cst, std::memory_order_relaxed));
    epoch_.bump_and_wake(1);
  }
};

using Parking = BasicParking<>;

}  // namespace wslab::chase_lev
