// Stage 4: every worker owns a lock-free Chase-Lev deque; external submissions go through a
// lock-free segmented queue (the injector); idle workers spin briefly, then park on a futex
// without lost wake-ups. See README.md in this folder for the design and the measurements.
#pragma once

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/config.hpp"
#include "common/pool_lifecycle.hpp"
#include "common/stats.hpp"
#include "common/task.hpp"
#include "common/task_ledger.hpp"
#include "common/thread_pool.hpp"
#include "common/trace.hpp"
#include "common/worker_identity.hpp"
#include "common/worker_threads.hpp"
#include "stage4_chase_lev/chase_lev_deque.hpp"
#include "stage5_parallel_algos/scheduler/injector.hpp"
#include "stage5_parallel_algos/scheduler/sleep.hpp"
#include "stage5_parallel_algos/scheduler/steal_gate.hpp"

namespace wslab::sched {

template <auto Layout>
class BasicScheduler;

// What the deques and the injector hold: a pointer to something runnable. A submitted Task is
// one kind (the pool wraps it in a heap node it recycles); stage 5's join pushes another kind
// that lives in the joining thread's stack frame. See README.md, "API for stage 5".
class Job {
 public:
  using ExecuteFn = void (*)(Job&) noexcept;

  // Runs the job. A job never throws out of here: it keeps its own exception for whoever waits
  // for it (stage 5's join rethrows it on the joining thread).
  void execute() noexcept { execute_(*this); }

 protected:
  explicit Job(ExecuteFn run) noexcept : execute_(run) {}
  ~Job() = default;
  Job(const Job&) = default;
  Job& operator=(const Job&) = default;

 private:
  template <auto>
  friend class BasicScheduler;
  ExecuteFn execute_;  // nullptr: a pool task node (the pool runs it with its bookkeeping)
};

// Compile-time variants for the course lab. The defaults are the design.
struct SchedulerLayout {
  bool padded = true;  // per-worker state and the deque's top/bottom on separate cache lines
};

// Run-time knobs for the course lab. The defaults are the design.
struct SchedulerKnobs {
  enum class OwnerOrder { lifo, fifo };
  enum class Injector { after_local, first, last };
  OwnerOrder owner_order = OwnerOrder::lifo;  // lifo: pop the bottom; fifo: take the top
  Injector injector = Injector::after_local;  // where a worker looks into the global queue
  // Scans of the other queues before a worker parks: 32 with a short pause burst in between,
  // the rest with a yield (see search_backoff()). 0 parks at once.
  std::uint32_t spin_rounds = 48;
  std::size_t deque_capacity = 256;  // initial capacity of each worker's deque
  // Spare task nodes (80 bytes each) a worker keeps for reuse, at most: 16384 covers the
  // harness's (100 x 10,000) grid without touching the allocator, at up to 1.3 MB per worker
  // retained after such a burst. Beyond it, nodes are freed.
  std::size_t task_node_cache = 16384;
};

template <auto Layout = SchedulerLayout{}>
class BasicScheduler final : public IThreadPool {
 public:
  static constexpr std::string_view kName = "stage5_parallel_algos";

  explicit BasicScheduler(std::size_t threads, PoolOptions options = {},
                             SchedulerKnobs knobs = {})
      : knobs_(knobs), counters_(validate_thread_count(threads, kName)) {
    // One record per worker, and one more after them: the guest seat (README.md, "Guests").
    const std::size_t records = threads + 1;
    workers_ = static_cast<WorkerState*>(
        ::operator new (sizeof(WorkerState) * records, std::align_val_t{alignof(WorkerState)}));
    try {
      for (std::size_t i = 0; i < records; ++i) {
        WorkerCounters* counters = i < threads ? &counters_[i] : &guest_counters_;
        ::new (static_cast<void*>(&workers_[i])) WorkerState(knobs_, i, counters, steal_gate_);
        record_count_ = i + 1;  // destroy_workers() undoes exactly the records that exist
      }
      worker_count_ = threads;
    } catch (...) {
      destroy_workers();
      throw;
    }
    try {
      start_workers(
          threads_, ledger_, this, threads, options, [this](std::size_t i) { worker_loop(i); },
          [this] { parking_.notify_all(); });
    } catch (...) {
      destroy_workers();
      throw;
    }
  }

