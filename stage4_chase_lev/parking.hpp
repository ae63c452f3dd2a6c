// Parking: how stage-4 workers spin, then sleep on a futex, with no lost wake-up and no
// thundering herd. The numbered steps and the proof sketch are in README.md ("Parking").
//
// One 64-bit word counts the idle workers, so that every transition is one read-modify-write
// and every decision sees a consistent picture:
//   searching  awake, out of local work, scanning the other queues (or just woken to do so);
//   sleepers   announced as going to sleep, not yet woken;
//   tokens     wake-ups handed to sleepers and not yet picked up.
// Invariant: sleepers + tokens = the threads between announce() and the end of park().
// A separate 32-bit epoch is the futex word: every wake-up bumps it.
#pragma once

#include <atomic>
#include <climits>
#include <cstdint>

#include "../common/config.hpp"
#include "../common/futex_epoch.hpp"
#include "../common/std_atomics.hpp"

namespace wslab::chase_lev {

// `Atomics` and `Epoch` are the atomics and the futex it runs on: std::atomic and FutexEpoch, or
// the model checker's (stage4_chase_lev/tests/parking_model_test.cpp runs this code under it).
template <class Atomics = StdAtomics, class Epoch = FutexEpoch>
class BasicParking {
 public:
  using Ticket = typename Epoch::Ticket;

  // Step 6: called after publishing work (a deque push, an injector push). Wakes one sleeper, and
  // only if nobody searches: a searcher will find the work, or hand the duty on (found_work()).
  void notify_one() noexcept {
    std::uint64_t c;
    if constexpr (WSLAB_TSAN) {
      // TSan does not model fences. A seq_cst RMW on the word is ordered with the parker's RMW
      // in announce(): either it reads the parker's count, or the parker's RMW reads ours and
      // acquires our publication. Not the default: every push would take the line exclusive.
      c = counts_.fetch_add(0, std::memory_order_seq_cst);
    } else {
      // seq_cst fence: the pusher's half of the store-load pair. Our publication comes before
      // the load of the counts in S, against the parker's RMW and its seq_cst re-scan.
      Atomics::thread_fence(std::memory_order_seq_cst);
      c = counts_.load(std::memory_order_relaxed);
    }
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

  // Step 1: a worker out of local work starts searching.
  void begin_search() noexcept { counts_.fetch_add(kSearcher, std::memory_order_seq_cst); }

  // Step 2: the searcher found work. If it was the last searcher it wakes a sleeper in its
  // stead: a pusher may have skipped its wake-up counting on us, and we run something else.
  void found_work() noexcept {
    const std::uint64_t c = counts_.fetch_sub(kSearcher, std::memory_order_seq_cst) - kSearcher;
    if (searching(c) == 0 && sleepers(c) != 0) wake_one(c);
  }

  // The searcher stops without work: the pool is drained.
  void end_search() noexcept { counts_.fetch_sub(kSearcher, std::memory_order_seq_cst); }

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

  // Step 5: blocks until a token is ours; we return counted as a searcher.
  void park(Ticket ticket) noexcept {
    for (;;) {
      if (try_take_token()) return;
      epoch_.wait(ticket);  // not if a bump came after our ticket was read
      // Woken, by a signal, or by a wake-up meant for someone else: reread, then look again. A
      // token handed out after this load comes with a bump newer than it.
      ticket = epoch_.ticket();
    }
  }

 private:
  static constexpr std::uint64_t kFieldBits = 21;  // kMaxThreads (1024) fits with room to spare
  static constexpr std::uint64_t kFieldMask = (std::uint64_t{1} << kFieldBits) - 1;
  static constexpr std::uint64_t kSearcher = 1;
  static constexpr std::uint64_t kSleeper = std::uint64_t{1} << kFieldBits;
  static constexpr std::uint64_t kToken = std::uint64_t{1} << (2 * kFieldBits);

  static std::uint64_t searching(std::uint64_t c) noexcept { return c & kFieldMask; }
  static std::uint64_t sleepers(std::uint64_t c) noexcept { return (c / kSleeper) & kFieldMask; }
  static std::uint64_t tokens(std::uint64_t c) noexcept { return (c / kToken) & kFieldMask; }

  // Turns one sleeper into a token and a searcher in one CAS, so that the next pusher already
  // sees a searcher and wakes nobody (no herd), then wakes one blocked thread.
  void wake_one(std::uint64_t c) noexcept {
    do {
      if (searching(c) != 0 || sleepers(c) == 0) return;
    } while (!counts_.compare_exchange_weak(c, c - kSleeper + kToken + kSearcher,
                                            std::memory_order_seq_cst, std::memory_order_relaxed));
    epoch_.bump_and_wake(1);
  }

  bool try_take_token() noexcept {
    std::uint64_t c = counts_.load(std::memory_order_seq_cst);
    while (tokens(c) != 0) {
      if (counts_.compare_exchange_weak(c, c - kToken, std::memory_order_seq_cst,
                                        std::memory_order_seq_cst)) {
        return true;
      }
    }
    return false;
  }

  alignas(kCacheLineSize) typename Atomics::template atomic<std::uint64_t> counts_{0};
  Epoch epoch_;  // what sleepers block on: every wake-up bumps it
};

using Parking = BasicParking<>;

}  // namespace wslab::chase_lev
