// An example of a student's own pool, registered in registry/pools.cpp as "labs:my_pool" so that
// the conformance suite and the harness treat it like a stage (labs/README.md, "Your own pool").
// A template too: copy it to labs/<name>.hpp and rename the namespace, kName and kSpinOnlyName;
// everything it defines lives in its own namespace, so the copy clashes with nothing.
//
// The idea tried here: stage 1 with its std::mutex replaced by a spinlock that parks (SpinLock
// below). The queue is still one std::deque shared by everyone; only the lock changes. Spinning
// helps when the critical section is a few instructions and the holder keeps running, and hurts
// when the holder is preempted (more threads than CPUs): MyPoolKnobs{.park = false}, the variant
// labs:my_pool_spin_only, shows how much. Idle workers must still sleep, so they park on
// common/sleepers.hpp, the protocol stages 2 and 3 use, instead of stage 1's condition variable
// (which needs a std::mutex).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <mutex>
#include <string_view>
#include <utility>
#include <vector>

#include "common/config.hpp"
#include "common/pool_lifecycle.hpp"
#include "common/sleepers.hpp"
#include "common/stats.hpp"
#include "common/task_ledger.hpp"
#include "common/thread_pool.hpp"
#include "common/trace.hpp"
#include "common/worker_identity.hpp"
#include "common/worker_threads.hpp"

namespace wslab::labs::my_pool {

// The pool's one knob (a lab variant turns it; registry/pools.cpp).
struct MyPoolKnobs {
  // Whether a waiter that has spun for about what a sleep would cost goes to sleep (false: it
  // spins until the lock is free, however long the holder is away: a pure spinlock).
  bool park = true;
};

// A spinlock that parks: test-and-test-and-set with exponential backoff for a bounded number of
// looks, then a sleep on the lock word (a futex, through std::atomic::wait). Spinning wins while
// the holder runs: the critical sections here last tens of nanoseconds, less than one futex
// sleep and wake-up, which is what std::mutex pays a waiter as soon as it finds the lock taken.
// Spinning loses when the holder is not running (more threads than CPUs, or a virtual CPU the
// host took away): every waiter then burns its time slice on a lock that cannot be released. So
// the waiter spins for at most about what a sleep would cost it, then sleeps like a mutex.
class SpinLock {
 public:
  explicit SpinLock(bool park) noexcept : park_(park) {}

  void lock() noexcept {
    std::uint32_t pause = 1;
    for (std::uint32_t looks = 0;; ++looks) {
      // Look with a plain load (the line stays shared) and take it only when it looks free.
      std::uint32_t expected = kFree;
      // acquire: everything the previous holder wrote before its release is visible to us.
      if (state_.load(std::memory_order_relaxed) == kFree &&
          state_.compare_exchange_weak(expected, kLocked, std::memory_order_acquire,
                                       std::memory_order_relaxed)) {
        return;
      }
      if (looks < kSpinLooks || !park_) {
        // Back off, twice as long each time: meanwhile the holder takes and releases the lock
        // with the line in its own cache instead of handing it to us on every release.
        for (std::uint32_t i = 0; i < pause; ++i)
          cpu_relax();
        pause = pause < kMaxPause ? 2 * pause : kMaxPause;
      } else {
        // Mark the lock contended so that its unlock wakes us, and sleep while it stays so.
        // acquire, as above: the exchange that finds it free takes the lock.
        while (state_.exchange(kContended, std::memory_order_acquire) != kFree) {
          state_.wait(kContended, std::memory_order_relaxed);
        }
        return;  // held, marked contended: our unlock wakes the next sleeper, if any
      }
    }
  }
  // release: pairs with lock()'s acquire, publishing the queue changes made under the lock.
  void unlock() noexcept {
    if (state_.exchange(kFree, std::memory_order_release) == kContended) state_.notify_one();
  }

