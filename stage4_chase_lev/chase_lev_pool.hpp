// Stage 4: the textbook lock-free pool. Every worker owns a Chase-Lev deque (owner and thieves
// lock-free, chase_lev_deque.hpp); threads outside the pool submit through a lock-free segmented
// queue (injector_queue.hpp); an idle worker searches for a while, then parks on a futex with no
// lost wake-up (parking.hpp). Read README.md in this folder alongside.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <random>
#include <string_view>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "../common/config.hpp"
#include "../common/pool_lifecycle.hpp"
#include "../common/stats.hpp"
#include "../common/task.hpp"
#include "../common/task_ledger.hpp"
#include "../common/thread_pool.hpp"
#include "../common/trace.hpp"
#include "../common/worker_identity.hpp"
#include "../common/worker_threads.hpp"
#include "chase_lev_deque.hpp"
#include "injector_queue.hpp"
#include "parking.hpp"

namespace wslab {

// The workers' deques: Le et al.'s orderings, or one fence dropped on purpose (the lab).
enum class DequeOrdering { standard, weak_push_release, weak_pop_fence };

// Compile-time variants for the course lab.
struct ChaseLevLayout {
  bool padded = true;  // each worker's record, and its deque's top and bottom, on own cache lines
  DequeOrdering ordering = DequeOrdering::standard;
};

// Run-time knobs for the course lab; the defaults are the design of README.md.
struct ChaseLevKnobs {
  enum class OwnerOrder { lifo, fifo };
  enum class Injector { after_local, first, last };
  OwnerOrder owner_order = OwnerOrder::lifo;  // fifo: the owner takes its oldest, as thieves do
  Injector injector = Injector::after_local;  // when a worker looks at the injector
  std::uint32_t spin_rounds = 48;             // scans a searcher makes before it parks
  std::size_t deque_capacity = 256;           // initial capacity of each worker's deque
};

namespace chase_lev {

// A submitted Task, boxed so that the deques and the injector hold one pointer.
struct TaskNode {
  explicit TaskNode(Task t) noexcept : task(std::move(t)) {}
  Task task;
};

template <DequeOrdering O>
using FencesFor = std::conditional_t<
    O == DequeOrdering::weak_push_release, NoPushRelease,
    std::conditional_t<O == DequeOrdering::weak_pop_fence, NoPopFence, LeFences>>;

}  // namespace chase_lev

// Deque: the workers' deque, stage 4's by default (labs/deque_lab puts a student's in its place).
template <ChaseLevLayout Layout = ChaseLevLayout{},
          class Deque = ChaseLevDeque<chase_lev::TaskNode*, chase_lev::FencesFor<Layout.ordering>,
                                      Layout.padded>>
class BasicChaseLevPool final : public IThreadPool {
  using TaskNode = chase_lev::TaskNode;

 public:
  static constexpr std::string_view kName = "stage4_chase_lev";

  explicit BasicChaseLevPool(std::size_t threads, PoolOptions options = {},
                             ChaseLevKnobs knobs = {})
      : knobs_(knobs), counters_(validate_thread_count(threads, kName)) {
    for (std::size_t i = 0; i < threads; ++i)
      workers_.emplace_back(i, knobs_.deque_capacity);
    start_workers(
        threads_, ledger_, this, threads, options, [this](std::size_t i) { worker_loop(i); },
        [this] { parking_.notify_all(); });
  }

  ~BasicChaseLevPool() override {
    drain_and_join(
        *this, own_tasks_here(*this), ledger_, threads_, [this] { return try_run_one(); },
        [this] { parking_.notify_all(); });
  }

