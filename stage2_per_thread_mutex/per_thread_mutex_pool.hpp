// Stage 2: one std::deque per worker, each behind its own mutex, plus a global queue for
// submissions from outside; idle workers steal half of a busy worker's deque.
//
// Stage 1 funnels every submit and every dequeue through one lock. Here a task submitted by a
// running task stays in its worker's own deque, so recursive work takes only an uncontended lock.
// The price is load imbalance, which stealing repairs. See README.md in this folder.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <numeric>
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

namespace wslab {

// Knobs for the course lab; the defaults are the design described in README.md.
struct PerThreadMutexKnobs {
  // true: a thief takes half of the victim's deque (at least one task); false: exactly one.
  bool steal_half = true;
  // How many randomised sweeps over all victims an idle worker makes, yielding between sweeps,
  // before it goes to sleep. A victim whose lock is busy is skipped, so one failed sweep does not
  // prove there is no work.
  unsigned steal_sweeps = 8;
};

class PerThreadMutexPool final : public IThreadPool {
 public:
  static constexpr std::string_view kName = "stage2_per_thread_mutex";

  explicit PerThreadMutexPool(std::size_t threads, PoolOptions options = {},
                              PerThreadMutexKnobs knobs = {})
      : knobs_(knobs), locals_(validate_thread_count(threads, kName)), counters_(threads) {
    for (std::size_t i = 0; i < threads; ++i) {
      // Different odd seeds, so workers do not probe victims in lock step.
      locals_[i].rng_state = (0x9E3779B97F4A7C15ull * (i + 1)) | 1;
    }
    start_workers(
        workers_, ledger_, this, threads, options, [this](std::size_t i) { worker_loop(i); },
        [this] { sleepers_.notify_all(); });
  }

  PerThreadMutexPool(const PerThreadMutexPool&) = delete;
  PerThreadMutexPool& operator=(const PerThreadMutexPool&) = delete;

  ~PerThreadMutexPool() override {
    drain_and_join(
        *this, own_tasks_here(*this), ledger_, workers_, [this] { return try_run_one(); },
        [this] { sleepers_.notify_all(); });
  }

  void submit(Task task) override {
    require_task(task, kName);
    const bool recursive = owns_current_thread();
    // An outside submitter stays registered until it returns: its task may run and destroy the
    // pool before the wake-up below (stage 1 explains).
    TaskLedger::SubmitterStay stay;
    if (recursive) {
      ledger_.admit_recursive();
    } else {
      stay = ledger_.admit_external(kName, this);
    }
    try {
      if (recursive) {
        WorkerLocal& mine = locals_[this_thread_identity.index];
        // Only thieves ever contend for this lock, and they never wait for it (try_lock).
        std::lock_guard<std::mutex> lock(mine.mutex);
        mine.tasks.push_back(std::move(task));
      } else {
        std::lock_guard<std::mutex> lock(global_mutex_);
        global_.push_back(std::move(task));
      }
    } catch (...) {
      ledger_.retire();  // the deque could not grow (bad_alloc): the task was not queued
      throw;
    }
    // Every queued task is stealable, so each one may be work for a sleeper. When nobody sleeps
    // this is a fence and a load.
    sleepers_.notify_one();
  }

  void wait_idle() override { ledger_.wait_idle(kName, *this); }

  // From a worker: own deque first (the task it just queued is the likeliest to be waited for),
  // then the global queue, then one randomised steal sweep. From outside: global, then steal.
  bool try_run_one() override {
    Task task;
    if (owns_current_thread()) {
      const std::size_t self = this_thread_identity.index;
      if (!find_task(self, task)) return false;
    } else {
      if (!pop_global(task) && !steal_sweep(kNoWorker, fallback_rng_seed(), task)) return false;
      run_outside_.bump();
    }
    run_counted_task(task, *this, ledger_);  // the task may destroy the pool: nothing after it
    return true;
  }

  std::size_t thread_count() const noexcept override { return locals_.size(); }
  std::string_view name() const noexcept override { return kName; }
  bool owns_current_thread() const noexcept override { return is_worker_of(this); }
  const PerThreadMutexKnobs& knobs() const noexcept { return knobs_; }

  PoolStats stats() const override { return collect_stats(counters_, run_outside_); }

 private:
  static constexpr std::size_t kNoWorker = static_cast<std::size_t>(-1);

  // One worker's deque and its lock, on cache lines of their own so that one worker pushing does
  // not slow down its neighbour's pops. The owner works at the back (LIFO: the task it queued last
  // is the one whose data is still in cache); thieves take from the front, the oldest tasks, which
  // in divide-and-conquer work are the roots of the largest subtrees.
  struct alignas(kCacheLineSize) WorkerLocal {
    std::mutex mutex;
    std::deque<Task> tasks;  // guarded by mutex
    // Owner-only: scratch space for a stolen batch (filled under the victim's lock, emptied under
    // our own, never both at once), and the victim-order random state.
    std::vector<Task> loot;
    std::uint64_t rng_state = 1;
  };

