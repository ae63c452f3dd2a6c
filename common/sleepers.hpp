// How idle workers go to sleep and how a submission wakes one, without a lost wake-up, for pools
// whose work lives in places the sleep mutex does not guard (per-worker queues, lock-free rings).
//
// The lost wake-up it closes: a worker scans every queue, finds nothing, and decides to sleep;
// meanwhile another thread pushes a task and checks "is anyone asleep?" before the worker has said
// so. The pusher skips the wake-up, the worker sleeps, and the task sits in a queue while a core
// idles (forever, if nothing else is ever submitted). Duffy's part 3 leaves exactly this window
// open. The protocol below is the classic "announce, re-check, then block" (an event count):
//
//   worker:  ticket = announce()        pusher:  publish the task
//            scan every queue again               notify_one()
//            nothing? sleep(ticket)
//
// announce() counts the worker as a sleeper and then issues a seq_cst fence; notify_one() issues a
// seq_cst fence and then reads that count. The two fences are ordered one way or the other: either
// the pusher's fence comes first, and the worker's second scan sees the task; or the worker's
// fence comes first, and the pusher sees the worker counted and wakes someone. The ticket closes
// the last gap, between the worker's second scan and its block: the wake-up bumps an epoch under
// the mutex, and sleep(ticket) only blocks while the epoch still equals the ticket it was given.
// Under ThreadSanitizer, which does not model fences, both sides use read-modify-writes of the
// count instead (see notify_one()), as stage 4's parking lot does.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>

#include "config.hpp"
#include "stats.hpp"
#include "trace.hpp"

namespace wslab {

class Sleepers {
 public:
  using Ticket = std::uint64_t;

  // First step of going to sleep: the caller counts itself as a sleeper, then must scan for work
  // once more. If it finds some it calls cancel(); otherwise sleep(ticket).
  Ticket announce() noexcept {
    // acquire: if we read a bump, the task published before it is visible to our second scan.
    const Ticket ticket = epoch_.load(std::memory_order_acquire);
    // seq_cst RMW: under ThreadSanitizer this alone pairs with notify_one()'s RMW (see there).
    sleepers_.fetch_add(1, std::memory_order_seq_cst);
    if constexpr (!WSLAB_TSAN) {
      // The worker's half of the store-load (Dekker) pair described above: the count must be
      // visible before the second scan reads any queue. Only a seq_cst fence orders an earlier
      // store before a later load; acquire/release cannot.
      std::atomic_thread_fence(std::memory_order_seq_cst);
    }
    return ticket;
  }

  // The second scan found work: the caller is not going to sleep after all.
  void cancel() noexcept { sleepers_.fetch_sub(1, std::memory_order_relaxed); }

  enum class Outcome { found_work, pool_drained, woke_up };

  // A worker's whole way to sleep once a search came back empty: announce, look once more
  // (`look_again()` returns true when it found work), and block only if that found nothing and
  // the pool is not draining to its end (`drained()`). Counts and traces the park. After
  // `woke_up` the caller searches again; after `pool_drained` its worker loop returns.
  template <class LookAgain, class Drained>
  Outcome sleep_unless(LookAgain&& look_again, Drained&& drained, WorkerCounters& counters) {
    const Ticket ticket = announce();
    if (look_again()) {
      cancel();
      return Outcome::found_work;
    }
    if (drained()) {
      cancel();
      return Outcome::pool_drained;
    }
    counters.bump(Counter::parks);
    trace::event(trace::Event::park_begin);
    sleep(ticket);
    trace::event(trace::Event::park_end);
    return Outcome::woke_up;
  }

  // Blocks until a notify_one() or notify_all() made after announce() returned `ticket` (returns
  // at once if one already happened). Spurious returns are harmless: the caller scans again.
  void sleep(Ticket ticket) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      // The epoch only changes under mutex_, so a bump either happened before this check (we do
      // not block) or happens while we wait (the notify reaches us or another sleeper).
      while (epoch_.load(std::memory_order_relaxed) == ticket)
        wake_.wait(lock);
    }
    sleepers_.fetch_sub(1, std::memory_order_relaxed);
  }

  // Called after publishing a task: wakes one sleeper, if any worker has announced. Costs one
  // fence and one load when nobody sleeps, which is the common case under load.
  void notify_one() {
    std::uint32_t announced_now;
    if constexpr (WSLAB_TSAN) {
      // ThreadSanitizer does not model fences. A seq_cst RMW on the count does the same job in
      // terms it understands: it and announce()'s RMW are ordered on the one variable, so either
      // it reads the worker's increment, or the worker's RMW reads ours and acquires the task we
      // published. Not the default: every submission would take the line exclusive.
      announced_now = sleepers_.fetch_add(0, std::memory_order_seq_cst);
    } else {
      // The pusher's half of the Dekker pair: the task must be visible before we read the count.
      std::atomic_thread_fence(std::memory_order_seq_cst);
      announced_now = sleepers_.load(std::memory_order_relaxed);
    }
    if (announced_now == 0) return;
    bump();
    wake_.notify_one();
  }

  // Wakes every sleeper unconditionally: for shutdown and for "the last task finished".
  void notify_all() {
    bump();
    wake_.notify_all();
  }

  // Workers between announce() and the end of sleep() or cancel(); a hint for statistics.
  std::uint32_t announced() const noexcept { return sleepers_.load(std::memory_order_relaxed); }

 private:
  void bump() {
    std::lock_guard<std::mutex> lock(mutex_);
    // release: pairs with announce()'s acquire load (see there).
    epoch_.fetch_add(1, std::memory_order_release);
  }

  alignas(kCacheLineSize) std::atomic<std::uint32_t> sleepers_{0};
  alignas(kCacheLineSize) std::atomic<Ticket> epoch_{0};
  std::mutex mutex_;
  std::condition_variable wake_;
};

}  // namespace wslab
