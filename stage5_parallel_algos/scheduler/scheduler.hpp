// The production scheduler: every worker owns a lock-free Chase-Lev deque; external submissions
// go through a lock-free segmented queue (the injector); idle workers scan, spin briefly, then
// park without lost wake-ups; on top of that design, the refinements of README.md (each a step
// there, and a knob in knobs.hpp that switches it off). The pieces, one per header:
//   job.hpp                   what the deques hold
//   worker.hpp                a worker's record (its deques and owner-only state)
//   split_deque.hpp           join's forks, pushed and popped without fences or RMWs
//   frame_deque.hpp           a Chase-Lev deque of 64-byte frames instead of pointers
//   group_frame.hpp           a task group's small callable as such a frame
//   task_node_cache.hpp       per-worker recycling of task nodes
//   node_depot.hpp            the pool's store of the caches' surplus nodes
//   deferred_retirements.hpp  per-worker batching of the ledger's decrements
//   steal_gate.hpp            owners pop fence-free while nobody steals
//   steal_sessions.hpp        sessions of that gate held across steals, lingering, adopted
//   parking_lot.hpp           the parking protocol, with the guest's loan
//   guest_seat.hpp            the spare seat an outside joiner works on
//   injector.hpp              the queue of external submissions
//   worker_context.hpp, worker_queue.hpp, fork_join_host.hpp
//                             how fork-join finds the scheduler and a worker's deque
// Fork-join reaches all of it through one handle, ForkJoinHandle below (the concept it models is
// fork_join/pool_handle.hpp's ForkJoinPool).
// This file is the pool: the worker loop, the search for work, and how they use the rest.
#pragma once

#include <algorithm>
#include <chrono>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "../../common/config.hpp"
#include "../../common/pool_lifecycle.hpp"
#include "../../common/stats.hpp"
#include "../../common/task.hpp"
#include "../../common/task_ledger.hpp"
#include "../../common/thread_pool.hpp"
#include "../../common/trace.hpp"
#include "../../common/worker_identity.hpp"
#include "../../common/worker_threads.hpp"
#include "../../stage4_chase_lev/chase_lev_deque.hpp"
#include "fork_join_host.hpp"
#include "guest_seat.hpp"
#include "injector.hpp"
#include "job.hpp"
#include "knobs.hpp"
#include "node_depot.hpp"
#include "parking_lot.hpp"
#include "steal_sessions.hpp"
#include "wait_poll.hpp"
#include "worker.hpp"
#include "worker_context.hpp"
#include "worker_queue.hpp"

namespace wslab::sched {

class Scheduler final : public IThreadPool, public ForkJoinHost {
  using WorkerState = Worker;

 public:
  static constexpr std::string_view kName = "stage5_parallel_algos";