  void worker_loop(std::size_t index) {
    WorkerCounters& mine = counters_[index];
    for (;;) {
      Task task;
      if (!find_task_or_spin(index, task)) {
        // Before sleeping, announce it and look once more; see common/sleepers.hpp for the lost
        // wake-up this closes.
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

  // The search, repeated a bounded number of times with a yield in between: a failed sweep may
  // only mean every victim's lock was busy at that instant.
  bool find_task_or_spin(std::size_t self, Task& out) {
    for (unsigned sweep = 0; sweep <= knobs_.steal_sweeps; ++sweep) {
      if (find_task(self, out)) return true;
      if (locals_.size() == 1) return false;  // nobody to steal from: retrying cannot help
      std::this_thread::yield();
    }
    return false;
  }

  // own deque -> global queue -> steal. Bumps the statistics of worker `self`.
  bool find_task(std::size_t self, Task& out) {
    WorkerCounters& mine = counters_[self];
    if (pop_local(self, out)) {
      mine.bump(Counter::local_pops);
    } else if (pop_global(out)) {
      mine.bump(Counter::global_pops);
    } else if (!steal_sweep(self, locals_[self].rng_state, out)) {
      return false;
    }
    mine.bump(Counter::tasks_executed);
    return true;
  }

  bool pop_local(std::size_t self, Task& out) {
    WorkerLocal& mine = locals_[self];
    std::lock_guard<std::mutex> lock(mine.mutex);
    if (mine.tasks.empty()) return false;
    out = std::move(mine.tasks.back());
    mine.tasks.pop_back();
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

  // Visits every other worker once, starting at a random one and striding by a random step that
  // is coprime with the worker count (so each is visited exactly once). A victim whose lock is
  // held is skipped, never waited for. `self` is kNoWorker for a thread outside the pool, which
  // takes one task and keeps nothing (it has no deque to put a batch in).
  bool steal_sweep(std::size_t self, std::uint64_t& rng, Task& out) {
    const std::size_t n = locals_.size();
    const std::size_t start = static_cast<std::size_t>(next_random(rng) % n);
    std::size_t stride = 1;
    if (n > 2) {
      stride = 1 + static_cast<std::size_t>(next_random(rng) % (n - 1));
      while (std::gcd(stride, n) != 1)
        stride = stride % (n - 1) + 1;
    }
    for (std::size_t k = 0, v = start; k < n; ++k, v = (v + stride) % n) {
      if (v == self) continue;
      if (steal_from(self, v, out)) return true;
    }
    return false;
  }

  bool steal_from(std::size_t self, std::size_t victim_index, Task& out) {
    WorkerLocal& victim = locals_[victim_index];
    const bool outsider = self == kNoWorker;
    std::vector<Task>* loot = outsider ? nullptr : &locals_[self].loot;
    {
      std::unique_lock<std::mutex> lock(victim.mutex, std::try_to_lock);
      if (!lock.owns_lock() || victim.tasks.empty()) {
        if (!outsider) counters_[self].bump(Counter::failed_steals);
        trace::event(trace::Event::steal_failed, static_cast<std::uint32_t>(victim_index));
        return false;
      }
      const std::size_t available = victim.tasks.size();
      const std::size_t take =
          outsider || !knobs_.steal_half ? 1 : std::max<std::size_t>(1, available / 2);
      out = std::move(victim.tasks.front());
      victim.tasks.pop_front();
      for (std::size_t i = 1; i < take; ++i) {
        loot->push_back(std::move(victim.tasks.front()));
        victim.tasks.pop_front();
      }
      if (!outsider) counters_[self].bump(Counter::steals, take);
    }
    trace::event(trace::Event::steal, static_cast<std::uint32_t>(victim_index));
    if (loot != nullptr && !loot->empty()) {
      // Our own lock is taken only after the victim's was released: holding both would let two
      // thieves robbing each other deadlock. Between the two, the batch is in `loot`, where no
      // one else can see it, and it is still counted in flight, so wait_idle() cannot return.
      WorkerLocal& mine = locals_[self];
      {
        std::lock_guard<std::mutex> lock(mine.mutex);
        // Oldest at the front, as they were in the victim's deque: we run the newest of them
        // next, and the oldest stay where the next thief looks.
        for (Task& t : *loot)
          mine.tasks.push_back(std::move(t));
      }
      loot->clear();
      // The batch is stealable again from our deque: a sleeper may want part of it.
      sleepers_.notify_one();
    }
    return true;
  }

  static std::uint64_t next_random(std::uint64_t& state) noexcept {
    // xorshift64: a few cycles, and plenty random enough to spread thieves over victims.
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  }

  // Threads outside the pool that call try_run_one() get their own victim order.
  static std::uint64_t& fallback_rng_seed() noexcept {
    thread_local std::uint64_t state =
        (0x2545F4914F6CDD1Dull ^ reinterpret_cast<std::uintptr_t>(&state)) | 1;
    return state;
  }

  const PerThreadMutexKnobs knobs_;
  std::vector<WorkerLocal> locals_;  // one per worker, by index

  alignas(kCacheLineSize) std::mutex global_mutex_;
  std::deque<Task> global_;  // external submissions; guarded by global_mutex_

  Sleepers sleepers_;
  TaskLedger ledger_;
  std::vector<WorkerCounters> counters_;  // one per worker, each on its own cache line
  SharedCounter run_outside_;
  WorkerThreads workers_;  // last member: threads start after everything they use exists
};

}  // namespace wslab