  BasicScheduler(const BasicScheduler&) = delete;
  BasicScheduler& operator=(const BasicScheduler&) = delete;

  ~BasicScheduler() override {
    WorkerState* me = current_worker();
    if (me == &guest_record()) [[unlikely]] {
      // A task run by a seated guest destroys the pool: the guest's own call (a join on this
      // pool, further up this thread's stack) would return into freed memory. Say so and stop,
      // rather than corrupt memory. (Destroying a pool from a task a worker runs is supported.)
      std::fprintf(stderr,
                   "wslab: %s destroyed from a task run by a guest, inside a join on the same "
                   "pool that has not returned yet; aborting\n",
                   std::string(kName).c_str());
      std::abort();
    }
    // From one of its own tasks, this thread drains; the retirements it still owes count too, so
    // it settles them before each look for work.
    drain_and_join(
        kName, me != nullptr, ledger_, threads_,
        [this, me] {
          flush_retirements(*me);
          return try_run_one();
        },
        [this] { parking_.notify_all(); });
    destroy_workers();
  }

  void submit(Task task) override { spawn(std::move(task)); }

  // submit() for callers that know the concrete pool type: from a worker, the callable is built
  // directly inside the recycled task node, skipping the by-value Task of the virtual interface.
  // Same semantics, same accounting.
  template <class F>
  requires std::constructible_from<Task, F&&>
  void spawn(F&& fn) {
    if (WorkerState* me = current_worker()) {
      TaskJob* node = me->take_node(std::forward<F>(fn));
      // A retirement we still owe cancels against this admission: the in-flight count stays
      // what it would be had we retired and admitted (see README.md, "Counting tasks").
      if (me->owed_retirements > 0) {
        --me->owed_retirements;
      } else {
        ledger_.admit_recursive();
      }
      try {
        me->deque.push(node);  // may throw std::bad_alloc when the deque grows
      } catch (...) {
        node->task.reset();
        me->recycle(node);
        ++me->owed_retirements;  // undoes the admission above, whichever form it took
        throw;
      }
    } else {
      Task task(std::forward<F>(fn));  // may throw (a large callable is boxed): nothing counted
      ledger_.admit_external(kName);   // throws once destruction has begun
      try {
        injector_.push(std::move(task));  // stored by value: no node, no allocation per task
      } catch (...) {
        ledger_.retire();  // a new segment could not be allocated: the task was not queued
        throw;
      }
    }
    parking_.notify_one();
  }

  void wait_idle() override { ledger_.wait_idle(kName, owns_current_thread()); }

  bool try_run_one() override {
    if (WorkerState* me = current_worker()) [[likely]] {
      Job* job = find_any(*me);
      // Retirements stay owed: a worker looping on try_run_one() is inside a running task, which
      // keeps the count above zero anyway, and the owed ones can cancel against the admissions
      // of what it spawns next. The worker pays when it runs dry in worker_loop().
      if (job == nullptr) return false;
      run_on_worker(*me, job);
      return true;
    }
    return try_run_one_outside();
  }

  std::size_t thread_count() const noexcept override { return worker_count_; }
  std::string_view name() const noexcept override { return kName; }
  bool owns_current_thread() const noexcept override { return is_worker_of(this); }

  PoolStats stats() const override {
    PoolStats s = collect_stats(counters_, run_outside_);
    s.tasks_run_outside += guest_counters_.get(Counter::tasks_executed);  // guests are outsiders
    // Not counted on the hot path: every job a worker runs came from its own deque, the injector
    // or a steal, so the first is what the other two leave.
    for (WorkerStats& w : s.workers)
      w.local_pops = w.tasks_executed - w.global_pops - w.steals;
    return s;
  }

  // ---- API for stage 5 (README.md, "API for stage 5"). Worker threads of this pool only. ----

  // Pushes `job` onto the calling worker's own deque, where any idle worker may steal it. The
  // job is not counted as a task: it lives inside a running task (or inside a job run by one),
  // which cannot finish before the job does, so wait_idle() and the destructor already wait.
  void push_local(Job& job) {
    WorkerState* me = current_worker();
    if (me == nullptr) {
      throw std::logic_error(std::string(kName) +
                             ": push_local() called from a thread that is not one of the pool's "
                             "workers; use submit()");
    }
    me->deque.push(&job);
    parking_.notify_one();
  }

