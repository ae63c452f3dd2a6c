// Stage 3: Duffy's LockAndWsqThreadPool in C++. Each worker owns a WorkStealingQueue whose owner
// end needs no lock; outside submissions go to a global queue under a global lock; an idle worker
// looks at its own queue, then the global queue, then steals. Sleeping uses common/sleepers.hpp,
// which closes the missed-work race Duffy leaves open. See README.md in this folder.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "../common/config.hpp"
#include "../common/pool_lifecycle.hpp"
#include "../common/sleepers.hpp"
#include "../common/task_ledger.hpp"
#include "../common/thread_pool.hpp"
#include "../common/trace.hpp"
#include "../common/worker_identity.hpp"
#include "../common/worker_threads.hpp"
#include "work_stealing_queue.hpp"

namespace wslab {

// Knobs for the course lab; the defaults are Duffy's design.
struct LockWsqKnobs {
  // false: own queue -> global queue -> steal (Duffy). true: global queue -> own queue -> steal,
  // which serves outside submitters sooner at the price of a global lock on every task.
  bool global_queue_first = false;
  // Searches an idle worker makes, yielding between them, before it goes to sleep.
  unsigned search_rounds = 8;
  // Initial ring size of each worker's queue (a power of two); it doubles when full.
  std::size_t initial_queue_capacity = 32;
};

class LockWsqPool final : public IThreadPool {
 public:
  static constexpr std::string_view kName = "stage3_lock_wsq";
  using Queue = WorkStealingQueue<Task>;

  explicit LockWsqPool(std::size_t threads, PoolOptions options = {}, LockWsqKnobs knobs = {})
      : knobs_(knobs), counters_(validate_thread_count(threads, kName)) {
    queues_.reserve(threads);
    for (std::size_t i = 0; i < threads; ++i) {
      queues_.push_back(std::make_unique<Queue>(knobs_.initial_queue_capacity));
    }
    start_workers(
        workers_, ledger_, this, threads, options, [this](std::size_t i) { worker_loop(i); },
        [this] { sleepers_.notify_all(); });
  }

  LockWsqPool(const LockWsqPool&) = delete;
  LockWsqPool& operator=(const LockWsqPool&) = delete;

  ~LockWsqPool() override {
    drain_and_join(
        *this, own_tasks_here(*this), ledger_, workers_, [this] { return try_run_one(); },
        [this] { sleepers_.notify_all(); });
  }

  void submit(Task task) override {
    require_task(task, kName);
    // An outside submitter stays registered until it returns: its task may run and destroy the
    // pool before the wake-up below (stage 1 explains).
    TaskLedger::SubmitterStay stay;
    if (Queue* mine = own_queue()) {
      ledger_.admit_recursive();
      try {
        mine->push(std::move(task));  // no lock unless the ring must grow
      } catch (...) {
        ledger_.retire();  // growing failed (bad_alloc): the task was not queued
        throw;
      }
    } else {
      stay = ledger_.admit_external(kName, this);
      try {
        std::lock_guard<std::mutex> lock(global_mutex_);
        global_.push_back(std::move(task));
      } catch (...) {
        ledger_.retire();
        throw;
      }
    }
    // Duffy wakes a sleeper only if the lock-free read of "threads waiting" says there is one,
    // and that read can be stale: the missed-work race. notify_one() pairs with the sleeper's
    // announce() so that one of the two always sees the other (common/sleepers.hpp).
    sleepers_.notify_one();
  }

  void wait_idle() override { ledger_.wait_idle(kName, *this); }

  // "Wait inlining": a worker that waits helps by running work, its own queue's newest task
  // first (it is the likeliest to be what it waits for, and its data is in cache).
  bool try_run_one() override {
    Task task;
    if (owns_current_thread()) {
      if (!find_task(this_thread_identity.index, task)) return false;
    } else {
      if (!pop_global(task) && !steal_any(kNoWorker, task)) return false;
      run_outside_.bump();
    }
    run_counted_task(task, *this, ledger_);  // the task may destroy the pool: nothing after it
    return true;
  }

  std::size_t thread_count() const noexcept override { return queues_.size(); }
  std::string_view name() const noexcept override { return kName; }
  bool owns_current_thread() const noexcept override { return is_worker_of(this); }
  const LockWsqKnobs& knobs() const noexcept { return knobs_; }

  PoolStats stats() const override { return collect_stats(counters_, run_outside_); }

 private:
  static constexpr std::size_t kNoWorker = static_cast<std::size_t>(-1);

