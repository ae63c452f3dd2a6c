// ParkingLot: how the scheduler's workers go to sleep and wake up, with no lost wake-up and no
// thundering herd. The protocol is stage 4's (stage4_chase_lev/parking.hpp; its steps and proof
// sketch are in that chapter, "Parking") on the same counts word (common/idle_counts.hpp:
// searching, sleepers, tokens, and the epoch sleepers block on), with the pushers' fence made
// asymmetric and the guest's loan added (README.md, steps 'Parking' and 'Guest seat').
//
// The loan takes the free bits above the three counts: a thread from outside the pool runs its
// own fork-join call on the pool's spare seat, while one worker sleeps in its place. The bits say
// a sleeper is lent (a guest sits down only when one can be), or a loan is pending until the next
// worker announces (the lent worker's re-scan found work other than the guest's and took itself
// back), and whether a wake-up was skipped because of the loan.
// Invariant: sleepers + tokens + lent = the threads inside park() (between announce and return).
//
// A pusher wakes somebody only when nobody searches: a searcher will find the new work, or, if
// it finds other work first, it passes the duty on (found_work()). That is the "one sleeper per
// new batch of work" rule: a burst of pushes wakes one thread, which then wakes the next only if
// it really found work. Waking all happens only for shutdown.
//
// What checks the asymmetric fences (a pusher's plain load against the membarrier() in
// announce() and return_loan()). TSan models neither half, so its build has pushers do a seq_cst
// RMW instead and compiles the heavy fences out: it checks every transition of the word, never
// the plain-load check. That check is tested in Release by tests/parking_litmus_test.cpp: pusher
// and parker (or guest) meet hundreds of thousands of times in the store-buffering window, and
// BasicParkingLot<HeavyFence::skipped> loses wake-ups there within seconds; this one never does.
#pragma once

#include <atomic>
#include <chrono>
#include <climits>
#include <cstdint>

#include "../../common/config.hpp"
#include "../../common/futex_epoch.hpp"
#include "../../common/idle_counts.hpp"
#include "asymmetric_fence.hpp"

namespace wslab::sched {

// `Heavy` is HeavyFence::skipped only in tests (announce() and return_loan() then skip their
// heavy fences: the broken variant above); use ParkingLot.
template <HeavyFence Heavy = HeavyFence::kept>
class BasicParkingLot : IdleCounts<> {
 public:
  using IdleCounts::begin_search;  // a worker ran out of local work and starts scanning
  using IdleCounts::end_search;    // the searcher stops without work (the pool is shutting down)
  using IdleCounts::park;          // blocks until a token is ours; we return as a searcher
  using IdleCounts::Ticket;

  // Called after publishing work anywhere (a deque, the injector). Costs one load (and a fence
  // where membarrier is unavailable) when somebody already searches or nobody sleeps, the
  // common cases under load.
  [[gnu::always_inline]] void notify_one() noexcept {
    std::uint64_t c;
    if (!WSLAB_TSAN && asymmetric_) {
      // The pusher's half of the Dekker pair, made free: only the compiler must keep our
      // publication before the load below. The parker's membarrier() in announce() supplies
      // the hardware barrier on our core (asymmetric_fence.hpp).
      std::atomic_signal_fence(std::memory_order_seq_cst);
      c = counts_.load(std::memory_order_relaxed);
    } else {
      c = load_after_publishing();  // a seq_cst fence, or under TSan an RMW
    }
    // Nobody to wake when nobody sleeps and no sleeper is lent, or when somebody searches. The
    // first is the common case of a busy pool (every push of every task), so it is tested first:
    // one test of bits decides it (step 'One look per push').
    if ((c & (kSleeperMask | kLent)) == 0 || searching(c) != 0) return;
    if (sleepers(c) == 0 && !owes_skip_note(c)) return;
    wake_one_from(c);
  }