  // Pops the calling worker's most recently pushed job (always LIFO), or nullptr when its deque
  // is empty or the caller is not a worker. If it is not the job you pushed, run it with
  // run_popped() and pop again.
  Job* pop_local() noexcept {
    WorkerState* me = current_worker();
    if (me == nullptr) return nullptr;
    note_busy(*me);
    return pop_own_lifo(*me);
  }

  // Runs a job taken with pop_local() with the pool's bookkeeping (a task node is counted,
  // recycled and its exception recorded; any other job is simply executed).
  void run_popped(Job* job) {
    WorkerState* me = current_worker();
    if (me == nullptr) throw std::logic_error(std::string(kName) + ": run_popped() off-pool");
    run_on_worker(*me, job);
  }

  // The guest seat (README.md, "Guests"): a thread from outside the pool that is about to wait for
  // a fork-join computation runs it itself instead, on a seat with its own deque that the workers
  // steal from, while one sleeping worker stays asleep in its place (so that two cores still run
  // two threads). One guest at a time; while seated, the thread counts as one of the pool's
  // workers (current_worker(), owns_current_thread(), LocalQueue), and what it spawns goes onto
  // the seat's deque. Leaving runs whatever is still on that deque, settles the seat's accounts
  // and hands the sleeper back. Obtain with try_seat_guest(); the seat is left when the object
  // goes out of scope, on the thread that took it.
  class GuestSeat {
   public:
    GuestSeat() noexcept = default;
    GuestSeat(GuestSeat&& other) noexcept
        : pool_(std::exchange(other.pool_, nullptr)), saved_(other.saved_) {}
    GuestSeat& operator=(GuestSeat&&) = delete;
    ~GuestSeat() {
      if (pool_ != nullptr) pool_->leave_guest_seat(saved_);
    }
    explicit operator bool() const noexcept { return pool_ != nullptr; }

   private:
    friend class BasicScheduler;
    GuestSeat(BasicScheduler* pool, WorkerIdentity saved) noexcept
        : pool_(pool), saved_(saved) {}
    BasicScheduler* pool_ = nullptr;
    WorkerIdentity saved_;
  };

  // The seat, or an empty GuestSeat when another thread has it, the caller already works for this
  // pool, or the pool is shutting down.
  GuestSeat try_seat_guest() noexcept {
    if (is_worker_of(this) || guest_seated_.load(std::memory_order_relaxed)) return {};
    // acquire: everything the previous guest did on the seat (its deque's owner side, its node
    // cache, its counters) happens before what we do there.
    if (guest_seated_.exchange(true, std::memory_order_acquire)) return {};
    if (ledger_.stopping()) {
      guest_seated_.store(false, std::memory_order_release);
      return {};
    }
    const WorkerIdentity saved = this_thread_identity;
    this_thread_identity = WorkerIdentity{this, worker_count_, &guest_record(), false};
    parking_.take_loan();
    return GuestSeat(this, saved);
  }

  const SchedulerKnobs& knobs() const noexcept { return knobs_; }

  // How a searcher waits between two scans, round after round (search(), and stage 5's waiter
  // for a stolen job). The first kSearchPauseRounds pause on the core and catch work that arrives
  // within ~15 us; the later ones yield the core, so that a thread waiting to run (the submitter
  // itself, when the pool has as many workers as cores) is not starved by workers spinning on its
  // behalf. The pause bursts stay short (1, 2, 4, then 8 pauses): a pause takes ~54 ns on the
  // test machine's EPYC, and work pushed during a burst waits for the burst to end.
  static constexpr std::uint32_t kSearchPauseRounds = 32;
  static void search_backoff(std::uint32_t round) noexcept {
    if (round < kSearchPauseRounds) {
      for (std::uint32_t i = 0; i < (1u << std::min<std::uint32_t>(round, 3)); ++i)
        cpu_relax();
    } else {
      std::this_thread::yield();
    }
  }

 private:
  using Deque = ChaseLevDeque<Job*, GatedFences, Layout.padded>;