  // The calling worker's queue, from thread-local storage (Duffy's [ThreadStatic] m_wsq): one
  // TLS read answers both "am I a worker of this pool?" and "where do I push?".
  Queue* own_queue() const noexcept {
    return is_worker_of(this) ? static_cast<Queue*>(this_thread_identity.state) : nullptr;
  }

  void worker_loop(std::size_t index) {
    this_thread_identity.state = queues_[index].get();
    WorkerCounters& mine = counters_[index];
    for (;;) {
      Task task;
      if (!find_task_or_spin(index, task)) {
        // Announce, search once more, and only then sleep: see common/sleepers.hpp and README.md
        // ("the race Duffy left open").
        if (ledger_.drained()) return;
        const Sleepers::Outcome outcome = sleepers_.sleep_unless(
            [&] { return find_task(index, task); }, [this] { return ledger_.drained(); }, mine);
        if (outcome == Sleepers::Outcome::pool_drained) return;
        if (outcome == Sleepers::Outcome::woke_up) continue;
      }
      std::exception_ptr escaped = invoke_task(task);
      if (pool_destroyed_by_last_task(escaped)) return;  // `this` is gone
      ledger_.complete(std::move(escaped));
    }
  }

  bool find_task_or_spin(std::size_t self, Task& out) {
    for (unsigned round = 0; round <= knobs_.search_rounds; ++round) {
      if (find_task(self, out)) return true;
      if (queues_.size() == 1) return false;  // nobody to steal from: retrying cannot help
      std::this_thread::yield();
    }
    return false;
  }

  // Duffy's search order (or the global queue first, by knob). Bumps worker `self`'s statistics.
  bool find_task(std::size_t self, Task& out) {
    WorkerCounters& mine = counters_[self];
    Queue& own = *queues_[self];
    if (knobs_.global_queue_first && pop_global(out)) {
      mine.bump(Counter::global_pops);
    } else if (own.pop(out)) {
      mine.bump(Counter::local_pops);
    } else if (!knobs_.global_queue_first && pop_global(out)) {
      mine.bump(Counter::global_pops);
    } else if (!steal_any(self, out)) {
      return false;
    }
    mine.bump(Counter::tasks_executed);
    return true;
  }

  bool pop_global(Task& out) {
    std::lock_guard<std::mutex> lock(global_mutex_);
    if (global_.empty()) return false;
    out = std::move(global_.front());
    global_.pop_front();
    trace::event(trace::Event::global_pop);
    return true;
  }

  // Two passes over the other workers' queues, starting after our own index so that thieves
  // spread out. The first pass only try-locks (Duffy's zero timeout): a busy queue is skipped,
  // and contention spreads over the queues instead of piling up on one. The second pass waits
  // for the locks of the queues that were busy, since one of them may hold the only work left.
  bool steal_any(std::size_t self, Task& out) {
    const std::size_t n = queues_.size();
    const std::size_t start = self == kNoWorker ? 0 : self + 1;
    bool any_contended = false;
    for (std::size_t k = 0; k < n; ++k) {
      const std::size_t v = (start + k) % n;
      if (v == self) continue;
      const Queue::StealResult result = queues_[v]->try_steal(out);
      if (result == Queue::StealResult::taken) return record_steal(self, v, true);
      any_contended |= result == Queue::StealResult::contended;
      record_steal(self, v, false);
    }
    if (any_contended) {
      for (std::size_t k = 0; k < n; ++k) {
        const std::size_t v = (start + k) % n;
        if (v == self) continue;
        if (record_steal(self, v, queues_[v]->steal(out))) return true;
      }
    }
    return false;
  }

  // Counts one attempt on `victim` and passes its outcome through.
  bool record_steal(std::size_t self, std::size_t victim, bool taken) {
    if (self != kNoWorker) counters_[self].bump(taken ? Counter::steals : Counter::failed_steals);
    trace::event(taken ? trace::Event::steal : trace::Event::steal_failed,
                 static_cast<std::uint32_t>(victim));
    return taken;
  }

  const LockWsqKnobs knobs_;
  std::vector<std::unique_ptr<Queue>> queues_;  // one per worker, by index

  alignas(kCacheLineSize) std::mutex global_mutex_;
  std::deque<Task> global_;  // external submissions; guarded by global_mutex_

  Sleepers sleepers_;
  TaskLedger ledger_;
  std::vector<WorkerCounters> counters_;  // one per worker, each on its own cache line
  SharedCounter run_outside_;
  WorkerThreads workers_;  // last member: threads start after everything they use exists
};

}  // namespace wslab