  // From a worker: onto its own deque, no lock and no RMW. From elsewhere: into the injector.
  // Then the wake-up check (step 6 of README.md, "Parking").
  void submit(Task task) override {
    require_task(task, kName);
    Worker* me = own_worker();
    // An outside submitter stays registered until it returns: its task may run and destroy the
    // pool before the wake-up below (stage 1 explains).
    TaskLedger::SubmitterStay stay;
    if (me != nullptr) {
      ledger_.admit_recursive();
    } else {
      stay = ledger_.admit_external(kName, this);
    }
    try {
      auto node = std::make_unique<TaskNode>(std::move(task));
      // Either may throw std::bad_alloc (a deque grows, the injector needs a segment).
      me != nullptr ? me->deque.push(node.get()) : injector_.push(node.get());
      node.release();  // the queue owns it now; run() deletes it
    } catch (...) {
      ledger_.retire();  // the task was not queued
      throw;
    }
    parking_.notify_one();
  }

  void wait_idle() override { ledger_.wait_idle(kName, *this); }

  // A worker helps in its own search order; any other thread takes from the injector, then steals.
  // Either way the task runs counted as one of ours, here (run_counted_task()).
  bool try_run_one() override {
    TaskNode* node = nullptr;
    if (Worker* me = own_worker()) {
      node = find_task(*me);
    } else if (injector_.try_pop(node) || (node = steal(nullptr)) != nullptr) {
      run_outside_.bump();
    }
    if (node == nullptr) return false;
    run_counted_task(node->task, *this, ledger_);
    delete node;
    return true;
  }

  std::size_t thread_count() const noexcept override { return workers_.size(); }
  std::string_view name() const noexcept override { return kName; }
  bool owns_current_thread() const noexcept override { return is_worker_of(this); }
  PoolStats stats() const override { return collect_stats(counters_, run_outside_); }
  const ChaseLevKnobs& knobs() const noexcept { return knobs_; }

 private:
  // One worker's record. Padded, each starts on its own cache line, so that a thief's CAS on
  // one worker's top does not take away the line of its neighbour's bottom.
  struct alignas(Layout.padded ? kCacheLineSize : alignof(void*)) Worker {
    Worker(std::size_t i, std::size_t capacity)
        : deque(capacity), index(i), rng(static_cast<std::uint32_t>(i + 1)) {}
    Deque deque;
    const std::size_t index;
    std::minstd_rand rng;  // owner only: picks the first victim
  };

  // The calling thread's record if it is one of our workers (one TLS load), else nullptr.
  Worker* own_worker() const noexcept {
    return is_worker_of(this) ? static_cast<Worker*>(this_thread_identity.state) : nullptr;
  }

  void worker_loop(std::size_t index) {
    Worker& me = workers_[index];
    this_thread_identity.state = &me;
    for (;;) {
      TaskNode* node = find_task(me);
      if (node == nullptr) node = search(me);
      if (node == nullptr) return;  // drained: the pool is shutting down
      if (!run(node)) return;       // the task destroyed the pool: `this` is gone
    }
  }

  // Returns false when the task destroyed the pool: the caller must not touch it again.
  bool run(TaskNode* node) {
    std::exception_ptr escaped = invoke_task(node->task);
    delete node;
    if (pool_destroyed_by_last_task(escaped)) return false;
    ledger_.complete(std::move(escaped));
    return true;
  }

  // One look everywhere, in the knobs' order: own deque, injector, the other workers' deques.
  TaskNode* find_task(Worker& me) {
    using Where = ChaseLevKnobs::Injector;
    WorkerCounters& mine = counters_[me.index];
    TaskNode* node = nullptr;
    if (knobs_.injector == Where::first && (node = pop_injector()) != nullptr) {
      mine.bump(Counter::global_pops);
    } else if ((node = pop_own(me)) != nullptr) {
      mine.bump(Counter::local_pops);
    } else if (knobs_.injector == Where::after_local && (node = pop_injector()) != nullptr) {
      mine.bump(Counter::global_pops);
    } else if ((node = steal(&me)) != nullptr) {  // steal() counts its own attempts
    } else if (knobs_.injector == Where::last && (node = pop_injector()) != nullptr) {
      mine.bump(Counter::global_pops);
    } else {
      return nullptr;
    }
    mine.bump(Counter::tasks_executed);
    return node;
  }

