// The bookkeeping every pool shares, whatever its queues look like: how many tasks are in flight
// (queued or running), the first exception that escaped a task, and the shutdown gate.
//
// The in-flight count is what makes wait_idle() exact: a task is counted from the moment it is
// submitted until it has finished running, and a task submitted by a running task is counted
// before its parent finishes, so the count can only reach zero when there is truly nothing left.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>

#include "config.hpp"
#include "task.hpp"
#include "thread_pool.hpp"
#include "trace.hpp"
#include "worker_identity.hpp"

namespace wslab {

// Whether the calling thread, which is none of `pool`'s workers, does the work of one of its
// running tasks: a counted task it took with try_run_one(), or a worker's recursion it continues
// on a fresh stack (stage 5's stack guard; the worker blocks until this thread ends). That task
// is counted and cannot end before this thread's submission returns, so the submission is the
// task's own work, as a worker's is: the destructor, which runs "every task and what those
// spawn", waits for it and must not refuse it. The pool is keyed, as WorkerThreads::start() keys
// it, by its complete object.
inline bool works_for_running_task(const IThreadPool& pool) noexcept {
  return running_counted_tasks_of(pool) != 0 ||
         stands_in_for_worker_of(dynamic_cast<const void*>(&pool));
}

class TaskLedger {
 public:
  // An outside thread's stay inside submit(), from its admission until submit() returns. Its
  // task is published before the submitter wakes a worker, so the task may run, and destroy the
  // pool, while the submitter is still on its way to the wake-up: the destructor waits for every
  // stay to end (wait_out_submitters()) before anything is freed. Recursive submissions need
  // none: the running parent keeps the pool alive. Ends when destroyed; movable, so a submit()
  // can declare one and fill it in on its external branch only. Stays are counted in the upper
  // bits of the in-flight word, so that an admission counts its task and its stay in one RMW.
  class [[nodiscard]] SubmitterStay {
   public:
    SubmitterStay() noexcept = default;
    SubmitterStay(SubmitterStay&& other) noexcept
        : ledger_(std::exchange(other.ledger_, nullptr)) {}
    SubmitterStay& operator=(SubmitterStay&& other) noexcept {
      std::swap(ledger_, other.ledger_);
      return *this;
    }
    // release: everything this thread did to the pool inside submit() happens-before the
    // destructor's acquire load that sees the count at zero. This is the stay's last touch.
    ~SubmitterStay() {
      if (ledger_ != nullptr) ledger_->count_.fetch_sub(kOneStay, std::memory_order_release);
    }

   private:
    friend class TaskLedger;
    explicit SubmitterStay(TaskLedger* ledger) noexcept : ledger_(ledger) {}
    TaskLedger* ledger_ = nullptr;
  };

  // Counts an external submission, or refuses it with std::logic_error once the pool's destructor
  // has begun. The increment (of the task and the stay together) comes before the check, and
  // both are seq_cst, as is the destructor's store-then-load in begin_shutdown() and
  // wait_out_submitters(): of the two threads at least one sees the other, so a task is either
  // refused here or waited for by the destructor, never lost, and an admitted submitter is
  // waited for until its stay ends. Never refused: a submitter that does the work of one of
  // `pool`'s running tasks (works_for_running_task()), which the destructor waits for anyway.
  SubmitterStay admit_external(std::string_view pool_name, const IThreadPool* pool = nullptr) {
    count_.fetch_add(1 + kOneStay, std::memory_order_seq_cst);
    if (stopping_.load(std::memory_order_seq_cst)) [[unlikely]] {
      if (pool == nullptr || !works_for_running_task(*pool)) refuse(pool_name);
    }
    return SubmitterStay(this);
  }

  // Counts a submission made by a running task of this pool, or `count` of them in one RMW (a
  // pool that admits ahead of its spawns). Relaxed is enough: the count already includes the
  // running parent, so it cannot reach zero before this increment, and the queue hand-off (a
  // release/acquire pair in every stage) orders it before the child's retire().
  void admit_recursive(std::int64_t count = 1) noexcept {
    count_.fetch_add(count, std::memory_order_relaxed);
  }