  // A submitted task, boxed so that the deques can hold one pointer. Recycled per worker.
  struct TaskJob final : Job {
    TaskJob() noexcept : Job(nullptr) {}
    // Declared before the task, in the 8 bytes the task's 16-byte alignment would leave empty
    // after Job's pointer: a node is 80 bytes, not 96. A worker running a long burst of its own
    // spawns (the 100 x 10,000 grid) cycles through thousands of nodes, and a sixth less memory
    // is a sixth fewer cache misses on them.
    TaskJob* next_free = nullptr;  // link in a worker's cache of spare nodes
    Task task;
  };
  static_assert(sizeof(TaskJob) == 80, "Job's pointer, the free-list link, then the 64-byte task");

  // Puts the callable into a node whose task is empty (run and reset, or new). A Task is moved in
  // (no move-assignment: the node's task is known to be empty); a callable that fits inline and
  // cannot throw while being moved in is built in place, with no Task between. The empty task is
  // not destroyed first: its destructor does nothing, and calling it would read the node's second
  // cache line (often cold in a long burst of spawns) only to learn that.
  template <class F>
  static void emplace_task(TaskJob& node, F&& fn) {
    using Fn = std::decay_t<F>;
    if constexpr (std::same_as<Fn, Task> ||
                  (Task::stored_inline<Fn> && std::is_nothrow_constructible_v<Fn, F&&>)) {
      ::new (static_cast<void*>(&node.task)) Task(std::forward<F>(fn));
    } else {
      node.task = Task(std::forward<F>(fn));
    }
  }

  struct alignas(Layout.padded ? kCacheLineSize : alignof(void*)) WorkerState {
    WorkerState(const SchedulerKnobs& knobs, std::size_t worker_index, WorkerCounters* stats,
                const StealGate& gate)
        : deque(knobs.deque_capacity, GatedFences{&gate}),
          counters(stats),
          index(worker_index),
          node_cache_limit(knobs.task_node_cache),
          rng_state(0x9E3779B97F4A7C15ull * (worker_index + 1)) {}
    ~WorkerState() {
      while (free_nodes != nullptr)
        delete std::exchange(free_nodes, free_nodes->next_free);
    }

    TaskJob* take_empty_node() {
      TaskJob* node = free_nodes;
      if (node == nullptr) return new TaskJob;
      free_nodes = node->next_free;
      --free_count;
      return node;
    }

    template <class F>
    TaskJob* take_node(F&& fn) {
      TaskJob* node = take_empty_node();
      try {
        emplace_task(*node, std::forward<F>(fn));
      } catch (...) {
        recycle(node);
        throw;
      }
      return node;
    }
    // A node may come from another worker's cache (it was stolen): it joins ours. Nodes only
    // travel with the jobs, whose hand-off through a deque or the injector orders the accesses.
    void recycle(TaskJob* node) noexcept {
      if (free_count < node_cache_limit) {
        node->next_free = free_nodes;
        free_nodes = node;
        ++free_count;
      } else {
        delete node;
      }
    }
    std::uint32_t next_random() noexcept {  // xorshift64: cheap victim choice
      rng_state ^= rng_state << 13;
      rng_state ^= rng_state >> 7;
      rng_state ^= rng_state << 17;
      return static_cast<std::uint32_t>(rng_state >> 32);
    }

    Deque deque;
    // Owner-only fields below.
    WorkerCounters* counters;  // this worker's line in counters_
    std::size_t index;
    TaskJob* free_nodes = nullptr;  // intrusive stack of spare task nodes
    std::size_t free_count = 0;
    std::size_t node_cache_limit;
    // Completions this worker has not yet subtracted from the ledger. Deferring a decrement only
    // keeps the count above the truth, never below, so nothing can be declared idle early.
    std::int64_t owed_retirements = 0;
    std::uint64_t rng_state;
    bool in_steal_session = false;       // holds a session of steal_gate_ (see steal_from_others())
    std::uint32_t runs_since_steal = 0;  // jobs run since this worker last tried to steal
  };