  // Wakes every sleeper, each with a token, the lent one too (the guest, when it returns it,
  // finds the loan revoked): for shutdown ("drained, come and exit").
  void notify_all() noexcept {
    std::uint64_t c = counts_.load(std::memory_order_relaxed);
    for (;;) {
      const std::uint64_t n = sleepers(c) + (lent(c) ? 1 : 0);
      if (n == 0 && !loan_pending(c)) break;
      const std::uint64_t woken = (c & ~(kSleeperMask | kLoanBits)) + n * kToken + n * kSearcher;
      if (counts_.compare_exchange_weak(c, woken, std::memory_order_seq_cst,
                                        std::memory_order_relaxed)) {
        break;
      }
    }
    epoch_.bump_and_wake(INT_MAX);
  }

  // The searcher found work. If it was the last searcher, it wakes a sleeper in its stead: a
  // pusher may have skipped waking anyone because we were searching, and we are about to run
  // something else than what it pushed.
  void found_work() noexcept {
    const std::uint64_t c = counts_.fetch_sub(kSearcher, std::memory_order_seq_cst) - kSearcher;
    if (searching(c) == 0 && (sleepers(c) != 0 || owes_skip_note(c))) wake_one_from(c);
  }

  // Step 1 of parking: the searcher becomes a sleeper. The caller must scan every queue once
  // more and then call cancel_park() (found something) or park(ticket).
  Ticket announce() noexcept {
    // Read before announcing: a wake-up that counts us bumps the epoch after it read the count,
    // so the bump is newer than this ticket and park() cannot block on a stale epoch.
    const Ticket ticket = epoch_.ticket();
    // seq_cst RMW: the parker's half of the Dekker pair; the re-scan that follows uses seq_cst
    // operations (or the deque's seq_cst fence), so it comes after this in S. A pending loan is
    // taken up here: we become the lent sleeper, whom pushes do not wake.
    std::uint64_t c = counts_.load(std::memory_order_relaxed);
    while (!counts_.compare_exchange_weak(c,
                                          loan_pending(c)
                                              ? (c & ~(kPending | kClaimed)) - kSearcher + kLent
                                              : c - kSearcher + kSleeper,
                                          std::memory_order_seq_cst, std::memory_order_relaxed)) {
    }
    // Under TSan the pusher does a seq_cst RMW on counts_ (notify_one()), and two RMWs on one
    // location need no fence to be ordered: the heavy half is only for the default build, whose
    // pushers do a plain load. (TSan models neither membarrier nor its fallback fence. Without
    // this fence, tests/parking_litmus_test.cpp fails in Release.)
    if (!WSLAB_TSAN && asymmetric_ && Heavy == HeavyFence::kept) heavy_fence();
    return ticket;
  }

  // The re-scan found work (or the pool is draining): leave as a searcher.
  void cancel_park() noexcept {
    std::uint64_t c = counts_.load(std::memory_order_relaxed);
    for (;;) {
      // Still counted as a sleeper: take that back. Otherwise a waker already turned our count
      // into a token; consume one. Otherwise we are the sleeper a guest borrowed: revoke the loan
      // (sleepers + tokens + lent counts us in every case). A revoked loan only means the guest
      // no longer stands in for us; it finds out when it returns the loan.
      std::uint64_t next;
      if (sleepers(c) != 0) {
        next = c - kSleeper + kSearcher;
      } else if (tokens(c) != 0) {
        next = c - kToken;
      } else {
        // The loan goes back to pending (the next worker to announce fills it); a skipped
        // wake-up we now cover as a searcher.
        next = (c & ~kLoanBits) + kPending + kSearcher;
      }
      if (counts_.compare_exchange_weak(c, next, std::memory_order_seq_cst,
                                        std::memory_order_relaxed)) {
        return;
      }
    }
  }

  // park(), except that once the sleep has lasted `idle_after` without a wake-up the sleeper
  // calls on_idle() (still asleep as far as everyone else is concerned: a wake-up meanwhile
  // leaves its token, taken right after) and then sleeps on with no timeout. A timeout is no
  // different from a spurious return, which the sleep loop already tolerates.
  template <class OnIdle>
  void park(Ticket ticket, std::chrono::nanoseconds idle_after, OnIdle&& on_idle) noexcept {
    bool timed = idle_after != std::chrono::nanoseconds::max();
    park_with(ticket, [&](Ticket t) {
      if (!timed) {
        epoch_.wait(t);
      } else if (!epoch_.wait_for(t, idle_after)) {
        timed = false;
        on_idle();
      }
    });
  }