  explicit Scheduler(std::size_t threads, PoolOptions options = {}, SchedulerKnobs knobs = {})
      : knobs_(knobs),
        sessions_(knobs.steal_gate, knobs.linger),
        counters_(validate_thread_count(threads, kName)) {
    // One record per worker, and one more after them: the guest seat.
    const std::size_t records = threads + 1;
    workers_ = static_cast<WorkerState*>(
        ::operator new(sizeof(WorkerState) * records, std::align_val_t{alignof(WorkerState)}));
    try {
      for (std::size_t i = 0; i < records; ++i) {
        WorkerCounters* counters = i < threads ? &counters_[i] : &guest_counters_;
        ::new (static_cast<void*>(&workers_[i]))
            WorkerState(this, knobs_, i, counters, sessions_.gate(), depot_, small_depot_);
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

  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  ~Scheduler() override {
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
    // The tasks this thread is inside, which the destructor must not wait for: on a worker, the
    // task nodes it runs one inside the other (at least one: a piece of a task, such as a stolen
    // join half, counts as its task, which waits for it); on any other thread, those its
    // try_run_one() runs (own_tasks_here()).
    const std::int64_t own_tasks =
        me != nullptr ? std::max<std::int64_t>(1, me->tasks_running) : own_tasks_here(*this);
    // From one of its own tasks, this thread drains; the retirements a worker still owes count
    // too, so it settles them before each look for work. First it runs what its own deque holds:
    // task groups' jobs there (step 'Group jobs') belong to groups waiting further down this
    // thread's stack, and no ledger counts them.
    if (me != nullptr) run_own_deque(*me);
    drain_and_join(
        *this, own_tasks, ledger_, threads_,
        [this, me] {
          if (me != nullptr) settle_retirements(*me);
          return try_run_one();
        },
        [this] { parking_.notify_all(); });
    // The destroying worker lives on (detached) until its task returns: its context must not
    // point into the records freed below.
    if (me != nullptr) this_thread_worker = &kNoWorker;
    destroy_workers();
  }

  void submit(Task task) override { spawn(std::move(task)); }

  // submit() for callers that know the concrete pool type: from a worker, the callable is built
  // directly inside the recycled task node, skipping the by-value Task of the virtual interface.
  // Same semantics, same accounting.
  template <class F>
    requires std::constructible_from<Task, F&&>
  void spawn(F&& fn) {
    // Compiled away for a callable that cannot be empty (a lambda).
    if (is_empty_callable(fn)) [[unlikely]]
      throw_empty_submit(kName);
    if (WorkerState* me = current_worker()) {
      spawn_on(*me, std::forward<F>(fn));
      return;
    }
    spawn_outside(std::forward<F>(fn));
  }

  void wait_idle() override {
    // A short wait ends without sleeping (README.md, steps 9 to 11): a waiter that slept costs a
    // futex wake-up when the pool drains, and, if the workers park meanwhile, its next submission
    // costs one more. So it first polls for about as long as an idle worker searches before
    // parking, with the same backoff, then sleeps. It polls the ledger's idle_falls(), not the
    // count, which every spawn writes: a poll of the count pulls its line off the spawning worker's
    // core each time, and the worker's next spawn waits for it to come back.
    // A waiter whose last polls ran out sleeps at once (step 'Adaptive wait', wait_poll.hpp).
    if (!waiting_would_wait_for_itself(*this)) {
      const std::uint64_t falls = ledger_.idle_falls();  // before the count: no fall is missed
      if (ledger_.in_flight() != 0 && wait_poll_.poll_first()) {
        for (std::uint32_t round = 0; round < knobs_.spin_rounds && ledger_.idle_falls() == falls;
             ++round)
          search_backoff(round);
        wait_poll_.polled(ledger_.idle_falls() != falls);
      }
    }
    ledger_.wait_idle(kName, *this);
  }

  // How many task exceptions the last wait_idle() discarded besides the one it rethrew.
  std::uint64_t dropped_exceptions() const { return ledger_.dropped_by_last_wait(); }

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
    // or a steal, so the first is what the other two leave. An estimate per worker: a batched
    // steal counts every job it takes, and another worker may steal some of them back before the
    // thief runs them (counted twice as steals, run once), so the difference can fall below zero.
    for (WorkerStats& w : s.workers) {
      const std::uint64_t elsewhere = w.global_pops + w.steals;
      w.local_pops = w.tasks_executed > elsewhere ? w.tasks_executed - elsewhere : 0;
    }
    return s;
  }

  const SchedulerKnobs& knobs() const noexcept { return knobs_; }

  // Sessions of the steal gate open now, idle ones included (steal_sessions.hpp). For tests and
  // the lab.
  std::uint32_t open_steal_sessions() const noexcept { return sessions_.open_now(); }

  // Spare task nodes and small group jobs' blocks in the pool's depots now (node_depot.hpp). For
  // tests and the lab.
  std::size_t depot_nodes() const { return depot_.size() + small_depot_.size(); }

  // How many times the workers' deques (Chase-Lev and frame deques) have grown, and how many of
  // those growths a push announced to pausing thieves (announced_push()): the same, unless a push
  // bypassed it. Owner-only state: for tests, once the pool is idle (after wait_idle()).
  std::size_t deque_growths() const noexcept {
    std::size_t sum = 0;
    for (std::size_t i = 0; i < record_count_; ++i)
      sum += workers_[i].deque.retired_buffers() + workers_[i].frames.growths();
    return sum;
  }
  // The slots of every frame deque's buffers, the current ones and those kept (64 bytes each):
  // what step 'Frames given back' returns once the pool is idle. Any thread (relaxed).
  std::size_t frame_slots_held() const noexcept {
    std::size_t sum = 0;
    for (std::size_t i = 0; i < record_count_; ++i)
      sum += workers_[i].frames.held_slots();
    return sum;
  }
  std::size_t announced_growths() const noexcept {
    std::size_t sum = 0;
    for (std::size_t i = 0; i < record_count_; ++i)
      sum += workers_[i].announced_growths;
    return sum;
  }

  // Workers asleep in the parking lot now (parking_lot.hpp). For tests and the lab.
  std::uint32_t sleeping_workers() const noexcept { return parking_.sleeping(); }

  // How many pauses in a row on its latest victim ran their whole length, for worker `worker`:
  // its next pause there lasts 2^min(this, tiny_steal_doublings) times tiny_steal_pause_us (steps
  // 'Doubling pauses' and 'Remembered pauses'). For tests and the lab.
  std::uint32_t remembered_full_pauses(std::size_t worker) const noexcept {
    return workers_[worker].tiny_pauses_in_full.load(std::memory_order_relaxed);
  }

  // The index of the worker that runs the caller; thread_count() on any other thread (a guest in
  // a worker's seat included). For tests and the lab.
  std::size_t current_worker_index() const noexcept {
    const WorkerState* me = current_worker();
    return me != nullptr && me->index < thread_count() ? me->index : thread_count();
  }

  // How wait_idle() has waited (wait_poll.hpp). For tests and the lab.
  const WaitPoll& wait_poll() const noexcept { return wait_poll_; }

  // How a searcher waits between two scans, round after round (search(), and fork-join's waiter
  // for a stolen job). The first kSearchPauseRounds pause on the core and catch work that
  // arrives soon; the later ones yield the core, so that a thread waiting to run (the submitter
  // itself, when the pool has as many workers as cores) is not starved by workers spinning on its
  // behalf. The pause bursts stay short (1, 2, 4, then 8 pauses): work pushed during a burst waits
  // for the burst to end.
  static constexpr std::uint32_t kSearchPauseRounds = 32;
  // How long a worker sleeps before it counts the pool as idle and empties the node depot.
  static constexpr std::chrono::milliseconds kIdleAfter{50};
  static void search_backoff(std::uint32_t round) noexcept {
    if (round < kSearchPauseRounds) {
      for (std::uint32_t i = 0; i < (1u << std::min<std::uint32_t>(round, 3)); ++i)
        cpu_relax();
    } else {
      std::this_thread::yield();
    }
  }

  using GuestSeat = sched::GuestSeat;

  // The calling worker's own deque, looked up once per join (ForkJoinHandle::with_worker_queue()):
  // join pushes and pops through it on every fork without finding the worker again each time.
  // Use it only on the thread that obtained it, while the pool lives. Models WorkerQueue.
  class LocalQueue {
   public:
    static constexpr std::uint32_t kSearchPauseRounds = Scheduler::kSearchPauseRounds;

    // The queue of the worker whose context `ctx` is, for a caller that keeps the context rather
    // than the thread-local (fork_join/worker_ref.hpp's WorkerRef): no lookup. Only a scheduler's
    // records publish a WorkerContext, so its pool is a Scheduler.
    static LocalQueue of(WorkerContext& ctx) noexcept {
      return LocalQueue(static_cast<Scheduler*>(ctx.pool), static_cast<WorkerState*>(&ctx));
    }

    // Where a fork's job went: join hands it back to pop() and release_stolen().
    enum class Place : bool { split_deque, chase_lev };

    // The split deque (step 'Split deque'), unless it is full or switched off. A push that keeps
    // the job private publishes nothing, so it wakes nobody.
    [[gnu::always_inline]] Place push(Job& job) {
      if (push_fork(*me_, job)) [[likely]]
        return Place::split_deque;
      push_own(*me_, &job);
      pool_->parking_.notify_one();
      return Place::chase_lev;
    }
    // push() for a job built in the split deque's slot (step 'Frames in the slot').
    [[gnu::always_inline]] void* fork_slot() noexcept { return fork_slot(*me_); }
    [[gnu::always_inline]] Place push_built(void* slot) noexcept {
      push_built_fork(*me_, slot);
      return Place::split_deque;
    }
    // For `job`, pushed at `place`: from the split deque, `job` or nullptr (stolen), without a
    // load of its slot (only strictly nested forks use that deque, so the newest is `job`); from
    // the Chase-Lev deque, the most recently pushed job still there, or nullptr.
    [[gnu::always_inline]] Job* pop(Place place, Job& job) noexcept {
      if (place == Place::split_deque) [[likely]]
        return take_back_fork(*me_, job) ? &job : nullptr;
      pool_->note_busy(*me_);
      return pool_->pop_own_lifo(*me_);
    }
    // After pop() returned nullptr and the thief has finished the job (its flag is set).
    void release_stolen(Place place) noexcept {
      if (place == Place::split_deque) me_->forks.release_stolen();
    }

    // The split deque alone, for a fork that takes another path when it is full (WorkerRef's,
    // fork_join/worker_ref.hpp), on the worker whose context is `ctx`. push_fork() returns false,
    // pushing nothing, when the deque is full or switched off; take_back_fork(ctx, job), for the
    // job pushed last, returns whether it is back (true) or stolen (false), without a load of its
    // slot: only strictly nested forks use this deque, so nothing lies above it; after false and
    // once the thief is done, release_stolen(Place::split_deque).
    // Static, over the context: the pool is loaded only on the rare branches that need it, so a
    // recursion that keeps the context in a register keeps nothing else live for them.
    [[gnu::always_inline]] static bool push_fork(WorkerContext& ctx, Job& job) {
      using Pushed = typename decltype(std::declval<WorkerState&>().forks)::Pushed;
      const Pushed pushed = static_cast<WorkerState&>(ctx).forks.push(&job);
      if (pushed == Pushed::kept) [[likely]]
        return true;
      return shared_or_full(ctx, pushed == Pushed::shared);
    }
    // The same push for a job built in the deque's own slot (step 'Frames in the slot'):
    // fork_slot(ctx) is where to build it, or nullptr when the deque is full or the step is off;
    // push_built_fork(ctx, slot) then pushes it.
    [[gnu::always_inline]] static void* fork_slot(WorkerContext& ctx) noexcept {
      return static_cast<WorkerState&>(ctx).forks.next_slot();
    }
    [[gnu::always_inline]] static void push_built_fork(WorkerContext& ctx, void* slot) noexcept {
      if (!static_cast<WorkerState&>(ctx).forks.push_built_private(slot)) [[unlikely]]
        share_fork(ctx);
    }
    // The fast pair for a fork with a way out of its own (join's and WorkerRef::join's in the
    // slot, step 'Private forks'): private_fork_slot(ctx) is nullptr also when thieves have
    // emptied the shared part, so that the push that must share runs on that way out (which calls
    // fork_slot() and push_built_fork()); push_private_fork(ctx, slot) then only moves the head.
    // The fork's own path then makes no call that needs its halves kept in registers across it.
    [[gnu::always_inline]] static void* private_fork_slot(WorkerContext& ctx) noexcept {
      return static_cast<WorkerState&>(ctx).forks.next_private_slot();
    }
    [[gnu::always_inline]] static void push_private_fork(WorkerContext& ctx, void* slot) noexcept {
      static_cast<WorkerState&>(ctx).forks.push_private(slot);
    }
    // Built: the job was built in its slot (fork_slot(), push_built_fork()), so the slot names
    // the place and the deque's head is not read back (SplitDeque::take_back_built_private()).
    // A fork's take-back counts nothing for the steal sessions (step 'Forks off the count'): it
    // pays no fence while a session is open, so it has nothing to ask of it.
    template <bool Built = false>
    [[gnu::always_inline]] static bool take_back_fork(WorkerContext& ctx, const Job& job) noexcept {
      WorkerState& me = static_cast<WorkerState&>(ctx);
      if constexpr (Built) {
        return me.forks.take_back_built_private(&job) || reclaim_fork(ctx);
      } else {
        return me.forks.take_back_private(&job) || reclaim_fork(ctx);
      }
    }

    // Any job: this worker's own deque, the injector, a steal. For a worker waiting for a job it
    // forked and lost to a thief; run what it returns with run().
    Job* find_work() { return pool_->find_any(*me_); }
    // Out of line: rare on a join (a job left above the forked one, or a helped one), and
    // inlined it makes its caller too big for the compiler to inline the fork's own pop and
    // calls.
    [[gnu::noinline]] void run(Job* job) { pool_->run_on_worker(*me_, job); }
    // While a waiting worker looks for work it counts as a searcher, like a worker in its search
    // loop: pushers leave their work to it instead of waking a sleeper (README.md, step
    // 'Parking'). end_search() hands that duty on.
    void begin_search() noexcept { pool_->parking_.begin_search(); }
    void end_search() noexcept { pool_->parking_.found_work(); }
    // True when some thread is searching for work and this worker's deques have none to give it
    // (its split deque shares nothing).
    // A job that is running is invisible to thieves, so fork-join's loops ask this between steps
    // of a long piece and hand half of the rest to the searcher when it says yes. Relaxed loads,
    // a hint only: a wrong answer costs one needless fork or one missed split, never a job.
    bool thief_waiting() const noexcept {
      return pool_->parking_.searching_now() != 0 && me_->deque.empty() &&
             me_->forks.nothing_shared();
    }
    static void search_backoff(std::uint32_t round) noexcept { Scheduler::search_backoff(round); }

   private:
    friend class Scheduler;
    LocalQueue(Scheduler* pool, WorkerState* me) noexcept : pool_(pool), me_(me) {}
    // The rare halves of push_built_fork() and take_back_fork<true>(), out of line and over the
    // context alone: the fork's path computes no address for them and keeps no register for them.
    [[gnu::noinline]] static void share_fork(WorkerContext& ctx) noexcept {
      static_cast<WorkerState&>(ctx).forks.share_pushed();
      shared_or_full(ctx, true);
    }
    // Also where a worker that forks on its fast path hears that an owner asked it to close its
    // steal session (close_forkers_sessions()): the ask trips its split deque.
    [[gnu::noinline]] static bool reclaim_fork(WorkerContext& ctx) noexcept {
      WorkerState& me = static_cast<WorkerState&>(ctx);
      if (me.forks.untrip()) static_cast<Scheduler*>(ctx.pool)->sessions_.busy(me.session);
      return me.forks.reclaim_newest();
    }
    [[gnu::noinline]] static bool shared_or_full(WorkerContext& ctx, bool shared) noexcept {
      if (shared) static_cast<Scheduler*>(ctx.pool)->parking_.notify_one();
      return shared;
    }

    Scheduler* pool_;
    WorkerState* me_;
  };

  // A coroutine join's run on one worker (ForkJoinHandle::task_job_run()), which looks the worker
  // up once per join. push() counts a job that runs itself as a task of the pool, before any
  // thief can see it, and puts it on the worker's split deque (step 'Split deque'), or on its
  // Chase-Lev deque when that is full; take_back() takes the jobs back in the reverse order of
  // their pushes. The run's own jobs are strictly nested with every other fork on the split deque,
  // as join's are: a run takes back (or finds stolen) every job it pushed before it returns. Used
  // only on the thread that made it.
  class TaskJobRun {
   public:
    // Where push() put a job: the split deque, or the Chase-Lev deque at `index`.
    struct Place {
      static constexpr std::int64_t kSplit = -1;
      std::int64_t index = kSplit;
      bool split() const noexcept { return index == kSplit; }
    };

    TaskJobRun() noexcept = default;  // off the workers: push nothing, take nothing back
    explicit operator bool() const noexcept { return me_ != nullptr; }

    // Always inlined, as are take_back()'s and retire()'s common paths: these are the fork's
    // whole cost where nobody steals, and a file that also joins vectors of coroutines would
    // otherwise leave them out of line.
    [[gnu::always_inline]] Place push(Job& job) {
      me_->retirements.admit(pool_->ledger_);
      if (LocalQueue::push_fork(*me_, job)) [[likely]]
        return Place{};
      return push_shared(job);
    }

    // `job`, pushed at `place`, back from its deque: true when it is here (the run calls it, then
    // retire()), false when a thief took it. A job stolen from the split deque keeps its slot
    // until the thief has read it: take_back() returns only once thief_has_read() is true, and
    // the slot is free again (and the job may be reused). Jobs pushed above `job` on the Chase-Lev
    // deque and left there (the children's own, which they did not take back) run here first, with
    // the pool's bookkeeping.
    template <class ThiefHasRead>
    [[gnu::always_inline]] bool take_back(Job& job, Place place, ThiefHasRead&& thief_has_read) {
      // The job pushed last is `job`, by the nesting.
      if (place.split() && LocalQueue::take_back_fork(*me_, job)) [[likely]]
        return true;
      return take_back_rarely(job, place, thief_has_read);
    }

    // After the run called a job it took back. Nothing if the job destroyed the pool.
    [[gnu::always_inline]] void retire() noexcept {
      if (!this_thread_identity.orphaned) pool_->retire_one(*me_);
    }

   private:
    friend class Scheduler;
    TaskJobRun(Scheduler* pool, WorkerState* me) noexcept : pool_(pool), me_(me) {}

    // The split deque is full: the Chase-Lev deque, where every push is published.
    [[gnu::noinline]] Place push_shared(Job& job) {
      const Place place{me_->deque.bottom_index()};
      try {
        push_own(*me_, &job);  // may throw std::bad_alloc when the deque grows
      } catch (...) {
        pool_->retire_one(*me_);
        throw;
      }
      pool_->parking_.notify_one();
      return place;
    }

    // A job stolen from the split deque (take_back_fork() said so), or one on the Chase-Lev
    // deque, taken back or stolen. A stolen job may be reused once its thief has read it; on the
    // split deque its slot is freed only then, on the Chase-Lev deque it is free at once.
    template <class ThiefHasRead>
    [[gnu::noinline]] bool take_back_rarely(Job& job, Place place, ThiefHasRead& thief_has_read) {
      if (!place.split()) {
        while (me_->deque.bottom_index() > place.index) {
          Job* top = pool_->pop_own_lifo(*me_);
          if (top == &job) return true;
          if (top == nullptr) break;
          pool_->run_on_worker(*me_, top);
        }
      }
      for (std::uint32_t round = 0; !thief_has_read(); ++round)
        search_backoff(round);
      if (place.split()) me_->forks.release_stolen();
      return false;
    }

    Scheduler* pool_ = nullptr;
    WorkerState* me_ = nullptr;
  };

  // Fork-join's handle on this scheduler: one pointer, passed by value into every fork, and the
  // only way join, TaskGroup and the algorithms reach the workers' deques, the guest seat and the
  // knobs (fork_join/pool_handle.hpp resolves it once per call, and says what each member means).
  class ForkJoinHandle {
   public:
    explicit ForkJoinHandle(Scheduler& pool) noexcept : pool_(&pool) {}

    IThreadPool& pool() const noexcept { return *pool_; }
    std::size_t thread_count() const noexcept { return pool_->worker_count_; }

    // on_worker(queue) with the calling worker's own LocalQueue, or otherwise() on a thread that
    // does not work for this scheduler: one TLS load and one compare.
    template <class OnWorker, class Otherwise>
    [[gnu::always_inline]] decltype(auto) with_worker_queue(OnWorker&& on_worker,
                                                            Otherwise&& otherwise) const {
      if (WorkerState* me = pool_->current_worker()) [[likely]] {
        return on_worker(LocalQueue(pool_, me));
      }
      return otherwise();
    }

    // The guest seat (guest_seat.hpp; README.md, step 'Guest seat'), or an empty GuestSeat when
    // another thread has it, the caller already works for this pool, the pool is shutting down,
    // or the seat is switched off.
    GuestSeat try_seat_guest() const noexcept { return pool_->try_seat_guest(); }
    bool hands_outside_joins_to_workers() const noexcept { return true; }
    // True when no worker sleeps or searches: work handed to the workers that none has started
    // waits for a busy (or blocked) pool, not for a worker the machine has not scheduled yet.
    bool every_worker_busy() const noexcept {
      return pool_->parking_.sleeping() == 0 && pool_->parking_.searching_now() == 0;
    }
    bool timed_leaves() const noexcept { return pool_->knobs_.timed_leaves; }

    // A waiter's own work (README.md, step 'Waits without help bounds'; worker_queue.hpp's
    // OwnWorkMark). own_work_mark() is homed on the calling worker (on none off the workers).
    // try_spawn_marked() spawns the callable make_call() returns on the calling worker's deque,
    // first lowering the mark to its slot when this worker is the mark's home, and returns true;
    // off the workers it returns false without calling make_call. run_own_above() pops and runs,
    // here, the job on top of the calling worker's deque when the worker is the mark's home and
    // the job lies at or above the mark: a task's body through around(body) (fork-join's stack
    // guard), its bookkeeping on this worker. False when there is none.
    // The mark allows group jobs (and frames) when the step is on and the caller is a worker.
    OwnWorkMark own_work_mark() const noexcept {
      // Group jobs and frames only on a worker: a mark homed on none allows neither.
      WorkerState* me = pool_->current_worker();
      return OwnWorkMark{me,
                         OwnWorkMark::kNone,
                         OwnWorkMark::kNone,
                         me != nullptr && pool_->knobs_.group_jobs,
                         false,
                         me != nullptr && pool_->group_frames_on_ ? me : nullptr};
    }
    template <class MakeCall>
    bool try_spawn_marked(OwnWorkMark& mark, MakeCall& make_call) const {
      WorkerState* me = at_home(mark);
      if (me != nullptr) [[likely]] {
        // The round's lowest slot: set by its first spawn, found below by the later ones, save
        // those after another wait on this worker popped past it.
        const std::int64_t bottom = me->deque.bottom_index();
        if (bottom < mark.low) [[unlikely]]
          lower_marks(mark, bottom, me->frames.bottom_index());
      } else {
        me = pool_->current_worker();
        if (me == nullptr) return false;
      }
      pool_->spawn_on(*me, MadeBy<MakeCall>{make_call});
      return true;
    }
    // Touches the pool only on the mark's home, a worker of the pool, which is then alive.
    template <class Around>
    bool run_own_above(const OwnWorkMark& mark, Around&& around) const {
      WorkerState* me = at_home(mark);
      return me != nullptr && pool_->run_own_above(*me, mark, around);
    }

    // A group's callable as a group job (job.hpp; README.md, step 'Group jobs'), when the mark
    // allows them, the caller is its home and the step is on: build(memory) constructs the job of
    // `Bytes` bytes without throwing, in a small block when it fits one (fits_small_block(); step
    // 'Small group jobs'), else in a task node's memory, and the job goes on the worker's deque,
    // the mark lowered to its slot. Else false, with nothing called.
    // Throws std::bad_alloc when the deque cannot grow (the job is then dropped). run_own_above()
    // runs the group jobs it pops with GroupJob::Ran::here and its mark: the job's group tells
    // whether that wait is its own.
    static constexpr std::size_t kGroupJobSize = sizeof(TaskJob);
    static constexpr std::size_t kGroupJobAlign = alignof(TaskJob);
    template <std::size_t Bytes, std::size_t Align, class Build>
    [[gnu::always_inline]] bool try_push_group_job(OwnWorkMark& mark, Build& build) const {
      return pool_->push_group_job<fits_small_block(Bytes, Align)>(mark, build);
    }
    // A group's small callable as a frame (group_frame.hpp; README.md, step 'Group frames'), by
    // the mark's frame home (the caller looks: GroupWork::try_push_group_frame()): count() (the
    // group's count of pushes, which must not throw), then the frame's words, make_words() (a
    // std::array of at most eight), go on the worker's frame deque, the mark lowered to their
    // slot. False, with nothing called, when the frame deque is at its cap. Throws std::bad_alloc
    // when the frame deque cannot grow (after count(): nothing was pushed).
    template <class Count, class MakeWords>
    [[gnu::always_inline]] bool try_push_group_frame(OwnWorkMark& mark, Count& count,
                                                     MakeWords& make_words) const {
      return pool_->push_group_frame(mark, count, make_words);
    }
    // The run function for frames whose body is Body::run_body(const FrameSlot&, GroupJob::Ran,
    // const void* own_wait) (README.md, step 'Runs of one frame function'): it runs its frame,
    // and, run by a waiter's loop, the frames of the same function after it.
    template <class Body>
    static constexpr FrameRunFn frame_run_function() noexcept {
      return &Scheduler::run_frames_of<Body>;
    }

    // A coroutine join's children (coro/co_join.hpp): jobs that run themselves, yet count as the
    // pool's tasks, from their push until whoever runs them has finished. task_job_run() starts a
    // join's run on the calling worker (an empty TaskJobRun off the workers); a thief that steals
    // one of the jobs runs it, and the job calls retire_task_job() as its last touch of the pool.
    TaskJobRun task_job_run() const noexcept { return TaskJobRun(pool_, pool_->current_worker()); }
    void retire_task_job() const noexcept { Scheduler::retire_task_job(pool_); }

   private:
    Scheduler* pool_;
  };

 private:
  // spawn() on worker `me`: the callable goes into a node from the worker's cache, onto its deque.
  template <class F>
  void spawn_on(WorkerState& me, F&& fn) {
    TaskJob* node = me.nodes.take(std::forward<F>(fn));
    me.retirements.admit(ledger_);
    try {
      push_own(me, node);  // may throw std::bad_alloc when the deque grows
    } catch (...) {
      node->task.reset();
      me.nodes.recycle(node);
      retire_one(me);  // undoes the admission above, whichever form it took
      throw;
    }
    parking_.notify_one();
  }

  // Every push onto a worker's own Chase-Lev deque (README.md, step 'Growing owners'). A push that
  // grows the deque copies it into a buffer twice the size, whose pages the kernel then faults in
  // one at a time: milliseconds at a million jobs, during which the owner's deque stands still as
  // a blocked owner's does. So the owner says it is growing (`growing`, read by pausing thieves).
  // It knows without reading top on every push: top only grows, so once a push has seen the
  // deque's top at least t, no push below t plus the capacity can grow it (`grow_check_at`), and
  // only a push at or above that bound looks again. One compare per push.
  [[gnu::always_inline]] static void push_own(WorkerState& me, Job* job, std::int64_t bottom) {
    if (bottom >= me.grow_check_at) [[unlikely]] {
      push_near_full(me, job);
      return;
    }
    me.deque.push(job);
  }
  [[gnu::always_inline]] static void push_own(WorkerState& me, Job* job) {
    push_own(me, job, me.deque.bottom_index());
  }
  [[gnu::noinline]] static void push_near_full(WorkerState& me, Job* job) {
    const std::int64_t bottom = me.deque.bottom_index();
    if (room_below(me.deque, bottom, me.grow_check_at)) {
      me.deque.push(job);
      return;
    }
    // Full as far as we know: this push grows the buffer (unless a steal made room meanwhile).
    announced_push(me, me.deque, bottom, me.grow_check_at, [&] { me.deque.push(job); });
  }
  // Whether a push at `bottom` fits `deque`, one of a worker's, as it is; if so, `check_at`
  // becomes the bound below which no push needs a look. Reads top (relaxed): from now on it is at
  // least bottom - size, so every index below bottom - size + capacity has room.
  template <class Deque>
  static bool room_below(const Deque& deque, std::int64_t bottom, std::int64_t& check_at) noexcept {
    const std::int64_t size = deque.size();
    const auto capacity = static_cast<std::int64_t>(deque.capacity());
    if (size >= capacity) return false;
    check_at = bottom - size + capacity;
    return true;
  }
  // A push at `bottom` that may grow `deque`, one of `me`'s, announced to pausing thieves while it
  // runs and counted if it grew the deque; the next push past `bottom` looks again (`check_at`).
  template <class Deque, class Push>
  static void announced_push(WorkerState& me, const Deque& deque, std::int64_t bottom,
                             std::int64_t& check_at, Push&& push) {
    const std::size_t capacity = deque.capacity();
    me.growing.store(true, std::memory_order_relaxed);
    try {
      push();
    } catch (...) {
      me.growing.store(false, std::memory_order_relaxed);
      throw;
    }
    me.growing.store(false, std::memory_order_relaxed);
    if (deque.capacity() != capacity) ++me.announced_growths;
    check_at = bottom + 1;  // at the new capacity
  }

  // ForkJoinHandle::try_push_group_job().
  template <bool Small, class Build>
  [[gnu::always_inline]] bool push_group_job(OwnWorkMark& mark, Build& build) {
    if (!mark.group_jobs) return false;  // the step is off, or the group is not in the stack
    WorkerState* me = at_home(mark);
    if (me == nullptr) [[unlikely]]
      return false;
    void* memory;
    if constexpr (Small)
      memory = me->small_jobs.take_empty();
    else
      memory = me->nodes.take_empty();
    GroupJob* job = build(memory);
    const std::int64_t bottom = me->deque.bottom_index();
    // The round's lowest slot: set by its first push, found below by the later ones, save those
    // after another wait on this worker popped past it.
    if (bottom < mark.low) [[unlikely]]
      lower_marks(mark, bottom, me->frames.bottom_index());
    try {
      push_own(*me, job, bottom);  // may throw std::bad_alloc when the deque grows
    } catch (...) {
      job->run(GroupJob::Ran::dropped);
      recycle_group_job(*me, job, Small);
      throw;
    }
    parking_.notify_one();
    return true;
  }

  // A round's first push on either of the home's deques, or one below a mark another wait popped
  // past, marks both: whatever the waiter's frame pushes afterwards, on either deque, is its own
  // work (OwnWorkMark).
  static void lower_marks(OwnWorkMark& mark, std::int64_t deque_bottom,
                          std::int64_t frames_bottom) noexcept {
    if (deque_bottom < mark.low) mark.low = deque_bottom;
    if (frames_bottom < mark.frame_low) mark.frame_low = frames_bottom;
  }

  // ForkJoinHandle::frame_run_function() (README.md, step 'Runs of one frame function'). Told by
  // the loop of a wait on the frame's home (run_own_above(), whose mark own_wait is) that many
  // frames follow, the next of the same function (`lead`), it goes on with the frames that loop
  // would pop next, doing for each what the loop does (the Chase-Lev deque first, then the mark,
  // the pop with its handshake, note_busy(), the orphaned check), and calls the body of each frame
  // of its own function directly: a round of one lambda's callables costs one indirect call, not
  // one per callable. A job on the Chase-Lev deque above the mark (a callable's push) ends the
  // run, and the loop runs it, as it would have; another function's frame runs through its
  // pointer. Otherwise it runs its frame alone.
  template <class Body>
  static void run_frames_of(const FrameSlot& slot, GroupJob::Ran how, const void* own_wait,
                            bool lead) noexcept {
    // The run out of line, so that the common path keeps no register across the body.
    if (lead) [[unlikely]]
      return run_frames_from<Body>(slot, *static_cast<const OwnWorkMark*>(own_wait));
    Body::run_body(slot, how, own_wait);
  }
  template <class Body>
  [[gnu::noinline]] static void run_frames_from(const FrameSlot& slot,
                                                const OwnWorkMark& mark) noexcept {
    Body::run_body(slot, GroupJob::Ran::here, &mark);
    if (this_thread_identity.orphaned) [[unlikely]]
      return;  // the callable destroyed the pool, and the worker with it
    // Only on the home's own thread. The loop may hand the frame to a fresh thread, its stack being
    // nearly full (GroupWork::run_own_on_home(), with_stack_room()); that thread, no worker, runs
    // its frame alone, and the loop, on the home, hands it each next one.
    if (this_thread_context() != mark.home) [[unlikely]]
      return;
    WorkerState& me = *static_cast<WorkerState*>(const_cast<WorkerContext*>(mark.home));
    Scheduler& pool = *static_cast<Scheduler*>(me.pool);
    const auto self = reinterpret_cast<std::uintptr_t>(&run_frames_of<Body>);
    std::uint64_t ran = 0;
    // The loop's next step, while it is a pop that finds a frame: nothing on the Chase-Lev deque
    // above the mark, and a frame above it not taken.
    while (me.deque.bottom_index() <= mark.low) {
      const FrameSlot* frame = pop_frame_above(me, mark);
      if (frame == nullptr) break;
      ++ran;
      pool.note_busy(me);
      if ((*frame)[0] == self) [[likely]]
        Body::run_body(*frame, GroupJob::Ran::here, &mark);
      else
        run_frame(*frame, GroupJob::Ran::here, &mark);  // another's: through its function
      if (this_thread_identity.orphaned) [[unlikely]]
        return;
    }
    me.counters->bump(Counter::tasks_executed, ran);
  }
  // The waiter's next frame, for its loop and for a run: the newest on `me`'s frame deque when it
  // lies above the mark and no thief took it first (the pop decides), else nullptr.
  [[gnu::always_inline]] static const FrameSlot* pop_frame_above(WorkerState& me,
                                                                 const OwnWorkMark& mark) {
    const std::int64_t bottom = me.frames.bottom_index();
    return bottom > mark.frame_low ? me.frames.pop_at(bottom) : nullptr;
  }
  // For the waiter's loop, as it starts: whether the first frame it pops should run the frames
  // after it (`lead` above): more than kFramesForARun lie above the mark, enough to repay the
  // run's own cost (a call, its registers, a count), and the top two have one function, read in
  // their slots (the caller, their owner, wrote them; a thief only reads them). A hint only: the
  // run checks everything again.
  static constexpr std::int64_t kFramesForARun = 16;
  bool leads_a_run(const WorkerState& me, const OwnWorkMark& mark) const noexcept {
    const std::int64_t bottom = me.frames.bottom_index();
    return bottom - kFramesForARun > mark.frame_low && knobs_.frame_runs &&
           me.frames.owner_word(bottom - 1, 0) == me.frames.owner_word(bottom - 2, 0);
  }

  // ForkJoinHandle::try_push_group_frame(). A worker's frame deque holds at most
  // knobs_.group_frames_capacity frames: past that the callable goes another way (false, nothing
  // called), so that a backlog of a million small callables does not leave every worker that ever
  // held one with a 64 MB buffer and as much again retired (frame_deque.hpp keeps them).
  // The words are made only where they are stored, so that they stay in registers.
  template <class Count, class MakeWords>
  [[gnu::always_inline]] bool push_group_frame(OwnWorkMark& mark, Count& count,
                                               MakeWords& make_words) {
    WSLAB_ASSERT(mark.frame_home != nullptr && this_thread_context() == mark.frame_home);
    WorkerState* me = static_cast<WorkerState*>(this_thread_context());
    const std::int64_t bottom = me->frames.bottom_index();
    if (bottom >= me->frame_grow_check_at) [[unlikely]] {
      switch (frame_room(*me, bottom)) {
        case FrameRoom::full:
          mark.frame_home = nullptr;  // no look again this round
          mark.frames_full = true;
          return false;
        case FrameRoom::grow:
          // Apart from the fast path below, whose frame deque has room: a path shared through a
          // flag costs every round's first push a test.
          count();  // before the push publishes the frame (TaskGroup::run() says why)
          if (bottom < mark.frame_low) lower_marks(mark, me->deque.bottom_index(), bottom);
          push_frame_growing(*me, bottom, make_words());  // may throw std::bad_alloc
          parking_.notify_one();
          return true;
        case FrameRoom::room:
          break;
      }
    }
    count();
    if (bottom < mark.frame_low) [[unlikely]]
      lower_marks(mark, me->deque.bottom_index(), bottom);
    me->frames.push_with_room(bottom, make_words());
    parking_.notify_one();
    return true;
  }
  // Whether a push at `bottom` fits the frame deque as it is (room_below(), as push_own()'s), grows
  // it, or would grow it past the cap.
  enum class FrameRoom { room, grow, full };
  [[gnu::noinline]] FrameRoom frame_room(WorkerState& me, std::int64_t bottom) const noexcept {
    if (room_below(me.frames, bottom, me.frame_grow_check_at)) return FrameRoom::room;
    return 2 * me.frames.capacity() <= knobs_.group_frames_capacity ? FrameRoom::grow
                                                                    : FrameRoom::full;
  }
  // A push that grows the frame deque, announced as push_near_full() announces the Chase-Lev
  // deque's: a pausing thief counts the owner as working meanwhile.
  template <std::size_t N>
  [[gnu::noinline]] static void push_frame_growing(WorkerState& me, std::int64_t bottom,
                                                   const std::array<std::uint64_t, N>& words) {
    announced_push(me, me.frames, bottom, me.frame_grow_check_at, [&] { me.frames.push(words); });
  }

  // A group job, run by worker `me` (popped by its loop for the wait `own_wait` when how == here).
  // The memory goes back to the worker's cache of its kind, or is freed if the job destroyed the
  // pool. False in that case.
  template <class Around>
  [[gnu::always_inline]] static bool run_group_job(WorkerState& me, GroupJob* job,
                                                   GroupJob::Ran how, const void* own_wait,
                                                   Around& around) {
    bool small = false;
    around([&] { small = job->run(how, own_wait); });
    if (this_thread_identity.orphaned) [[unlikely]] {
      if (small)
        delete empty_block_at(job);
      else
        delete empty_node_at(job);
      return false;
    }
    recycle_group_job(me, job, small);
    return true;
  }
  [[gnu::always_inline]] static void recycle_group_job(WorkerState& me, GroupJob* job,
                                                       bool small) noexcept {
    if (small)
      me.small_jobs.recycle(empty_block_at(job));
    else
      me.nodes.recycle(empty_node_at(job));
  }

  // ForkJoinHandle::retire_task_job(), on the thread that ran the job: a worker owes it with its
  // other retirements, any other thread retires it at once. Nothing if the job destroyed the pool
  // (from one of its workers, which is then orphaned): `pool` is gone.
  static void retire_task_job(Scheduler* pool) noexcept {
    if (this_thread_identity.orphaned) return;
    if (WorkerState* me = pool->current_worker()) {
      pool->retire_one(*me);
    } else if (pool->ledger_.retire(1)) {
      pool->parking_.notify_all();
    }
  }

  // spawn() from a thread that is none of the workers: through the injector.
  template <class F>
  void spawn_outside(F&& fn) {
    Task task(std::forward<F>(fn));  // may throw (a large callable is boxed): nothing counted
    // An outside submitter stays registered until it returns (admit_external() throws once
    // destruction has begun): once pushed, its task may run and destroy the pool before
    // notify_one() below, and the destructor waits for the stay to end. The workers need none: the
    // destructor joins them. A thread doing a running task's own work is not refused
    // (works_for_running_task(), task_ledger.hpp).
    const TaskLedger::SubmitterStay stay = ledger_.admit_external(kName, this);
    try {
      injector_.push(std::move(task));  // stored by value: no node, no allocation per task
    } catch (...) {
      ledger_.retire();  // a new segment could not be allocated: the task was not queued
      throw;
    }
    parking_.notify_one();
  }

  // For a waiter on one of the workers (ForkJoinHandle::run_own_above()): runs here, newest first,
  // every job on the deque of `me`, `mark`'s home and the calling thread's worker, that lies at or
  // above the mark; true when it ran one. Never digs and never looks below the mark: what lies
  // there is older than the waiter's frame. One loop for the lot, not a return to the waiter's loop
  // per job: a task group's callables are most of what a wait runs. Flattened: GCC otherwise leaves
  // the Chase-Lev pop out of line here, a call and a std::optional returned in memory per job.
  // Then the frame deque (step 'Group frames'): a group's small callables, run in their slots,
  // `here`, counted by their group as group jobs are.
  template <class Around>
  [[gnu::flatten]] bool run_own_above(WorkerState& me, const OwnWorkMark& mark, Around& around) {
    std::uint64_t ran = 0;
    // Step 'Runs of one frame function': whether the first frame this loop pops runs those after
    // it, decided once, as the loop starts (a hint: the run checks everything again).
    bool lead = leads_a_run(me, mark);
    for (;;) {
      if (me.deque.bottom_index() > mark.low) {
        if (Job* job = pop_own_lifo(me)) {
          ++ran;
          // A group job `here`, asked about first since a group's callables are most of what a
          // wait runs, counted by its group with a plain add when this is its own group's wait
          // (step 'Group jobs'); a task node's task through around() (fork-join's stack guard: the
          // task may run on another thread while this one blocks, so only the task goes there, not
          // the worker's owner-only bookkeeping); a join's fork, on the Chase-Lev deque because its
          // split deque was full, with join's own bookkeeping and stack guard. Each counts as this
          // worker's own job for the steal sessions (Step 3).
          note_busy(me);
          const bool alive = GroupJob::is_group_job(*job)
                                 ? run_group_job(me, static_cast<GroupJob*>(job),
                                                 GroupJob::Ran::here, &mark, around)
                                 : run_counted(me, job, around);
          if (!alive) return true;  // the job destroyed the pool, and `me` with it
          continue;
        }
        // The last job, stolen meanwhile: our frames may still be there.
      }
      // The Chase-Lev deque first: past the frame deque's cap a round's later callables are group
      // jobs there, newer than its frames and still in the cache.
      const FrameSlot* frame = pop_frame_above(me, mark);
      if (frame == nullptr) break;
      ++ran;
      note_busy(me);
      around([&] { run_frame(*frame, GroupJob::Ran::here, &mark, lead); });
      lead = false;
      if (this_thread_identity.orphaned) [[unlikely]]
        return true;  // the callable destroyed the pool, and `me` with it
    }
    // The statistics' count of jobs run, once for the lot (README.md, step 'Group jobs'), even
    // of none: a wait mostly runs some, and an add of zero costs less than a test every time.
    me.counters->bump(Counter::tasks_executed, ran);
    return ran != 0;
  }

  // Runs here, newest first, everything on `me`'s own Chase-Lev deque, then its frames: a guest
  // seat emptied for the next guest, a worker destroying its pool from a task.
  void run_own_deque(WorkerState& me) {
    for (;;) {
      Job* job = pop_own_lifo(me);
      if (job == nullptr) job = pop_own_frame(me);
      if (job == nullptr) return;
      run_on_worker(me, job);
    }
  }

  // The guest seat, for ForkJoinHandle::try_seat_guest(): only while a worker sleeps, to lend.
  GuestSeat try_seat_guest() noexcept {
    if (!knobs_.guest_seat || is_worker_of(this) || !seat_.try_claim()) return {};
    // The seat first, then the loan: the seat's holder is the only thread that lends, so a loan
    // taken is always returned by leave_guest_seat().
    if (ledger_.stopping() || !parking_.try_take_loan()) {
      seat_.release();
      return {};
    }
    const ThreadRole saved = ThreadRole::current();
    ThreadRole{WorkerIdentity{this, worker_count_, &guest_record(), false}, &guest_record()}
        .assume();
    return GuestSeat(this, &leave_guest_seat_of, saved);
  }

  // try_run_one() from a thread that is not a worker: the injector first, then a steal. What it
  // runs is marked as a task of this pool running here, so that wait_idle() inside is refused.
  [[gnu::noinline]] bool try_run_one_outside() {
    Task task;
    if (injector_.try_pop(task)) {
      run_outside_.bump();
      // False also when the task destroyed the pool from here: `this` is then gone.
      if (run_counted_task(task, *this, ledger_)) parking_.notify_all();
      return true;
    }
    FrameJob frame;  // where a stolen frame goes: this thread has no worker record
    Job* job = steal_from_outside(frame);
    if (job == nullptr) return false;
    run_outside_.bump();
    if (!job->is_task_node()) {
      // A piece of a join, or a group's callable, inside a running task: part of that task. A
      // group job's execute() runs it `elsewhere` and frees its memory (job.hpp).
      RunningTaskScope running(*this);
      job->execute();
      return true;
    }
    auto* node = static_cast<TaskJob*>(job);
    // False when the ledger did not drain, and when the task destroyed the pool from here.
    const bool drained = run_counted_task(node->task, *this, ledger_);
    delete node;
    if (drained) parking_.notify_all();
    return true;
  }

  static void leave_guest_seat_of(void* pool, const ThreadRole& saved) noexcept {
    static_cast<Scheduler*>(pool)->leave_guest_seat(saved);
  }

  void leave_guest_seat(const ThreadRole& saved) noexcept {
    WorkerState& me = guest_record();
    // What the guest spawned and did not run is still on the seat's deque: run it here, so that
    // the seat is empty between guests (a thief could take it, but if every worker sleeps none
    // would come). Then settle the retirements the seat owes.
    run_own_deque(me);
    // The seat's frame deque keeps the buffer it has, for the next guest (one that makes a large
    // group in every visit would grow it again each time), and frees the ones it outgrew.
    if (knobs_.give_back_frames) me.frames.give_back(me.frames.capacity());
    settle_retirements(me);
    sessions_.end(me.session);
    // A push skipped its wake-up because of the loan: if its work is still queued, wake a worker
    // for it (the re-scan of README.md, step 'Guest seat').
    if (parking_.return_loan(static_cast<std::uint32_t>(worker_count_)) && any_work_queued()) {
      parking_.wake_one();
    }
    saved.assume();
    seat_.release();
  }

  // In a re-scan (the caller has announced, and counts as a sleeper or as the lent one): whether
  // to leave the guest seat's deque alone because the caller is the sleeper lent to its guest. A
  // guest sits down as soon as the count says somebody sleeps, which includes a worker still in
  // its re-scan (behind announce()'s membarrier, microseconds): stealing the guest's first push
  // then would revoke the loan and compute beside the guest, two CPUs for one worker, call after
  // call when calls come back to back. Leaving it is safe: the guest runs its own deque before it
  // leaves, and a push that skipped the lent worker's wake-up is paid then (step 'Guest seat').
  // Exact: the guest takes its loan before its first push (seq_cst RMW, then a release store),
  // so once our look sees a push, the acquire fence makes the counts load below see the loan.
  // TSan models no fence, so its build leaves it out; no race depends on it, only whether the
  // worker computes beside the guest (x86 keeps the loads in order anyway).
  bool rescan_skips_guest() const noexcept {
    if (!holds_work(worker_count_)) return true;  // nothing pushed: nothing to take either
    if constexpr (!WSLAB_TSAN) std::atomic_thread_fence(std::memory_order_acquire);
    return parking_.caller_is_lent();
  }

  // Whether any deque (the guest seat's included; of a split deque, its shared part) or the
  // injector holds work. The injector's loads are seq_cst; the deques' are relaxed, after a
  // seq_cst fence: either way they come after the caller's RMW on the parking word in S, and a
  // push (or a split deque's share) ordered before them in S is seen. TSan
  // models no fence; its pushers do an RMW on that word instead, which the caller's RMW either
  // reads from (the push happens before our loads) or is read by (the pusher sees the loan).
  bool any_work_queued() noexcept {
    if (!injector_.empty()) return true;
    if constexpr (!WSLAB_TSAN) std::atomic_thread_fence(std::memory_order_seq_cst);
    return some_deque_holds_work();
  }

  // Whether any record's deques (the guest seat's included: empty unless a guest is seated) hold
  // work a thief could take. Relaxed loads: the callers order them, or take the answer as a hint.
  bool some_deque_holds_work() const noexcept {
    for (std::size_t i = 0; i <= worker_count_; ++i) {
      if (holds_work(i)) return true;
    }
    return false;
  }

  // Whether record i's deques hold work a thief could take (of its split deque, the shared part).
  // Relaxed loads: the callers order them.
  bool holds_work(std::size_t i) const noexcept {
    return !workers_[i].deque.empty() || !workers_[i].forks.nothing_shared() ||
           !workers_[i].frames.empty();
  }

  // The calling thread's record when it is `mark`'s home, else nullptr: one TLS load and a
  // compare, with no check of the pool, since the mark was made on one of this pool's workers.
  static WorkerState* at_home(const OwnWorkMark& mark) noexcept {
    WorkerContext* ctx = this_thread_context();  // &kNoWorker off the workers: no mark's home
    return ctx == mark.home ? static_cast<WorkerState*>(ctx) : nullptr;
  }

  // The record is published in the thread's context when its loop starts (before that, e.g. in
  // an on_worker_start hook, the thread counts as an outside one): one TLS load per lookup.
  WorkerState* current_worker() const noexcept {
    WorkerContext* ctx = worker_context_of(*this);
    return static_cast<WorkerState*>(ctx);
  }

  void worker_loop(std::size_t index) {
    WorkerState& me = workers_[index];
    this_thread_identity.state = &me;
    this_thread_worker = &me;
    for (;;) {
      Job* job = next_local(me);
      if (job == nullptr) {
        job = search(me);
        if (job == nullptr) break;  // drained: the pool is shutting down
        if (me.stole && knobs_.tiny_steal_ns != 0 &&
            (knobs_.time_stolen_forks || is_small_job(*job))) {
          if (!run_stolen(me, job)) return;
          continue;
        }
      }
      if (!run_on_worker(me, job)) return;  // the task destroyed the pool: `this` is gone
    }
    this_thread_worker = &kNoWorker;
  }

  // A task node or a task group's job (step 'Group jobs'): what a thief takes in batches (Step
  // 11), and times (Step 16) with step 'Tiny forks' off. Not a fork of join, usually its victim's
  // largest piece.
  static bool is_small_job(const Job& job) noexcept {
    return job.is_task_node() || GroupJob::is_group_job(job) || FrameJob::is_frame_job(job);
  }

  // The guest seat's record: the one after the workers'.
  WorkerState& guest_record() noexcept { return workers_[worker_count_]; }

  // How many deques a thief visits: the workers', and the guest seat's while a guest is seated (it
  // is empty otherwise: a guest empties it before it leaves). seq_cst: in a re-scan after
  // announcing, this load follows the announce in S like the deque loads; the guest set the flag
  // with an RMW before its first push, so a re-scan that could see the push sees the flag.
  std::size_t victim_count() const noexcept {
    return worker_count_ + (seat_.taken_seq_cst() ? 1 : 0);
  }

  // For a thread inside a task (try_run_one(), a joiner waiting for its thief): no batched
  // steals, see steal_from_others(). Out of line: the wait for a thief is the cold end of a fork,
  // and GCC, inlining this search into it, spent the inlining it would otherwise give the fork's
  // hot path (the classic benchmark's fib then lost its recursion's inlining into the join:
  // 5 more instructions per fork).
  [[gnu::noinline]] Job* find_any(WorkerState& me) {
    if (Job* job = next_local(me)) return job;
    return find_elsewhere(me, /*batch=*/false);
  }

  // The calling worker's own deque, and the injector when it is checked first or after local.
  [[gnu::always_inline]] Job* next_local(WorkerState& me) {
    if (knobs_.injector == SchedulerKnobs::Injector::first) {
      if (Job* job = pop_injector(me)) return job;
    }
    if (Job* job = pop_own(me)) return job;
    if (Job* job = pop_own_frame(me)) return job;
    if (knobs_.injector == SchedulerKnobs::Injector::after_local) return pop_injector(me);
    return nullptr;
  }

  // The newest frame on `me`'s frame deque (step 'Group frames'), copied into `me`'s FrameJob, or
  // nullptr. The owner's look first: a pop of an empty deque would store its bottom twice.
  Job* pop_own_frame(WorkerState& me) {
    if (me.frames.empty()) return nullptr;
    const FrameSlot* frame = me.frames.pop();
    if (frame == nullptr) return nullptr;
    me.frame_job.hold(*frame);
    return &me.frame_job;
  }

  [[gnu::always_inline]] Job* pop_own_lifo(WorkerState& me) {
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
    TaskJob* node = me.nodes.take_empty();
    // The node's task is empty: the popped one is moved in, with no move-assignment.
    if (!injector_.pop_with([node](Task&& task) noexcept { node->emplace(std::move(task)); })) {
      me.nodes.recycle(node);
      return nullptr;
    }
    me.counters->bump(Counter::global_pops);
    trace::event(trace::Event::global_pop);
    return node;
  }

  // Everything but the worker's own deque: the injector (unless it comes first, already
  // checked) and every other worker's deque, starting from a random victim.
  // `rescan`: the re-scan between announce() and park(), which leaves the guest's deque alone if
  // the caller is the sleeper lent to that guest (rescan_skips_guest()).
  Job* find_elsewhere(WorkerState& me, bool batch, bool rescan = false) {
    if (knobs_.injector != SchedulerKnobs::Injector::last) {
      if (Job* job = pop_injector(me)) return job;
    }
    if (Job* job = steal_from_others(me, batch, rescan)) return job;
    if (knobs_.injector == SchedulerKnobs::Injector::last) return pop_injector(me);
    return nullptr;
  }

  // Steals only inside a session of the steal gate, so that busy owners may pop without a fence
  // (steal_sessions.hpp). A batch only for a worker in its search loop, with no task on its
  // stack: a waiter's deque must hold nothing of a group below the group's mark, where the
  // waiter does not look (README.md, step 'Waits without help bounds'), and a batch would land
  // wherever the waiter's bottom happens to be.
  Job* steal_from_others(WorkerState& me, bool batch, bool rescan = false) {
    // Without a guest, a pool of one worker has no victim and opens no steal session.
    const std::size_t n = victim_count();
    if (n < 2) return nullptr;
    const std::size_t self = me.index;
    WorkerCounters& mine = *me.counters;
    const std::size_t start = me.next_random() % n;
    for (std::size_t k = 0; k < n; ++k) {
      const std::size_t victim = (start + k) % n;
      if (victim == self) continue;
      if (rescan && victim == worker_count_ && rescan_skips_guest()) continue;
      // Step 'Look first': nothing to take, no session. A look that misses a push is a steal that
      // found the deque empty a moment earlier; the parking protocol's re-scan is exact.
      if (knobs_.look_first && !holds_work(victim)) {
        mine.bump(Counter::failed_steals);
        continue;
      }
      sessions_.before_steals(me.session);
      // A fork first: the oldest shared one, usually the victim's largest piece of work.
      if (Job* job = workers_[victim].forks.steal()) {
        mine.bump(Counter::steals);
        trace::event(trace::Event::steal, static_cast<std::uint32_t>(victim));
        note_victim(me, victim);
        return job;
      }
      for (;;) {
        const StealResult<Job*> r = workers_[victim].deque.steal();
        if (r.outcome == StealOutcome::success) {
          mine.bump(Counter::steals);
          trace::event(trace::Event::steal, static_cast<std::uint32_t>(victim));
          if (batch && knobs_.steal_batch > 1 && is_small_job(*r.item)) steal_more(me, victim);
          note_victim(me, victim);
          return r.item;
        }
        mine.bump(Counter::failed_steals);
        trace::event(trace::Event::steal_failed, static_cast<std::uint32_t>(victim));
        // A lost race means the victim had work a moment ago: try it again.
        if (r.outcome == StealOutcome::empty) break;
      }
      // Then a group's frame (step 'Group frames'), copied into our FrameJob, and a batch as
      // for task nodes.
      for (;;) {
        const StealOutcome r = workers_[victim].frames.steal(me.frame_job.slot());
        if (r == StealOutcome::success) {
          mine.bump(Counter::steals);
          trace::event(trace::Event::steal, static_cast<std::uint32_t>(victim));
          if (batch && knobs_.steal_batch > 1) steal_more_frames(me, victim);
          note_victim(me, victim);
          return &me.frame_job;
        }
        if (r == StealOutcome::empty) break;
        mine.bump(Counter::failed_steals);
      }
    }
    return nullptr;
  }

  // Step 'Tiny steals': whom a worker's search stole from, for the timing of what it stole. A new
  // victim starts a new count of tiny jobs in a row.
  static void note_victim(WorkerState& me, std::size_t victim) noexcept {
    if (me.tiny_victim != victim + 1) {
      me.tiny_in_a_row = 0;
      me.tiny_pauses_in_full.store(0, std::memory_order_relaxed);
    }
    me.tiny_victim = victim + 1;
    me.stole = true;
  }

  // After a thief's first steal from `victim` (README.md, step 'Batched steals'): while the victim
  // still holds at least two jobs, take about half of them, up to steal_batch in all, onto our own
  // deque. Each is an ordinary steal, so the deque's proof covers it; the gain is that the thief
  // then runs them from its own deque, and for a while neither fights the owner for the deque's
  // top line nor keeps a steal session open. Only task nodes start a batch: a join's job is
  // usually the victim's oldest and largest piece, one is enough. A join job that comes along
  // waits on our deque like the rest (its joiner helps, and steals it back if it must).
  [[gnu::noinline]] void steal_more(WorkerState& me, std::size_t victim) {
    auto& from = workers_[victim].deque;
    const std::int64_t want = batch_rest(me.deque, from);
    WorkerCounters& mine = *me.counters;
    for (std::int64_t taken = 0; taken < want;) {
      const StealResult<Job*> r = from.steal();
      if (r.outcome == StealOutcome::empty) break;
      if (r.outcome == StealOutcome::lost_race) continue;
      push_own(me, r.item);
      mine.bump(Counter::steals);
      ++taken;
    }
  }

  // How many more jobs a batch takes from `theirs` onto `mine`, the thief's deque of the same kind:
  // about half of what the victim holds, up to steal_batch in all, and only what `mine` holds
  // without growing (a push must not throw here, with the jobs already taken).
  template <class Deque>
  std::int64_t batch_rest(const Deque& mine, const Deque& theirs) const noexcept {
    const std::int64_t room = static_cast<std::int64_t>(mine.capacity()) - mine.size() - 1;
    return std::min({std::int64_t{knobs_.steal_batch} - 1, theirs.size() / 2, room});
  }

  // steal_more() for frames: onto our own frame deque, copied.
  [[gnu::noinline]] void steal_more_frames(WorkerState& me, std::size_t victim) {
    auto& from = workers_[victim].frames;
    const std::int64_t want = batch_rest(me.frames, from);
    WorkerCounters& mine = *me.counters;
    FrameSlot frame;
    for (std::int64_t taken = 0; taken < want;) {
      const StealOutcome r = from.steal(frame);
      if (r == StealOutcome::empty) break;
      if (r == StealOutcome::lost_race) continue;
      me.frames.push(frame);
      mine.bump(Counter::steals);
      ++taken;
    }
  }

  // One steal session per call: an outside thread steals rarely. Opening one costs a heavy fence,
  // so it looks first (Step 'Look first').
  Job* steal_from_outside(FrameJob& frame) {
    if (knobs_.look_first && !some_deque_holds_work()) return nullptr;
    sessions_.open_once();
    Job* found = nullptr;
    const std::size_t n = victim_count();
    for (std::size_t v = 0; v < n && found == nullptr; ++v) {
      if ((found = workers_[v].forks.steal()) != nullptr) break;
      for (;;) {
        const StealResult<Job*> r = workers_[v].deque.steal();
        if (r.outcome == StealOutcome::success) found = r.item;
        if (r.outcome != StealOutcome::lost_race) break;
      }
      while (found == nullptr) {
        const StealOutcome r = workers_[v].frames.steal(frame.slot());
        if (r == StealOutcome::success) found = &frame;
        if (r != StealOutcome::lost_race) break;
      }
    }
    sessions_.close_once();
    return found;
  }

  // ---- Step 'Tiny steals' ----
  //
  // A stolen job moves its node, its deque slot and the victim's indices from one core to the
  // other, and costs the victim a fence on every pop while the thief's steal session is open: some
  // hundred nanoseconds of cache-line transfers, more than a tiny task is worth. A thief that
  // steals a stream of such tasks from an owner busy running the same stream slows both (on the
  // spawn-many benchmarks of empty tasks, two workers that steal whatever they find take two to
  // three times as long per task as one). So a worker times the task nodes it steals, and once
  // kTinyInARow of them in a row each ran in under tiny_steal_ns, it leaves the victim alone
  // (leave_tiny_tasks()).
  static constexpr std::uint32_t kTinyInARow = 4;

  // Runs a job the search stole, timed: a task node, a task group's job or frame, and (step 'Tiny
  // forks') a fork. Returns what run_on_worker() returns. A recursion's stolen fork is its
  // victim's oldest shared one, usually its largest piece, which never counts as tiny; the
  // children of one co_join are many siblings, each as small as a spawned task.
  [[gnu::noinline]] bool run_stolen(WorkerState& me, Job* job) {
    const auto start = std::chrono::steady_clock::now();
    if (!run_on_worker(me, job)) return false;  // the job destroyed the pool: `this` is gone
    const auto took = std::chrono::steady_clock::now() - start;
    if (took < std::chrono::nanoseconds(knobs_.tiny_steal_ns)) {
      ++me.tiny_in_a_row;
    } else {
      me.tiny_in_a_row = 0;
      // The victim's work grew: pauses start short again.
      me.tiny_pauses_in_full.store(0, std::memory_order_relaxed);
    }
    return true;
  }

  // The pause, at the start of a search after kTinyInARow tiny steals: up to tiny_steal_pause_us,
  // asleep in naps of kPauseNap, and only while the victim keeps working through its deque and
  // nobody else has work. It ends early when the victim's deque stands still for
  // tiny_steal_still_us with work in it (the victim is blocked, or busy with one long job, and its
  // queued work needs another worker: a pool of several workers still runs the partner of a
  // blocked task, that much later; step 'Idle gaps' below), when external work arrives in the
  // injector or another worker's deque holds some, or when the pool shuts down. Asleep, not
  // spinning: the thief has nothing worth a CPU, and a spinning one slows the victim wherever the
  // two share a core's resources. Before it sleeps, the worker pays what it owes the ledger (a
  // wait_idle() must not wait for the pause) and ends its steal session. Lingering (the default),
  // the session stays open, idle (steal_sessions.hpp), until the victim, busy with its own work,
  // closes it within kLinger jobs of its own; the victim then pops without fences. Without
  // lingering it closes at once.
  //
  // Step 'Doubling pauses': a pause that ran its whole length, when the thief's next steals from
  // the same victim are tiny again, is followed by one twice as long, up to 2^tiny_steal_doublings
  // times the knob; a stolen job that is not tiny, or another victim, starts again from the knob.
  // With a fixed length, a victim that runs tiny tasks for long pays for every pause's end: up to
  // 64 of its tasks moved (kTinyInARow steals, each batched), pops that fence while the thief's
  // session is open, and an interrupt from the thief's membarrier() when the victim closed the
  // idle session meanwhile. Doubling keeps the thief's cost per victim logarithmic in the time the
  // victim runs tiny tasks, and the delay before a victim whose tasks grew gets help at most the
  // knob plus the time already paused on it: each pause is at most the sum of those before it plus
  // one knob. The naps double with the pause, up to 8 times kPauseNap: each costs the sleeping
  // thief a wake-up (at 20 us naps, about a tenth of a CPU in all on the two-thread spawn-many
  // cells: stage5_spawn_bench's `cpus`), and a victim that blocks after the thief has paused that
  // long on its tiny tasks waits for the check a few naps longer.
  //
  // Step 'Remembered pauses': any other end of a pause (the victim stood still, work elsewhere)
  // keeps the length it has grown to, and so does a thief that parks; without the step they too
  // start again from the knob. A program that runs rounds of tiny tasks and lets the pool drain
  // between them (spawn, then wait_idle(), round after round) would otherwise keep the thief in its
  // first, short pause with its 20 us naps, waking inside most rounds to come back and steal; the
  // remembered count keeps its naps long too, which is where those rounds gain (README.md). The
  // bound above still holds, counted since the thief last stole a job that was not tiny from this
  // victim.
  //
  // Step 'Growing owners': the owner's longest stall while it works is the growth of its deque
  // (push_own()), which it announces, and a pause counts an owner that is growing as working.
  //
  // Step 'Idle gaps': a victim that stands still ends the pause only while it holds work a thief
  // could take (holds_work(): its Chase-Lev deque, its shared forks, its frames). A blocked
  // victim's partner is such work, so the exit still rescues it; a victim with nothing queued
  // (between two rounds of its tiny tasks, or in one long job) needs no thief, and a thief that
  // left its pause there came back at the next round to steal kTinyInARow more tiny jobs before it
  // paused again, every round.
  static constexpr std::chrono::microseconds kPauseNap{20};
  static constexpr std::uint32_t kMaxNapDoublings = 3;
  [[gnu::noinline]] void leave_tiny_tasks(WorkerState& me) {
    me.tiny_in_a_row = 0;
    // Step 'Remembered pauses': kept whatever ends this pause; without it, zero unless this pause
    // runs its whole length (below).
    const std::uint32_t in_full = me.tiny_pauses_in_full.load(std::memory_order_relaxed);
    if (!knobs_.remembered_pauses) me.tiny_pauses_in_full.store(0, std::memory_order_relaxed);
    const std::size_t victim = me.tiny_victim - 1;
    if (victim >= victim_count()) return;
    const auto& theirs = workers_[victim].deque;
    const auto& their_frames = workers_[victim].frames;
    const auto& their_forks = workers_[victim].forks;
    settle_retirements(me);
    sessions_.end(me.session);
    // At most 2^20 times the knob, whatever the knob says: the shift below stays in range.
    const std::uint32_t doublings =
        std::min({in_full, knobs_.tiny_steal_doublings, std::uint32_t{20}});
    const auto start = std::chrono::steady_clock::now();
    const auto until =
        start + std::chrono::microseconds(std::uint64_t{knobs_.tiny_steal_pause_us} << doublings);
    const auto still = std::chrono::microseconds(knobs_.tiny_steal_still_us);
    auto last_change = start;
    // What changes while the victim works through its queued jobs: the sizes of its deques, and
    // (step 'Tiny forks') the bounds of its split deque's shared part, which a victim running its
    // forks moves as it shares them and takes them back.
    const bool forks_too = knobs_.time_stolen_forks;
    auto queued = [&] {
      return std::pair{theirs.size() + their_frames.size(),
                       forks_too ? their_forks.shared_bounds() : 0};
    };
    auto seen = queued();
    const auto nap = kPauseNap * (1u << std::min(doublings, kMaxNapDoublings));
    for (;;) {
      std::this_thread::sleep_for(nap);
      const auto now = std::chrono::steady_clock::now();
      if (now >= until) {
        me.tiny_pauses_in_full.store(doublings + 1, std::memory_order_relaxed);
        return;
      }
      if (ledger_.stopping() || work_beside(me.index, victim)) return;
      const auto now_queued = queued();
      if (now_queued != seen) {
        seen = now_queued;
        last_change = now;
      } else if (knobs_.growing_owners &&
                 workers_[victim].growing.load(std::memory_order_relaxed)) {
        last_change = now;  // step 'Growing owners': its owner is busy growing it
      } else if (now - last_change >= still && (!knobs_.pause_through_idle || holds_work(victim))) {
        return;  // the victim stands still with work a thief could take: it needs us
      }
    }
  }

  // Whether the injector, or a deque of a worker other than `me` and `victim` (the guest seat's
  // included), holds work a thief could take. Relaxed loads: a hint for the pause above.
  bool work_beside(std::size_t me, std::size_t victim) noexcept {
    if (!injector_.empty()) return true;
    const std::size_t n = victim_count();
    for (std::size_t i = 0; i < n; ++i) {
      if (i != me && i != victim && holds_work(i)) return true;
    }
    return false;
  }

  // Out of local work: scan, spin with backoff, then park. Returns nullptr once drained.
  Job* search(WorkerState& me) {
    if (me.tiny_in_a_row >= kTinyInARow) leave_tiny_tasks(me);
    me.stole = false;
    // A few quick scans before anything else (about a microsecond in all; README.md, step 'Quick
    // scans'). If one finds work we stay busy: the retirements we owe can still cancel against
    // the admissions of what we spawn next, and we touch neither shared word (the parking
    // counts, the ledger's count), which an outside thread feeding the injector task by task
    // reads or writes on every submission. Not yet counted as a searcher, we suppress no
    // pusher's wake-up, so we owe no hand-on either (README.md, step 'Parking').
    for (std::uint32_t round = 0; round < knobs_.quick_scans; ++round) {
      // A guest works in a worker's place: no scans, straight to the search loop, which parks.
      if (parking_.should_park_for_loan()) break;
      if (Job* job = find_elsewhere(me, /*batch=*/true)) return job;
      search_backoff(round);
    }
    parking_.begin_search();
    settle_retirements(me);
    for (;;) {
      for (std::uint32_t round = 0; round < knobs_.spin_rounds; ++round) {
        if (parking_.should_park_for_loan()) break;  // a guest works in our place: park now
        if (Job* job = find_elsewhere(me, /*batch=*/true)) {
          parking_.found_work();
          return job;
        }
        if (ledger_.drained()) {
          sessions_.end(me.session);
          parking_.end_search();
          return nullptr;
        }
        search_backoff(round);
      }
      // Step 'Doubling pauses': the pool ran dry, and its next tiny tasks start a new phase of the
      // program, unless step 'Remembered pauses' keeps the length the pauses have grown to. Before
      // announce(): once a test sees every worker asleep, this is done.
      if (!knobs_.remembered_pauses) me.tiny_pauses_in_full.store(0, std::memory_order_relaxed);
      const ParkingLot::Ticket ticket = parking_.announce();
      // The re-scan after announcing: see README.md, step 'Parking'.
      if (Job* job = find_elsewhere(me, /*batch=*/true, /*rescan=*/true)) {
        parking_.cancel_park();
        parking_.found_work();
        return job;
      }
      if (ledger_.drained()) {
        sessions_.end(me.session);
        parking_.cancel_park();
        parking_.end_search();
        return nullptr;
      }
      sessions_.end(me.session);  // a sleeping worker must not hold a session for itself
      me.counters->bump(Counter::parks);
      trace::event(trace::Event::park_begin);
      // A worker asleep for kIdleAfter frees the depot's nodes: the pool has gone idle, and its
      // last backlog's memory goes back (README.md, step 'Node depot'); so do its frame deque's
      // large buffers (step 'Frames given back'): asleep, it is their owner and pushes nothing.
      parking_.park(ticket, kIdleAfter, [this, &me] {
        give_back_frames(me);
        depot_.release_all();
        small_depot_.release_all();
      });
      trace::event(trace::Event::park_end);
    }
  }

  // Step 'Frames given back': `me`'s frame deque, empty (its owner is asleep), returns to its
  // first capacity and frees the buffers it grew out of, unless a thief may still be copying from
  // one (then the next idle time frees them). The next push past the first capacity looks at the
  // room again.
  void give_back_frames(WorkerState& me) {
    if (!knobs_.give_back_frames) return;
    me.frames.give_back(knobs_.deque_capacity);
    me.frame_grow_check_at = me.frames.bottom_index();
  }

  // Calls its body: how the worker loop runs a task.
  struct RunHere {
    template <class Body>
    [[gnu::always_inline]] void operator()(Body&& body) const {
      body();
    }
  };

  // For every job a worker runs and every pop of its Chase-Lev deque: the work that an open steal
  // session makes fence (Step 3, and step 'Forks off the count'). After kLinger of them without a
  // steal, the worker closes its own session and the idle ones; if sessions of other threads are
  // still open, it asks them to close too (close_forkers_sessions()).
  [[gnu::always_inline]] void note_busy(WorkerState& me) noexcept {
    if (sessions_.note_busy(me.session)) [[unlikely]]
      close_forkers_sessions(me);
  }
  // A thief whose session is open and that now only forks (its stolen job recurses by join) would
  // otherwise keep it open as long as it forks: its take-backs count nothing. Its next take-back
  // closes it instead (LocalQueue::reclaim_fork()). A relaxed load per worker and a relaxed store
  // per session holder, once per kLinger jobs of a busy owner; a holder that is still stealing
  // opens a new session, at most once per such ask, the rent-or-buy of Step 3. A load that misses
  // a session just opened leaves it to the next ask.
  [[gnu::noinline]] void close_forkers_sessions(const WorkerState& me) noexcept {
    for (std::uint32_t i = 0; i <= worker_count_; ++i) {  // the guest seat's record too
      WorkerState& other = workers_[i];
      if (&other != &me && other.session.open.load(std::memory_order_relaxed)) other.forks.trip();
    }
  }

  // Returns false when the job destroyed the pool (the worker must return without touching it).
  // A task node's task runs through around(body); a group job runs `elsewhere` (only a waiter's
  // loop, run_own_above(), runs one `here`). Inlined into every caller: it is most of the
  // per-task path.
  template <class Around = RunHere>
  [[gnu::always_inline]] bool run_on_worker(WorkerState& me, Job* job, Around&& around = {}) {
    note_busy(me);
    me.counters->bump(Counter::tasks_executed);
    return run_counted(me, job, around);
  }
  // run_on_worker() once the job is counted.
  template <class Around>
  [[gnu::always_inline]] bool run_counted(WorkerState& me, Job* job, Around&& around) {
    if (!job->is_task_node()) {
      if (GroupJob::is_group_job(*job)) {
        return run_group_job(me, static_cast<GroupJob*>(job), GroupJob::Ran::elsewhere, nullptr,
                             around);
      }
      job->execute();
      return !this_thread_identity.orphaned;
    }
    auto* node = static_cast<TaskJob*>(job);
    std::exception_ptr escaped;
    ++me.tasks_running;
    if constexpr (std::is_same_v<std::decay_t<Around>, RunHere>) {
      invoke_task(node->task, escaped);
    } else {
      try {
        around([&] { invoke_task(node->task, escaped); });
      } catch (...) {  // no fresh stack for it (stack_room.hpp): the task has not run
        --me.tasks_running;
        throw;
      }
    }
    if (destroyed_its_pool(node, escaped)) return false;  // `me` is gone with the pool
    --me.tasks_running;
    retire_node(me, node, std::move(escaped));
    return true;
  }

  // After a task node's task ran: true, with the node freed, when the task destroyed the pool.
  // Static, and asked before any member call: the pool may be gone.
  static bool destroyed_its_pool(TaskJob* node, const std::exception_ptr& escaped) noexcept {
    if (!pool_destroyed_by_last_task(escaped)) return false;
    delete node;
    return true;
  }

  // A task node's bookkeeping after its task ran (and did not destroy the pool).
  [[gnu::always_inline]] void retire_node(WorkerState& me, TaskJob* node,
                                          std::exception_ptr&& escaped) {
    me.nodes.recycle(node);
    if (escaped) {
      // Rare: record and retire at once, through the ledger's own path.
      if (ledger_.complete(std::move(escaped))) parking_.notify_all();
    } else {
      retire_one(me);
    }
  }

  // One task that worker `me` ran (or failed to queue after admitting it) is finished: owed with
  // the worker's other retirements; every sleeper is woken if that drained the ledger.
  [[gnu::always_inline]] void retire_one(WorkerState& me) noexcept {
    if (me.retirements.retire(ledger_)) parking_.notify_all();
  }

  void settle_retirements(WorkerState& me) noexcept {
    if (me.retirements.settle(ledger_)) parking_.notify_all();
  }

  void destroy_workers() noexcept {
    if (workers_ == nullptr) return;
    for (std::size_t i = 0; i < record_count_; ++i)
      workers_[i].~WorkerState();
    ::operator delete(workers_, std::align_val_t{alignof(WorkerState)});
    workers_ = nullptr;
  }

  SchedulerKnobs knobs_;
  const bool group_frames_on_ = knobs_.group_jobs && knobs_.group_frames;  // Step 28 needs 17
  // worker_count_ workers, then the guest seat; contiguous, each on lines of its own (worker.hpp).
  WorkerState* workers_ = nullptr;
  std::size_t record_count_ = 0;  // records constructed so far
  std::size_t worker_count_ = 0;
  SeatFlag seat_;
  WorkerCounters guest_counters_;
  NodeDepot depot_;            // outlives the workers' caches, which spill into it
  SmallJobDepot small_depot_;  // the same for small group jobs' blocks
  // 128 slots (10 KB) per segment: one allocation and one segment switch per 128 external
  // submissions rather than per 32.
  InjectorQueue<Task, 128> injector_;
  ParkingLot parking_;
  StealSessions sessions_;
  TaskLedger ledger_;
  WaitPoll wait_poll_{knobs_.adaptive_wait};
  std::vector<WorkerCounters> counters_;  // one per worker, each on its own cache line
  SharedCounter run_outside_;
  WorkerThreads threads_;  // last member: threads start after everything they use exists
};

static_assert(WorkerQueue<Scheduler::LocalQueue>);

}  // namespace wslab::sched

namespace wslab {
using sched::Job;
using sched::Scheduler;
using sched::SchedulerKnobs;
}  // namespace wslab