  // (Public, but defined here because it needs WorkerState.)
 public:
  // The calling worker's own deque, looked up once: stage 5's join pushes and pops through it on
  // every fork without finding the worker again each time. False off-pool. Use it only on the
  // thread that obtained it, while the pool lives. push()/pop() behave as push_local() and
  // pop_local().
  class LocalQueue {
   public:
    LocalQueue() noexcept = default;
    explicit operator bool() const noexcept { return me_ != nullptr; }
    void push(Job& job) {
      me_->deque.push(&job);
      pool_->parking_.notify_one();
    }
    Job* pop() noexcept {
      pool_->note_busy(*me_);
      return pool_->pop_own_lifo(*me_);
    }
    // Any job: this worker's own deque, the injector, a steal. For a worker waiting for a job it
    // forked and lost to a thief; run what it returns with run().
    Job* find_work() { return pool_->find_any(*me_); }
    void run(Job* job) { pool_->run_on_worker(*me_, job); }
    // While a waiting worker looks for work it counts as a searcher, like a worker in its search
    // loop: pushers leave their work to it instead of waking a sleeper (README.md, "Parking",
    // step 6). end_search() hands that duty on (step 2).
    void begin_search() noexcept { pool_->parking_.begin_search(); }
    void end_search() noexcept { pool_->parking_.found_work(); }
    // True when some thread is searching for work and this worker's deque has none to give it.
    // A job that is running is invisible to thieves, so stage 5's loops ask this between steps of
    // a long piece and hand half of the rest to the searcher when it says yes. Relaxed loads, a
    // hint only: a wrong answer costs one needless fork or one missed split, never a job.
    bool thief_waiting() const noexcept {
      return pool_->parking_.searching_now() != 0 && me_->deque.empty();
    }

   private:
    friend class BasicScheduler;
    LocalQueue(BasicScheduler* pool, WorkerState* me) noexcept : pool_(pool), me_(me) {}
    BasicScheduler* pool_ = nullptr;
    WorkerState* me_ = nullptr;
  };
  LocalQueue local_queue() noexcept { return LocalQueue(this, current_worker()); }

 private:
  // try_run_one() from a thread that is not a worker: the injector first, then a steal.
  [[gnu::noinline]] bool try_run_one_outside() {
    Task task;
    if (injector_.try_pop(task)) {
      run_outside_.bump();
      std::exception_ptr escaped = invoke_task(task);
      if (ledger_.complete(std::move(escaped))) parking_.notify_all();
      return true;
    }
    Job* job = steal_from_outside();
    if (job == nullptr) return false;
    run_outside_.bump();
    if (job->execute_ != nullptr) {
      job->execute();
      return true;
    }
    auto* node = static_cast<TaskJob*>(job);
    std::exception_ptr escaped = invoke_task(node->task);
    delete node;
    if (ledger_.complete(std::move(escaped))) parking_.notify_all();
    return true;
  }

  void leave_guest_seat(const WorkerIdentity& saved) noexcept {
    WorkerState& me = guest_record();
    // What the guest spawned and did not run is still on the seat's deque: run it here, so that
    // the seat is empty between guests (a thief could take it, but if every worker sleeps none
    // would come). Then settle the retirements the seat owes.
    while (Job* job = pop_own_lifo(me))
      run_on_worker(me, job);
    flush_retirements(me);
    end_steal_session(me);
    // A push skipped its wake-up because of the loan: if its work is still queued, wake a worker
    // for it (the re-scan of README.md, "Guests").
    if (parking_.return_loan(static_cast<std::uint32_t>(worker_count_)) && any_work_queued()) {
      parking_.wake_one();
    }
    this_thread_identity = saved;
    // release: pairs with the next guest's acquire in try_seat_guest().
    guest_seated_.store(false, std::memory_order_release);
  }

  // Whether any deque (the guest seat's included) or the injector holds work. seq_cst loads: they
  // come after the caller's RMW on the parking word in S.
  bool any_work_queued() noexcept {
    if (!injector_.empty()) return true;
    for (std::size_t i = 0; i <= worker_count_; ++i) {
      if (!workers_[i].deque.empty_seq_cst()) return true;
    }
    return false;
  }

  // The record is published in the thread's identity when its loop starts (before that, e.g. in
  // an on_worker_start hook, the thread counts as an outside one): one TLS load per lookup.
  WorkerState* current_worker() const noexcept {
    const WorkerIdentity& id = this_thread_identity;
    return id.pool == this ? static_cast<WorkerState*>(id.state) : nullptr;
  }

  void worker_loop(std::size_t index) {
    WorkerState& me = workers_[index];
    this_thread_identity.state = &me;
    for (;;) {
      Job* job = next_local(me);
      if (job == nullptr) {
        job = search(me);
        if (job == nullptr) return;  // drained: the pool is shutting down
      }
      if (!run_on_worker(me, job)) return;  // the task destroyed the pool: `this` is gone
    }
  }

