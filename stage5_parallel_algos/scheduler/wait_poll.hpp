// WaitPoll: whether a thread outside the pool that waits for it to drain (Scheduler::wait_idle(),
// ThreadPool::wait_all()) polls before it sleeps, learned from how its last waits ended
// (README.md, step 'Adaptive wait').
//
// A poll pays off when the pool drains during it: the waiter returns without a futex wake-up,
// and the workers, still searching, take its next submission without one either. A poll that runs
// out pays for nothing: the waiter sleeps anyway, after taking a CPU, or at least a share of one,
// for the whole poll. With as many workers as CPUs that share comes out of the workers' time, and
// a program whose waits each outlast the poll (rounds of a thousand tasks and more) loses it on
// every round. So the waiter keeps a streak: the waits in a row whose poll ran out. From
// kSleepAfter of them on, it sleeps at once, but polls every kProbeEvery-th wait, to find out
// whether the waits have become short again; one poll that sees the drain ends the streak.
//
// Only the poll's length changes: the sleep is the ledger's (TaskLedger::wait_idle(), a mutex and
// a condition variable that re-checks the count), so no wake-up can be lost either way. Several
// outside threads may wait at once and share the streak; its relaxed loads and stores may lose an
// update between them, which only changes one wait's choice.
#pragma once

#include <atomic>
#include <cstdint>

namespace wslab::sched {

class WaitPoll {
 public:
  // Polls that run out in a row before a waiter stops polling; then one wait in kProbeEvery polls.
  static constexpr std::uint32_t kSleepAfter = 2;
  static constexpr std::uint32_t kProbeEvery = 8;

  // `adaptive` false: every wait polls (SchedulerKnobs::adaptive_wait).
  explicit WaitPoll(bool adaptive) noexcept : adaptive_(adaptive) {}

  // Whether the next wait polls first. A wait that does not is counted here.
  bool poll_first() noexcept {
    const std::uint32_t streak = streak_.load(std::memory_order_relaxed);
    if (!adaptive_ || streak < kSleepAfter ||
        (streak - kSleepAfter) % kProbeEvery == kProbeEvery - 1)
      return true;
    streak_.store(streak + 1, std::memory_order_relaxed);
    slept_at_once_.fetch_add(1, std::memory_order_relaxed);
    return false;
  }

  // How a poll ended: `drained` when the pool drained during it, false when it ran out.
  void polled(bool drained) noexcept {
    if (drained) {
      streak_.store(0, std::memory_order_relaxed);
      return;
    }
    streak_.store(streak_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    polls_run_out_.fetch_add(1, std::memory_order_relaxed);
  }

  // Waits that slept without polling, and polls that ran out, so far. For tests and the lab.
  std::uint64_t slept_at_once() const noexcept {
    return slept_at_once_.load(std::memory_order_relaxed);
  }
  std::uint64_t polls_run_out() const noexcept {
    return polls_run_out_.load(std::memory_order_relaxed);
  }

 private:
  const bool adaptive_;
  std::atomic<std::uint32_t> streak_{0};
  std::atomic<std::uint64_t> slept_at_once_{0};
  std::atomic<std::uint64_t> polls_run_out_{0};
};

}  // namespace wslab::sched