  // Marks a task finished after invoke_task(): records what escaped it (the first exception is
  // kept for wait_idle()), then retires it. Returns what retire() returns.
  bool complete(std::exception_ptr escaped) noexcept {
    if (escaped) record(std::move(escaped));
    return retire();
  }

  // Marks `count` tasks finished (a pool that defers its retirements pays them in one RMW).
  // Returns true when this took the count down to what the destructor waits for; a pool may use
  // that to wake its workers early, but need not: the destructor waits in wait_drained() and then
  // wakes every worker itself (a submission that could not be queued also retires, and wakes
  // nobody).
  bool retire(std::int64_t count = 1) noexcept {
    // release: the tasks' effects happen-before anything that observes the count reach zero. The
    // count only changes by read-modify-writes, which continue the release sequence, so the
    // observer sees every retired task's effects, not just the last one's.
    const std::int64_t after = tasks_of(count_.fetch_sub(count, std::memory_order_acq_rel) - count);
    // acquire: pairs with begin_shutdown()'s store, so shutdown_floor_ is read after it was set.
    const bool drained_now = stopping_.load(std::memory_order_acquire) && after <= shutdown_floor_;
    if (after == 0 || drained_now) {
      idle_falls_.fetch_add(1, std::memory_order_relaxed);
      // Taking the mutex between the waiter's predicate check and its sleep closes the lost
      // wake-up window: the waiter either sees the new count or is already asleep when we notify.
      {
        std::lock_guard<std::mutex> lock(idle_mutex_);
      }
      idle_cv_.notify_all();
    }
    return drained_now;
  }

  std::int64_t in_flight() const noexcept {
    return tasks_of(count_.load(std::memory_order_acquire));
  }

  // How many times the count has fallen to zero (or to the destructor's floor): a word of its own,
  // written once per fall, for a waiter that polls before it sleeps. Polling in_flight() instead
  // would read count_, which every submission writes: each read pulls the line away from the
  // submitting core, so the next submission waits for it to come back. Relaxed: a hint that the
  // poll may stop; the sleep that follows checks the count itself, under idle_mutex_.
  std::uint64_t idle_falls() const noexcept { return idle_falls_.load(std::memory_order_relaxed); }

  // Blocks until nothing is queued or running, then rethrows the first exception a task threw
  // since the last call (clearing it; dropped_by_last_wait() counts the others). Refused with
  // std::logic_error on one of `pool`'s workers or inside one of its tasks: it would wait for
  // itself.
  void wait_idle(std::string_view pool_name, const IThreadPool& pool) {
    wait_idle(pool_name, waiting_would_wait_for_itself(pool));
  }

  // The same, for a caller that has made the check itself: `would_wait_for_itself` is true on one
  // of the pool's workers or inside one of its tasks.
  void wait_idle(std::string_view pool_name, bool would_wait_for_itself) {
    if (would_wait_for_itself) {
      throw std::logic_error(std::string(pool_name) +
                             ": wait_idle() called from one of the pool's own worker threads or "
                             "from inside one of its tasks would wait for itself; use "
                             "try_run_one() or a TaskGroup instead");
    }
    {
      std::unique_lock<std::mutex> lock(idle_mutex_);
      idle_cv_.wait(lock, [&] { return in_flight() == 0; });
    }
    rethrow_first_error();
  }

  void rethrow_first_error() {
    std::exception_ptr error;
    {
      std::lock_guard<std::mutex> lock(error_mutex_);
      error = std::exchange(first_error_, nullptr);
      dropped_by_last_wait_ = errors_since_last_wait_ > 0 ? errors_since_last_wait_ - 1 : 0;
      errors_since_last_wait_ = 0;
    }
    if (error) std::rethrow_exception(error);
  }

  // How many task exceptions the last wait_idle() discarded: it rethrew the first one and drops
  // the others. 0 before the first wait_idle().
  std::uint64_t dropped_by_last_wait() const {
    std::lock_guard<std::mutex> lock(error_mutex_);
    return dropped_by_last_wait_;
  }