  // ---- The guest's loan (README.md, step 'Guest seat'). At most one loan at a time. ----

  // A guest arrives: one sleeper stops counting as one, so that pushes no longer wake it, and the
  // guest works in its place. Returns false, and changes nothing, when nobody sleeps: a guest
  // that worked then would compute beside every worker until one parked, on N + 1 CPUs (a worker
  // still searching steals the guest's first piece before it would ever park).
  bool try_take_loan() noexcept {
    std::uint64_t c = counts_.load(std::memory_order_relaxed);
    for (;;) {
      if (sleepers(c) == 0) return false;
      // seq_cst like every transition of the word (one more RMW in its modification order).
      if (counts_.compare_exchange_weak(c, (c & ~kLoanBits) - kSleeper + kLent,
                                        std::memory_order_seq_cst, std::memory_order_relaxed)) {
        return true;
      }
    }
  }

  // The guest leaves: the lent worker counts as a sleeper again. Returns true if a wake-up was
  // skipped because of the loan (a pusher found nobody to wake but the lent one): the caller must
  // then look at every queue and call wake_one() if it sees work, like a parker's re-scan. This
  // RMW and the heavy fence after it are the guest's half of the Dekker pair (README.md,
  // step 'Guest seat'); most pushes that skipped left work that its pusher runs itself, so waking
  // unconditionally would mostly wake a worker for nothing (and a worker woken for nothing can
  // still be waking up, milliseconds later, in the middle of the next call).
  // `workers` is the pool's worker count (for the wait below).
  bool return_loan(std::uint32_t workers) noexcept {
    std::uint64_t c = counts_.load(std::memory_order_relaxed);
    std::uint64_t back;
    for (;;) {
      if (!lent(c) && !loan_pending(c)) return false;  // shutdown woke the lent worker
      back = lent(c) ? (c & ~kLoanBits) + kSleeper : c & ~kLoanBits;
      if (counts_.compare_exchange_weak(c, back, std::memory_order_seq_cst,
                                        std::memory_order_relaxed)) {
        break;
      }
    }
    // A searcher, if there is one, inherits the skipped pushes' duty like any pusher's (step 6):
    // it finds their work, or hands the duty on, or announces and re-scans.
    if (!skipped(c) || searching(c) != 0) return false;
    if (!WSLAB_TSAN && asymmetric_) {
      if (searcher_arrives(back, workers)) return false;
      if constexpr (Heavy == HeavyFence::kept) heavy_fence();  // as in announce()
    }
    return true;
  }

  // The guest's cheap alternative to the heavy fence (README.md, step 'Guest seat'): a searcher
  // that begins after the guest's return RMW carries the duty like one counted before it (its
  // announce, and so its re-scan, come after that RMW; if it finds other work first, the lent
  // worker is a sleeper again and found_work() wakes it). When the guest leaves, the worker that
  // ran its last stolen piece is usually in its quick scans, not yet counted, and counts itself
  // within a microsecond, while membarrier() costs several microseconds. So wait briefly for a
  // searcher, unless every worker is inside park() (nobody can come). `c` is the value our RMW
  // wrote; any later value we load comes after it in the word's modification order.
  bool searcher_arrives(std::uint64_t c, std::uint32_t workers) noexcept {
    for (std::uint32_t round = 0; round < kSearcherWaitPauses; ++round) {
      if (sleepers(c) + tokens(c) >= workers) return false;
      cpu_relax();
      c = counts_.load(std::memory_order_relaxed);
      if (searching(c) != 0) return true;
    }
    return false;
  }