  // The guest seat's record: the one after the workers'.
  WorkerState& guest_record() noexcept { return workers_[worker_count_]; }

  // How many deques a thief visits: the workers', and the guest seat's while a guest is seated (it
  // is empty otherwise: a guest empties it before it leaves). seq_cst: in a re-scan after
  // announcing, this load follows the announce in S like the deque loads; the guest set the flag
  // with an RMW before its first push, so a re-scan that could see the push sees the flag.
  std::size_t victim_count() const noexcept {
    return worker_count_ + (guest_seated_.load(std::memory_order_seq_cst) ? 1 : 0);
  }

  Job* find_any(WorkerState& me) {
    if (Job* job = next_local(me)) return job;
    return find_elsewhere(me);
  }

  // The calling worker's own deque, and the injector when it is checked first or after local.
  [[gnu::always_inline]] Job* next_local(WorkerState& me) {
    if (knobs_.injector == SchedulerKnobs::Injector::first) {
      if (Job* job = pop_injector(me)) return job;
    }
    if (Job* job = pop_own(me)) return job;
    if (knobs_.injector == SchedulerKnobs::Injector::after_local) return pop_injector(me);
    return nullptr;
  }

  Job* pop_own_lifo(WorkerState& me) {
    const std::optional<Job*> job = me.deque.pop();
    return job ? *job : nullptr;
  }

  Job* pop_own(WorkerState& me) {
    if (knobs_.owner_order == SchedulerKnobs::OwnerOrder::lifo) return pop_own_lifo(me);
    for (;;) {  // fifo: the owner takes from the top like a thief
      const StealResult<Job*> r = me.deque.steal();
      if (r.outcome == StealOutcome::success) return r.item;
      if (r.outcome == StealOutcome::empty) return nullptr;
    }
  }

  // The injector holds Tasks by value; a worker moves one into a node from its own cache, so
  // that from here on it runs like any other job.
  Job* pop_injector(WorkerState& me) {
    if (injector_.empty()) return nullptr;
    return take_from_injector(me);
  }
  [[gnu::noinline]] Job* take_from_injector(WorkerState& me) {
    TaskJob* node = me.take_empty_node();
    // The node's task is empty: the popped one is moved in, with no move-assignment.
    if (!injector_.pop_with(
            [node](Task&& task) noexcept { emplace_task(*node, std::move(task)); })) {
      me.recycle(node);
      return nullptr;
    }
    me.counters->bump(Counter::global_pops);
    trace::event(trace::Event::global_pop);
    return node;
  }

  // Everything but the worker's own deque: the injector (unless it comes first, already
  // checked) and every other worker's deque, starting from a random victim.
  Job* find_elsewhere(WorkerState& me) {
    if (knobs_.injector != SchedulerKnobs::Injector::last) {
      if (Job* job = pop_injector(me)) return job;
    }
    if (Job* job = steal_from_others(me)) return job;
    if (knobs_.injector == SchedulerKnobs::Injector::last) return pop_injector(me);
    return nullptr;
  }

  // Steals only inside a session of steal_gate_, so that busy owners may pop without a fence
  // (steal_gate.hpp). Opening one costs a membarrier(): 0.4 us when the pool's threads share a
  // core, 12 us across the test VM's two vCPUs (an inter-processor interrupt each way). So a
  // session outlives the steal that opened it: it stays open while this worker keeps coming back
  // to steal, and closes once the worker has run or popped kSessionLinger jobs without trying to
  // steal (it is busy with its own work; note_busy()) or before it parks (search()).
  Job* steal_from_others(WorkerState& me) {
    // Without a guest, a pool of one worker has no victim and opens no steal session.
    const std::size_t n = victim_count();
    if (n < 2) return nullptr;
    if (!me.in_steal_session) {
      if (!adopt_idle_session()) steal_gate_.open();
      me.in_steal_session = true;
    }
    me.runs_since_steal = 0;
    const std::size_t self = me.index;
    WorkerCounters& mine = *me.counters;
    const std::size_t start = me.next_random() % n;
    for (std::size_t k = 0; k < n; ++k) {
      const std::size_t victim = (start + k) % n;
      if (victim == self) continue;
      for (;;) {
        const StealResult<Job*> r = workers_[victim].deque.steal();
        if (r.outcome == StealOutcome::success) {
          mine.bump(Counter::steals);
          trace::event(trace::Event::steal, static_cast<std::uint32_t>(victim));
          return r.item;
        }
        mine.bump(Counter::failed_steals);
        trace::event(trace::Event::steal_failed, static_cast<std::uint32_t>(victim));
        // A lost race means the victim had work a moment ago: try it again.
        if (r.outcome == StealOutcome::empty) break;
      }
    }
    return nullptr;
  }