  // The destructor's first step. From inside the pool's own tasks (`own_tasks` of them running on
  // the destroying thread, one inside the other) those stay in flight, so the pool is drained
  // when only they remain.
  void begin_shutdown(std::int64_t own_tasks) noexcept {
    shutdown_floor_ = own_tasks;
    stopping_.store(true, std::memory_order_seq_cst);
  }
  bool stopping() const noexcept { return stopping_.load(std::memory_order_acquire); }
  // The destructor's second step (when not called from one of the pool's own tasks): block until
  // every queued and running task has finished, tasks they submit while draining included.
  void wait_drained() {
    std::unique_lock<std::mutex> lock(idle_mutex_);
    idle_cv_.wait(lock, [&] { return drained(); });
  }

  // The destructor's last step with the ledger, once drained(): waits until no outside thread is
  // inside submit() any more (SubmitterStay). A stay that remains is a submitter between its
  // push and the end of its wake-up, bounded work that never waits for the pool, so yielding
  // until it ends is enough. Then a refused submitter may still hold idle_mutex_ (refuse());
  // taking the mutex once waits until that thread is done with the ledger.
  void wait_out_submitters() {
    while (stays_of(count_.load(std::memory_order_seq_cst)) != 0)
      std::this_thread::yield();
    std::lock_guard<std::mutex> lock(idle_mutex_);
  }

  // How many outside threads are inside submit() now. For tests.
  std::int64_t submitters() const noexcept {
    return stays_of(count_.load(std::memory_order_acquire));
  }

  // True once shutdown has begun and every task but the destroying one has finished.
  bool drained() const noexcept {
    return stopping_.load(std::memory_order_acquire) &&
           tasks_of(count_.load(std::memory_order_acquire)) <= shutdown_floor_;
  }