  // For a thread between announce() and park() (or cancel_park()): true if it is the sleeper lent
  // to the guest. By the invariant, with nobody else asleep or holding a token the loan can only
  // be counting the caller; a loan revoked or pending, or shutdown's tokens, answer false.
  bool caller_is_lent() const noexcept {
    const std::uint64_t c = counts_.load(std::memory_order_seq_cst);
    return lent(c) && sleepers(c) == 0 && tokens(c) == 0;
  }

  // Wakes one sleeper if nobody searches (a push's wake-up, for work found by someone else).
  void wake_one() noexcept { wake_one_from(counts_.load(std::memory_order_seq_cst)); }

  // True for the one searcher that should park at once because the guest's loan waits for a
  // worker to announce (the guest works in its place). One relaxed load while no loan waits;
  // otherwise the first caller claims the loan and the others go on searching.
  bool should_park_for_loan() noexcept {
    std::uint64_t c = counts_.load(std::memory_order_relaxed);
    while ((c & (kPending | kClaimed)) == kPending) {
      if (counts_.compare_exchange_weak(c, c | kClaimed, std::memory_order_seq_cst,
                                        std::memory_order_relaxed)) {
        return true;
      }
    }
    return false;
  }

  std::uint32_t sleeping() const noexcept {
    return static_cast<std::uint32_t>(sleepers(counts_.load(std::memory_order_relaxed)));
  }
  std::uint32_t searching_now() const noexcept {
    return static_cast<std::uint32_t>(searching(counts_.load(std::memory_order_relaxed)));
  }

 private:
  static constexpr std::uint64_t kSleeperMask = kFieldMask << kFieldBits;
  static constexpr std::uint64_t kLent = kFirstFreeBit;
  static constexpr std::uint64_t kSkipped = kLent << 1;
  static constexpr std::uint64_t kPending = kLent << 2;
  static constexpr std::uint64_t kClaimed = kLent << 3;  // a searcher is on its way to take it up
  static constexpr std::uint64_t kLoanBits = kLent | kSkipped | kPending | kClaimed;
  // searcher_arrives(): pauses enough for four times a worker's quick scans, and still well under
  // the membarrier() it saves.
  static constexpr std::uint32_t kSearcherWaitPauses = 64;

  static bool lent(std::uint64_t c) noexcept { return (c & kLent) != 0; }
  static bool skipped(std::uint64_t c) noexcept { return (c & kSkipped) != 0; }
  static bool loan_pending(std::uint64_t c) noexcept { return (c & kPending) != 0; }
  // Nobody to wake but the lent worker, and the guest not yet told that a wake-up was skipped.
  static bool owes_skip_note(std::uint64_t c) noexcept {
    return (c & (kSleeperMask | kLent | kSkipped)) == kLent;
  }

  // Turns one sleeper into a token (and a searcher-to-be), then wakes one blocked thread. If the
  // only sleeper is lent to a guest, it notes the skipped wake-up for the guest instead (which
  // then re-scans when it returns the loan; the RMWs on this word are totally ordered, so either
  // the note is seen by return_loan() or this loop sees the sleeper back).
  [[gnu::noinline]] void wake_one_from(std::uint64_t c) noexcept {
    for (;;) {
      if (searching(c) != 0) return;  // a searcher will find the work (or hand the duty on)
      if (sleepers(c) == 0) {
        if (!owes_skip_note(c)) return;  // nobody sleeps, or the note is already there
        if (counts_.compare_exchange_weak(c, c | kSkipped, std::memory_order_seq_cst,
                                          std::memory_order_relaxed)) {
          return;
        }
        continue;
      }
      if (counts_.compare_exchange_weak(c, c - kSleeper + kToken + kSearcher,
                                        std::memory_order_seq_cst, std::memory_order_relaxed)) {
        break;
      }
    }
    epoch_.bump_and_wake(1);
  }

  // Pushers skip their fence; parkers pay a membarrier() in announce() (asymmetric_fence.hpp).
  const bool asymmetric_ = asymmetric_fence_available();
};

using ParkingLot = BasicParkingLot<>;

}  // namespace wslab::sched
