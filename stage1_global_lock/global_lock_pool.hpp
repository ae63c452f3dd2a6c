// Stage 1: one queue, one mutex, one condition variable.
//
// Every submission and every dequeue, from every thread, takes the same lock. That makes the pool
// obviously correct and easy to reason about, and it is the baseline every later stage is
// measured against. Its weakness is that lock: see README.md in this folder.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <string_view>
#include <utility>
#include <vector>

#include "../common/pool_lifecycle.hpp"
#include "../common/task_ledger.hpp"
#include "../common/thread_pool.hpp"
#include "../common/trace.hpp"
#include "../common/worker_identity.hpp"
#include "../common/worker_threads.hpp"

namespace wslab {

class GlobalLockPool final : public IThreadPool {
 public:
  static constexpr std::string_view kName = "stage1_global_lock";

  explicit GlobalLockPool(std::size_t threads, PoolOptions options = {})
      : counters_(validate_thread_count(threads, kName)) {
    start_workers(
        workers_, ledger_, this, threads, options, [this](std::size_t i) { worker_loop(i); },
        [this] { wake_all(); });
  }

  GlobalLockPool(const GlobalLockPool&) = delete;
  GlobalLockPool& operator=(const GlobalLockPool&) = delete;

  ~GlobalLockPool() override {
    drain_and_join(
        *this, own_tasks_here(*this), ledger_, workers_, [this] { return try_run_one(); },
        [this] { wake_all(); });
  }

  void submit(Task task) override {
    require_task(task, kName);
    // Once the task is queued it may run, and even destroy the pool, before this thread reaches
    // the notify below. An outside submitter therefore stays registered with the ledger until it
    // returns, and the destructor waits for it; a worker's own task keeps the pool alive anyway.
    TaskLedger::SubmitterStay stay;
    if (owns_current_thread()) {
      ledger_.admit_recursive();
    } else {
      stay = ledger_.admit_external(kName, this);
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queue_.push_back(std::move(task));
    }
    // One task, one sleeper to wake. Notifying after unlocking spares the woken thread from
    // blocking straight away on the mutex we still held.
    work_available_.notify_one();
  }

  void wait_idle() override { ledger_.wait_idle(kName, *this); }

  bool try_run_one() override {
    Task task;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (queue_.empty()) return false;
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    if (owns_current_thread()) {
      WorkerCounters& mine = counters_[this_thread_identity.index];
      mine.bump(Counter::global_pops);
      mine.bump(Counter::tasks_executed);
      trace::event(trace::Event::global_pop);
    } else {
      run_outside_.bump();
    }
    run_counted_task(task, *this, ledger_);  // the task may destroy the pool: nothing after it
    return true;
  }

  std::size_t thread_count() const noexcept override { return counters_.size(); }
  std::string_view name() const noexcept override { return kName; }
  bool owns_current_thread() const noexcept override { return is_worker_of(this); }

  PoolStats stats() const override { return collect_stats(counters_, run_outside_); }

 private:
  void worker_loop(std::size_t index) {
    WorkerCounters& mine = counters_[index];
    for (;;) {
      Task task;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        while (queue_.empty()) {
          // drained() is read under the mutex, and the destructor, once drained() holds, calls
          // wake_all(), which takes the mutex before notifying: the change cannot slip in between
          // this check and the wait below, so no exit signal is lost.
          if (ledger_.drained()) return;
          mine.bump(Counter::parks);
          trace::event(trace::Event::park_begin);
          work_available_.wait(lock);
          trace::event(trace::Event::park_end);
        }
        task = std::move(queue_.front());
        queue_.pop_front();
      }
      mine.bump(Counter::global_pops);
      mine.bump(Counter::tasks_executed);
      trace::event(trace::Event::global_pop);
      std::exception_ptr escaped = invoke_task(task);
      if (pool_destroyed_by_last_task(escaped)) return;  // `this` is gone
      ledger_.complete(std::move(escaped));
    }
  }

  void wake_all() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
    }
    work_available_.notify_all();
  }

  std::mutex mutex_;
  std::condition_variable work_available_;
  std::deque<Task> queue_;  // guarded by mutex_

  TaskLedger ledger_;
  std::vector<WorkerCounters> counters_;  // one per worker, each on its own cache line
  SharedCounter run_outside_;
  WorkerThreads workers_;  // last member: threads start after everything they use exists
};

}  // namespace wslab