 private:
  static constexpr std::uint32_t kFree = 0, kLocked = 1, kContended = 2;  // kContended: sleepers
  // About 80 pauses in all (a few microseconds, about what a futex sleep and wake-up cost), then
  // park: a waiter never spins longer than parking would have cost it.
  static constexpr std::uint32_t kMaxPause = 16;  // pauses between two looks at most
  static constexpr std::uint32_t kSpinLooks = 8;
  std::atomic<std::uint32_t> state_{kFree};
  const bool park_;
};

class MyPool final : public IThreadPool {
 public:
  static constexpr std::string_view kName = "labs:my_pool";
  static constexpr std::string_view kSpinOnlyName = "labs:my_pool_spin_only";  // park = false

  explicit MyPool(std::size_t threads, PoolOptions options = {}, MyPoolKnobs knobs = {})
      : lock_(knobs.park),
        name_(knobs.park ? kName : kSpinOnlyName),
        counters_(validate_thread_count(threads, name_)) {
    start_workers(
        workers_, ledger_, this, threads, options, [this](std::size_t i) { worker_loop(i); },
        [this] { sleepers_.notify_all(); });
  }

  MyPool(const MyPool&) = delete;
  MyPool& operator=(const MyPool&) = delete;

  ~MyPool() override {
    drain_and_join(
        *this, own_tasks_here(*this), ledger_, workers_, [this] { return try_run_one(); },
        [this] { sleepers_.notify_all(); });
  }

  void submit(Task task) override {
    require_task(task, name_);
    // An outside submitter stays registered until it returns: its task may run and destroy the
    // pool before the wake-up below (stage1_global_lock/global_lock_pool.hpp explains).
    TaskLedger::SubmitterStay stay;
    if (owns_current_thread()) {
      ledger_.admit_recursive();
    } else {
      stay = ledger_.admit_external(name_, this);
    }
    try {
      std::lock_guard<SpinLock> lock(lock_);
      queue_.push_back(std::move(task));
    } catch (...) {
      ledger_.retire();  // the deque could not grow: the task was not queued
      throw;
    }
    sleepers_.notify_one();  // a fence and a load when nobody sleeps
  }

  void wait_idle() override { ledger_.wait_idle(name_, *this); }

  bool try_run_one() override {
    Task task;
    if (!pop(task)) return false;
    if (owns_current_thread()) {
      count_run(counters_[this_thread_identity.index]);
    } else {
      run_outside_.bump();
    }
    run_counted_task(task, *this, ledger_);  // the task may destroy the pool: nothing after it
    return true;
  }

  std::size_t thread_count() const noexcept override { return counters_.size(); }
  std::string_view name() const noexcept override { return name_; }
  bool owns_current_thread() const noexcept override { return is_worker_of(this); }

  PoolStats stats() const override { return collect_stats(counters_, run_outside_); }

 private:
  bool pop(Task& out) {
    std::lock_guard<SpinLock> lock(lock_);
    if (queue_.empty()) return false;
    out = std::move(queue_.front());
    queue_.pop_front();
    return true;
  }

  static void count_run(WorkerCounters& mine) noexcept {
    mine.bump(Counter::global_pops);
    mine.bump(Counter::tasks_executed);
  }

  void worker_loop(std::size_t index) {
    WorkerCounters& mine = counters_[index];
    for (;;) {
      Task task;
      if (!pop(task)) {
        if (ledger_.drained()) return;
        // Announce, look again, then sleep: a task pushed after our first look either shows up
        // in the second look or its notify_one() sees us announced (common/sleepers.hpp).
        const Sleepers::Outcome outcome = sleepers_.sleep_unless(
            [&] { return pop(task); }, [this] { return ledger_.drained(); }, mine);
        if (outcome == Sleepers::Outcome::pool_drained) return;
        if (outcome == Sleepers::Outcome::woke_up) continue;
      }
      count_run(mine);
      trace::event(trace::Event::global_pop);
      std::exception_ptr escaped = invoke_task(task);
      if (pool_destroyed_by_last_task(escaped)) return;  // `this` is gone
      ledger_.complete(std::move(escaped));
    }
  }

  SpinLock lock_;
  std::deque<Task> queue_;  // guarded by lock_
  const std::string_view name_;

  TaskLedger ledger_;
  Sleepers sleepers_;
  std::vector<WorkerCounters> counters_;  // one per worker, each on its own cache line
  SharedCounter run_outside_;
  WorkerThreads workers_;  // last member: threads start after everything they use exists
};

}  // namespace wslab::labs::my_pool