  TaskNode* pop_own(Worker& me) {
    if (knobs_.owner_order == ChaseLevKnobs::OwnerOrder::lifo)
      return me.deque.pop().value_or(nullptr);
    for (;;) {  // fifo: from the top, like a thief (a thief may win the race: retry)
      const StealResult<TaskNode*> r = me.deque.steal();
      if (r.outcome != StealOutcome::lost_race) return r.item;  // nullptr when empty
    }
  }

  TaskNode* pop_injector() {
    TaskNode* node = nullptr;
    if (!injector_.try_pop(node)) return nullptr;
    trace::event(trace::Event::global_pop);
    return node;
  }

  // Every other worker's deque once, from a random first victim so that thieves spread out. A
  // lost race means the victim had work a moment ago: it is tried again. `me` is null off-pool.
  TaskNode* steal(Worker* me) {
    const std::size_t n = workers_.size();
    const std::size_t start = me != nullptr ? me->rng() % n : 0;
    for (std::size_t k = 0; k < n; ++k) {
      const std::size_t victim = (start + k) % n;
      if (me != nullptr && victim == me->index) continue;
      for (;;) {
        const StealResult<TaskNode*> r = workers_[victim].deque.steal();
        const bool taken = r.outcome == StealOutcome::success;
        if (me != nullptr) {
          counters_[me->index].bump(taken ? Counter::steals : Counter::failed_steals);
        }
        trace::event(taken ? trace::Event::steal : trace::Event::steal_failed,
                     static_cast<std::uint32_t>(victim));
        if (taken) return r.item;
        if (r.outcome == StealOutcome::empty) break;
      }
    }
    return nullptr;
  }

  // Out of work: search, announce, re-scan, park (steps 1-5 of README.md, "Parking"). Returns
  // a task, or nullptr once the pool is drained.
  TaskNode* search(Worker& me) {
    parking_.begin_search();
    for (;;) {
      for (std::uint32_t round = 0; round < knobs_.spin_rounds; ++round) {
        if (TaskNode* node = find_task(me)) {
          parking_.found_work();
          return node;
        }
        if (ledger_.drained()) {
          parking_.end_search();
          return nullptr;
        }
        backoff(round);
      }
      const chase_lev::Parking::Ticket ticket = parking_.announce();
      // Step 4: the re-scan. Its decisive loads are seq_cst (the injector's tail index) or
      // follow a seq_cst fence (steal()), so they come after announce() in S.
      TaskNode* node = find_task(me);
      if (node != nullptr || ledger_.drained()) {
        parking_.cancel_park();
        node != nullptr ? parking_.found_work() : parking_.end_search();
        return node;
      }
      counters_[me.index].bump(Counter::parks);
      trace::event(trace::Event::park_begin);
      parking_.park(ticket);
      trace::event(trace::Event::park_end);
    }
  }

  // Between two scans: short bursts of pauses first (work often arrives within microseconds),
  // then yields, so that a thread that wants this core (often the submitter) gets it.
  static void backoff(std::uint32_t round) noexcept {
    if (round < kPauseRounds) {
      for (std::uint32_t i = 0; i < (1u << std::min(round, 3u)); ++i)
        cpu_relax();
    } else {
      std::this_thread::yield();
    }
  }
  static constexpr std::uint32_t kPauseRounds = 32;

  const ChaseLevKnobs knobs_;
  std::deque<Worker> workers_;  // built in place, never moved, contiguous within its blocks
  chase_lev::InjectorQueue<TaskNode*> injector_;
  chase_lev::Parking parking_;
  TaskLedger ledger_;
  std::vector<WorkerCounters> counters_;  // one per worker, each on its own cache line
  SharedCounter run_outside_;
  WorkerThreads threads_;  // last member: threads start after everything they use exists
};

using ChaseLevPool = BasicChaseLevPool<>;

}  // namespace wslab