  // One steal session per call: an outside thread steals rarely.
  Job* steal_from_outside() {
    steal_gate_.open();
    Job* found = nullptr;
    const std::size_t n = victim_count();
    for (std::size_t v = 0; v < n && found == nullptr; ++v) {
      for (;;) {
        const StealResult<Job*> r = workers_[v].deque.steal();
        if (r.outcome == StealOutcome::success) found = r.item;
        if (r.outcome != StealOutcome::lost_race) break;
      }
    }
    steal_gate_.close();
    return found;
  }

  // Called for every job the worker runs and every pop of its own deque (stage 5's joins pop
  // without running through the pool): a worker that keeps doing its own work closes its session.
  void note_busy(WorkerState& me) noexcept {
    if (++me.runs_since_steal > kSessionLinger) [[unlikely]] {
      me.runs_since_steal = 0;
      // Busy on its own work: let the owners pop fence-free again. Our session closes, and so do
      // the ones idle threads left open.
      if (me.in_steal_session) {
        me.in_steal_session = false;
        steal_gate_.close();
      }
      close_idle_sessions();
    }
  }

  // A thread that stops stealing for a while (it parks, or a guest leaves) does not close its
  // session: it leaves it open for the next thief, which adopts it instead of paying a
  // membarrier() (~12 us across the test VM's vCPUs, on every wake-up of a parked worker that
  // then steals). Meanwhile owners fence their pops, as they would with a thief about; the first
  // owner that has run kSessionLinger jobs of its own closes the idle sessions (note_busy()).
  // Sound because an idle session never closes between its opener's heavy fence and an
  // adopter's steals: the gate's count stays above zero all along (steal_gate.hpp).
  void end_steal_session(WorkerState& me) noexcept {
    if (me.in_steal_session) {
      me.in_steal_session = false;
      // release: our steals' CASs on top happen before whoever closes this session later.
      idle_sessions_.fetch_add(1, std::memory_order_release);
    }
  }

  bool adopt_idle_session() noexcept {
    std::uint32_t n = idle_sessions_.load(std::memory_order_relaxed);
    while (n != 0) {
      if (idle_sessions_.compare_exchange_weak(n, n - 1, std::memory_order_acquire,
                                               std::memory_order_relaxed)) {
        return true;
      }
    }
    return false;
  }

  void close_idle_sessions() noexcept {
    // acquire: the former holder's steals happen before our close (a release), hence before the
    // load of top of an owner that reads the count we leave (steal_gate.hpp, "closed the gate").
    while (idle_sessions_.load(std::memory_order_relaxed) != 0) {
      if (!adopt_idle_session()) break;
      steal_gate_.close();
    }
  }

  // Out of local work: scan, spin with backoff, then park. Returns nullptr once drained.
  Job* search(WorkerState& me) {
    // A few quick scans before anything else (about a microsecond in all). If one finds work we
    // stay busy: the retirements we owe can still cancel against the admissions of what we spawn
    // next, and we touch neither shared word (the parking counts, the ledger's count), which an
    // outside thread feeding the injector task by task reads or writes on every submission. Not
    // yet counted as a searcher, we suppress no pusher's wake-up, so we owe no hand-on either
    // (README.md, "Parking", step 2).
    for (std::uint32_t round = 0; round < kQuickScans; ++round) {
      if (Job* job = find_elsewhere(me)) return job;
      search_backoff(round);
    }
    parking_.begin_search();
    flush_retirements(me);
    for (;;) {
      for (std::uint32_t round = 0; round < knobs_.spin_rounds; ++round) {
        if (parking_.should_park_for_loan()) break;  // a guest works in our place: park now
        if (Job* job = find_elsewhere(me)) {
          parking_.found_work();
          return job;
        }
        if (ledger_.drained()) {
          end_steal_session(me);
          parking_.end_search();
          return nullptr;
        }
        search_backoff(round);
      }
      const ParkingLot::Ticket ticket = parking_.announce();
      // The re-scan after announcing: see README.md, "Parking", step 3.
      if (Job* job = find_elsewhere(me)) {
        parking_.cancel_park();
        parking_.found_work();
        return job;
      }
      if (ledger_.drained()) {
        end_steal_session(me);
        parking_.cancel_park();
        parking_.end_search();
        return nullptr;
      }
      end_steal_session(me);  // a sleeping worker must not make busy owners fence
      me.counters->bump(Counter::parks);
      trace::event(trace::Event::park_begin);
      parking_.park(ticket);
      trace::event(trace::Event::park_end);
    }
  }