  // Called by the destructor: an exception nobody collected with wait_idle() is not dropped in
  // silence.
  void report_unobserved_errors(std::string_view pool_name) noexcept {
    std::lock_guard<std::mutex> lock(error_mutex_);
    if (!first_error_) return;
    std::string what = "a non-std exception";
    try {
      std::rethrow_exception(first_error_);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    std::fprintf(stderr,
                 "wslab: %.*s destroyed with %llu task exception(s) nobody collected with "
                 "wait_idle(); the first: %s\n",
                 static_cast<int>(pool_name.size()), pool_name.data(),
                 static_cast<unsigned long long>(errors_since_last_wait_), what.c_str());
  }

 private:
  // An external submission that found the destructor begun: undone and refused. The count drops
  // and the waiters are notified under idle_mutex_, so the destructor, which checks the count
  // under that mutex, cannot see it drop, finish and free the ledger before this thread is done
  // with it; after the unlock nothing here touches the pool.
  [[noreturn, gnu::cold, gnu::noinline]] void refuse(std::string_view pool_name) {
    std::string message = std::string(pool_name) +
                          ": submit() from outside the pool after its destruction began; the "
                          "task was not queued";
    {
      std::lock_guard<std::mutex> lock(idle_mutex_);
      count_.fetch_sub(1 + kOneStay, std::memory_order_acq_rel);
      idle_cv_.notify_all();
    }
    throw SubmitRefused(std::move(message));
  }

  void record(std::exception_ptr error) noexcept {
    std::lock_guard<std::mutex> lock(error_mutex_);
    if (!first_error_) first_error_ = std::move(error);
    ++errors_since_last_wait_;
  }

  // The tasks in flight (queued or running) in the low bits, the outside submitters still inside
  // submit() (SubmitterStay) from bit kStayShift up. Tasks are retired only after they were
  // counted, so the low part never borrows from the stays.
  static constexpr int kStayShift = 40;
  static constexpr std::int64_t kOneStay = std::int64_t{1} << kStayShift;
  static constexpr std::int64_t tasks_of(std::int64_t count) noexcept {
    return count & (kOneStay - 1);
  }
  static constexpr std::int64_t stays_of(std::int64_t count) noexcept {
    return count >> kStayShift;
  }
  alignas(kCacheLineSize) std::atomic<std::int64_t> count_{0};
  alignas(kCacheLineSize) std::atomic<std::uint64_t> idle_falls_{0};
  alignas(kCacheLineSize) std::atomic<bool> stopping_{false};
  std::int64_t shutdown_floor_ = 0;  // written before stopping_ is published

  std::mutex idle_mutex_;
  std::condition_variable idle_cv_;

  mutable std::mutex error_mutex_;
  std::exception_ptr first_error_;
  std::uint64_t errors_since_last_wait_ = 0;
  std::uint64_t dropped_by_last_wait_ = 0;
};

// Runs a task on the calling thread and keeps the exception that escaped it, if any, in
// `escaped` (left as it was when none did: no exception_ptr is made, moved or destroyed on that
// path); the task's captured state is destroyed before it returns. It touches no pool state on
// purpose: a task may destroy its own pool, and the worker must then not touch the pool after the
// task. This form is for a pool's own workers, which is_worker_of() recognises.
[[gnu::always_inline]] inline void invoke_task(Task& task, std::exception_ptr& escaped) noexcept {
  trace::event(trace::Event::task_begin);
  try {
    task();
  } catch (...) {
    escaped = std::current_exception();
  }
  task.reset();
  trace::event(trace::Event::task_end);
}

// The same, returning the exception.
[[gnu::always_inline]] inline std::exception_ptr invoke_task(Task& task) noexcept {
  std::exception_ptr escaped;
  invoke_task(task, escaped);
  return escaped;
}

// An exception thrown by a task after it destroyed its own pool has nowhere to go but stderr.
inline void report_escaped_from_destroyer(const std::exception_ptr& escaped) noexcept {
  if (escaped) {
    std::fprintf(stderr, "wslab: the task that destroyed its own pool then threw; ignored\n");
  }
}

// How try_run_one() runs a task of `pool` it took, on any thread (outside the pool too), and
// completes it on the pool's `ledger`. The task is marked as running here, counted
// (RunningTaskScope), so that wait_idle() from inside it is refused and so that the pool's
// destructor, called from inside it, knows it is inside one of its own tasks: it then drains
// around the task instead of waiting for it, and leaves it running. A task that destroyed `pool`
// that way is not completed: the ledger is gone, and nothing of the pool is touched. Returns what
// complete() returns (false when the pool is gone).
[[gnu::always_inline]] inline bool run_counted_task(Task& task, const IThreadPool& pool,
                                                    TaskLedger& ledger) noexcept {
  std::exception_ptr escaped;
  {
    RunningTaskScope running(pool, /*counted=*/true);
    // Cleared first, so that only a destruction inside this very task answers below (an outer
    // frame of the same thread may have seen another pool go, or this address in an earlier life).
    const IThreadPool* outer = std::exchange(this_thread_identity.destroyed_pool, nullptr);
    invoke_task(task, escaped);
    if (this_thread_identity.destroyed_pool == &pool) [[unlikely]] {
      report_escaped_from_destroyer(escaped);
      return false;  // left set: an outer frame running a task of the same pool returns too
    }
    this_thread_identity.destroyed_pool = outer;
  }
  return ledger.complete(std::move(escaped));
}

// True on a worker whose pool was destroyed by the task it just ran: the worker loop must return
// at once.
inline bool pool_destroyed_by_last_task(const std::exception_ptr& escaped) noexcept {
  if (!this_thread_identity.orphaned) return false;
  report_escaped_from_destroyer(escaped);
  return true;
}

// Prints an exception that nobody can collect any more: "wslab: <what happened>: <its what()>".
// For the places that drop one (a failed future destroyed unread, a task group's extra failures).
[[gnu::cold]] inline void report_uncollected_exception(std::string_view what_happened,
                                                       const std::exception_ptr& error) noexcept {
  std::string what = "a non-std exception";
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    try {
      what = e.what();
    } catch (...) {
    }
  } catch (...) {
  }
  std::fprintf(stderr, "wslab: %.*s: %s\n", static_cast<int>(what_happened.size()),
               what_happened.data(), what.c_str());
}

// The diagnostic printed when a pool is destroyed from inside one of its own tasks. The pool still
// drains every task and joins its other workers; the destroying worker is detached.
inline void report_destroyed_from_own_task(std::string_view pool_name) noexcept {
  std::fprintf(stderr,
               "wslab: %.*s destroyed from inside one of its own tasks; draining the remaining "
               "tasks, joining the other workers and detaching this one\n",
               static_cast<int>(pool_name.size()), pool_name.data());
}

}  // namespace wslab