  // Returns false when the job destroyed the pool (the worker must return without touching it).
  // Inlined into both callers: it is most of the per-task path.
  [[gnu::always_inline]] bool run_on_worker(WorkerState& me, Job* job) {
    note_busy(me);
    me.counters->bump(Counter::tasks_executed);
    if (job->execute_ != nullptr) {
      job->execute();
      return !this_thread_identity.orphaned;
    }
    auto* node = static_cast<TaskJob*>(job);
    std::exception_ptr escaped = invoke_task(node->task);
    if (pool_destroyed_by_last_task(escaped)) {
      delete node;
      return false;
    }
    me.recycle(node);
    if (escaped) {
      // Rare: record and retire at once, through the ledger's own path.
      if (ledger_.complete(std::move(escaped))) parking_.notify_all();
    } else {
      ++me.owed_retirements;
    }
    return true;
  }

  void flush_retirements(WorkerState& me) noexcept {
    if (me.owed_retirements == 0) return;
    const bool drained_now = ledger_.retire(std::exchange(me.owed_retirements, 0));
    if (drained_now) parking_.notify_all();
  }

  void destroy_workers() noexcept {
    if (workers_ == nullptr) return;
    for (std::size_t i = 0; i < record_count_; ++i)
      workers_[i].~WorkerState();
    ::operator delete (workers_, std::align_val_t{alignof(WorkerState)});
    workers_ = nullptr;
  }

  // Scans a worker makes before it counts itself a searcher (search()); the pauses between them
  // add up to 15 pause instructions, ~0.8 us on the test machine.
  static constexpr std::uint32_t kQuickScans = 4;
  // Jobs a worker runs without trying to steal before it closes its steal session. The choice
  // is a rent-or-buy one: a session left open costs every busy owner a fence per pop (~5 ns),
  // and closing it too early costs a membarrier() when the worker steals again (12-17 us across
  // the test VM's vCPUs). 1,024 pops cost about 5 us of fences, a third of one membarrier().
  // With 64, a 10 ms parallel_for of ~260 leaves closed and reopened two sessions per call
  // (2.2 membarrier()s per call; 0.1-0.4 with 1,024), while fib(30) by join, whose thieves steal
  // every few microseconds, kept its 4.3-4.5 ns per fork.
  static constexpr std::uint32_t kSessionLinger = 1024;

  SchedulerKnobs knobs_;
  // worker_count_ workers, then the guest seat; contiguous (see Layout.padded).
  WorkerState* workers_ = nullptr;
  std::size_t record_count_ = 0;  // records constructed so far
  std::size_t worker_count_ = 0;
  std::atomic<bool> guest_seated_{false};
  // Steal sessions left open by threads that stopped stealing (end_steal_session()).
  alignas(kCacheLineSize) std::atomic<std::uint32_t> idle_sessions_{0};
  WorkerCounters guest_counters_;
  // 128 slots (10 KB) per segment: one allocation and one segment switch per 128 external
  // submissions rather than per 32.
  InjectorQueue<Task, 128> injector_;
  ParkingLot parking_;
  StealGate steal_gate_;  // open while some thread steals: owners' pops fence only then
  TaskLedger ledger_;
  std::vector<WorkerCounters> counters_;  // one per worker, each on its own cache line
  SharedCounter run_outside_;
  WorkerThreads threads_;  // last member: threads start after everything they use exists
};

using Scheduler = BasicScheduler<>;

}  // namespace wslab::sched

namespace wslab {
using sched::BasicScheduler;
using sched::Job;
using sched::Scheduler;
using sched::SchedulerKnobs;
using sched::SchedulerLayout;
}  // namespace wslab
