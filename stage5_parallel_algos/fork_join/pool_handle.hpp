// The one seam between fork-join and the pools it runs on. join, TaskGroup and the algorithms
// reach a pool through one handle type, PoolHandle, which models ForkJoinPool and is resolved
// once per call by fork_join_handle(): on the stage-5 scheduler it forwards to the scheduler's
// own handle, Scheduler::ForkJoinHandle; on every other IThreadPool (stages 1-4, the lab's pools)
// it answers for a pool that lends fork-join nothing. Each algorithm, join and TaskGroup has one
// code path; how pools differ is what the handle answers: a worker's own deque or none, a guest
// seat or none, timed leaves or not, and whether the pool marks a task group's callables where
// its waiter can find them.
#pragma once

#include <array>
#include <atomic>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "../../common/thread_pool.hpp"
#include "../../common/worker_identity.hpp"
#include "../scheduler/port.hpp"
#include "claimable_job.hpp"
#include "group_call_list.hpp"
#include "stack_room.hpp"

namespace wslab {

namespace detail {
// Stand-ins for the callables fork-join passes to with_worker_queue(), for the concept below.
struct QueueProbe {
  template <sched::WorkerQueue Q>
  bool operator()(Q) const noexcept {
    return true;
  }
};
struct NoQueueProbe {
  bool operator()() const noexcept { return false; }
};
struct CallProbe {
  void operator()() const noexcept {}
};
struct MakeCallProbe {
  CallProbe operator()() const noexcept { return {}; }
};
struct AroundProbe {
  template <class Body>
  void operator()(Body&& body) const {
    body();
  }
};
}  // namespace detail

// What fork-join asks of a pool. A handle is a pointer or two, copied into every fork and valid
// while the pool lives; it may be used from any thread (what concerns the calling thread is
// looked up when asked).
template <class H>
concept ForkJoinPool = std::copyable<H> && requires(const H h) {
  // The pool behind the handle, for what every pool offers (submit, try_run_one, its lifetime).
  { h.pool() } noexcept -> std::same_as<IThreadPool&>;
  { h.thread_count() } noexcept -> std::same_as<std::size_t>;
  // with_worker_queue(on_worker, otherwise): on_worker(queue) with the calling thread's own
  // deque, a sched::WorkerQueue, when the thread works for this pool and the pool lends its
  // deques to fork-join; otherwise() when not. Either's result.
  { h.with_worker_queue(detail::QueueProbe{}, detail::NoQueueProbe{}) } -> std::same_as<bool>;
  // For a join from outside the pool: a seat among its workers (empty when there is none), and
  // whether a join that finds none is handed to a worker as one task, where its nested joins
  // find a worker's deque, rather than forked from here.
  { h.try_seat_guest() } noexcept -> std::same_as<sched::GuestSeat>;
  { h.hands_outside_joins_to_workers() } noexcept -> std::same_as<bool>;
  // Whether every worker is busy (none sleeps or searches): only then does a caller outside the
  // pool take back work it handed to the workers and that none has started.
  { h.every_worker_busy() } noexcept -> std::same_as<bool>;
  // Whether the range algorithms with the automatic grain cut timed leaves
  // (algorithms/range_splitter.hpp).
  { h.timed_leaves() } noexcept -> std::same_as<bool>;
  // A waiter's own work, where the pool keeps it on the waiting worker's deque (GroupWork below;
  // sched::OwnWorkMark): own_work_mark() makes a mark homed on the calling thread's worker (on
  // none where the pool keeps no marks); try_spawn_marked(mark, make_call) queues the callable
  // make_call() returns as a task of the pool, lowering the mark when the calling thread is its
  // home, and returns true, or returns false without calling make_call where the pool keeps no
  // marks (the calling thread is not a worker with a deque, or the pool has none);
  // run_own_above(mark, around) runs on the calling thread, its body through around(body), one job
  // the mark's home pushed at or above the mark, and returns false when there is none (or the
  // calling thread is not the home).
  { h.own_work_mark() } noexcept -> std::same_as<sched::OwnWorkMark>;
  {
    h.try_spawn_marked(std::declval<sched::OwnWorkMark&>(), std::declval<detail::MakeCallProbe&>())
  } -> std::same_as<bool>;
  {
    h.run_own_above(std::declval<const sched::OwnWorkMark&>(), detail::AroundProbe{})
  } -> std::same_as<bool>;
  // A coroutine join's children (coro/co_join.hpp): task_job_run() starts a join's run on the
  // calling worker (sched::Scheduler::TaskJobRun: it pushes jobs that run themselves, counted as
  // tasks of the pool, and takes them back), empty off the stage-5 scheduler's workers; a job
  // that a thief ran calls retire_task_job() as its last touch of the pool.
  { h.task_job_run() } noexcept -> std::same_as<sched::Scheduler::TaskJobRun>;
  { h.retire_task_job() } noexcept;
};

// The handle fork-join uses on every pool: the pool, and the stage-5 scheduler behind it, or
// nullptr for every other IThreadPool (stages 1-4, the lab's pools). Those lend no deque to
// fork-join and have no guest seat, no timed leaves and no marks for a group's callables: join
// boxes its forked half on the heap (fork_join/join.hpp), and a task group lists its callables
// (GroupWork below). One type for both kinds of pool, so that join, TaskGroup and each algorithm
// are compiled once, not once per kind: where the kinds differ it is a branch on the scheduler
// pointer, outside the fork's own push and pop, and known to be taken where the handle was made
// on one of the scheduler's workers.
class PoolHandle {
 public:
  // `scheduler` is `pool` as the stage-5 scheduler, or nullptr when it is another pool.
  PoolHandle(IThreadPool& pool, sched::Scheduler* scheduler) noexcept
      : pool_(&pool), scheduler_(scheduler) {}

  IThreadPool& pool() const noexcept { return *pool_; }
  std::size_t thread_count() const noexcept {
    return scheduler_ != nullptr ? on_scheduler().thread_count() : pool_->thread_count();
  }
  template <class OnWorker, class Otherwise>
  [[gnu::always_inline]] decltype(auto) with_worker_queue(OnWorker&& on_worker,
                                                          Otherwise&& otherwise) const {
    if (scheduler_ != nullptr) [[likely]] {
      return on_scheduler().with_worker_queue(std::forward<OnWorker>(on_worker),
                                              std::forward<Otherwise>(otherwise));
    }
    return otherwise();
  }
  sched::GuestSeat try_seat_guest() const noexcept {
    return scheduler_ != nullptr ? on_scheduler().try_seat_guest() : sched::GuestSeat{};
  }
  bool hands_outside_joins_to_workers() const noexcept {
    return scheduler_ != nullptr && on_scheduler().hands_outside_joins_to_workers();
  }
  bool every_worker_busy() const noexcept {
    return scheduler_ == nullptr || on_scheduler().every_worker_busy();
  }
  bool timed_leaves() const noexcept {
    return scheduler_ != nullptr && on_scheduler().timed_leaves();
  }
  sched::OwnWorkMark own_work_mark() const noexcept {
    return scheduler_ != nullptr ? on_scheduler().own_work_mark() : sched::OwnWorkMark{};
  }
  template <class MakeCall>
  bool try_spawn_marked(sched::OwnWorkMark& mark, MakeCall& make_call) const {
    return scheduler_ != nullptr && on_scheduler().try_spawn_marked(mark, make_call);
  }
  template <class Around>
  bool run_own_above(const sched::OwnWorkMark& mark, Around&& around) const {
    return scheduler_ != nullptr &&
           on_scheduler().run_own_above(mark, std::forward<Around>(around));
  }
  // A mark that allows group jobs was made on one of the scheduler's workers.
  template <std::size_t Bytes, std::size_t Align, class Build>
  [[gnu::always_inline]] bool try_push_group_job(sched::OwnWorkMark& mark, Build& build) const {
    return mark.group_jobs && on_scheduler().template try_push_group_job<Bytes, Align>(mark, build);
  }
  // Only by the mark's frame home, a worker of the scheduler (the caller looks:
  // GroupWork::try_push_group_frame()).
  template <class Count, class MakeWords>
  [[gnu::always_inline]] bool try_push_group_frame(sched::OwnWorkMark& mark, Count& count,
                                                   MakeWords& make_words) const {
    return on_scheduler().try_push_group_frame(mark, count, make_words);
  }
  sched::Scheduler::TaskJobRun task_job_run() const noexcept {
    return scheduler_ != nullptr ? on_scheduler().task_job_run() : sched::Scheduler::TaskJobRun{};
  }
  // Only for a job of a TaskJobRun, so on the scheduler.
  void retire_task_job() const noexcept { on_scheduler().retire_task_job(); }

 private:
  sched::Scheduler::ForkJoinHandle on_scheduler() const noexcept {
    return sched::Scheduler::ForkJoinHandle(*scheduler_);
  }

  IThreadPool* pool_;
  sched::Scheduler* scheduler_;
};

namespace detail {
// From a thread that does not work for `pool`: once per call, so a cast is affordable.
inline PoolHandle handle_from_outside(IThreadPool& pool) noexcept {
  sched::Scheduler* scheduler = nullptr;
  if (sched::fork_join_host(pool) != nullptr) scheduler = &static_cast<sched::Scheduler&>(pool);
  return PoolHandle(pool, scheduler);
}

template <class F>
[[gnu::noinline]] decltype(auto) with_pool_from_outside(IThreadPool& pool, F& f) {
  return f(handle_from_outside(pool));
}
}  // namespace detail

static_assert(ForkJoinPool<sched::Scheduler::ForkJoinHandle>);
static_assert(ForkJoinPool<PoolHandle>);

// `pool`'s handle. On a worker of the scheduler (the hot case: a join inside a join) one TLS
// load, one compare and a branch.
[[gnu::always_inline]] inline PoolHandle fork_join_handle(IThreadPool& pool) noexcept {
  if (sched::worker_context_of(pool) != nullptr) [[likely]] {
    return PoolHandle(pool, &static_cast<sched::Scheduler&>(pool));
  }
  return detail::handle_from_outside(pool);
}

// f(handle) with `pool`'s handle. The worker's case calls f on its own, with a handle the compiler
// knows to be the scheduler's, so that no fork in it tests which kind of pool it is on; the other
// case is out of line (the same f, not another instantiation).
template <class F>
[[gnu::always_inline]] inline decltype(auto) with_fork_join_pool(IThreadPool& pool, F&& f) {
  if (sched::worker_context_of(pool) != nullptr) [[likely]] {
    return f(PoolHandle(pool, &static_cast<sched::Scheduler&>(pool)));
  }
  return detail::with_pool_from_outside(pool, f);
}

// What a TaskGroup keeps to queue its callables and to run its unstarted ones itself, on any
// handle. A waiter may always run its own unstarted work, wherever it is queued, so every
// callable stays within reach of the group's waiter:
//   - where the pool keeps it on the waiting worker's deque (the scheduler, run() on the worker
//     that waits), it lies at or above the group's mark (sched::OwnWorkMark), and the waiter pops
//     it from there with run_own_above(): newest first, along with anything else pushed above the
//     mark, which frames the waiter called left there for it (README.md, step 'Waits without
//     help bounds');
//   - anywhere else (a pool that knows nothing of groups; the scheduler's injector, where the
//     submissions of threads outside its workers go) it is a claimable job the group lists
//     (group_call_list.hpp), and the waiter claims it from the list.
// A callable it cannot reach (on another worker's deque: added to the group by a callable that
// runs there, or stolen) is in the hands of a thread that runs it once its own later frames
// finish, which by the same rule never wait for anything they cannot get done.
template <ForkJoinPool Handle>
class GroupWork {
 public:
  // The mark is homed on the thread that makes the group, which usually waits for it. The group
  // (of which this is a member) queues group jobs (README.md, step 'Group jobs') and frames (step
  // 'Group frames') where the pool's mark allows them: from that thread, when it is a worker of
  // the scheduler with the step on. A group on the heap or in a coroutine's frame may be waited
  // for on another thread; its count allows that (TaskGroup::holds_jobs_not_handed_in()).
  explicit GroupWork(Handle handle) noexcept : handle_(handle), mark_(handle.own_work_mark()) {}
  GroupWork(const GroupWork&) = delete;
  GroupWork& operator=(const GroupWork&) = delete;
  [[gnu::always_inline]] ~GroupWork() {
    if (GroupCallList* list = listed_.load(std::memory_order_acquire)) [[unlikely]]
      delete list;
  }

  // Queues the callable make_call() returns (it reports to its group itself), or throws, and
  // then it never runs. The callable is built only once its place is known: on a worker straight
  // into its task node, with nothing on the stack in between.
  template <class MakeCall>
  void spawn(MakeCall&& make_call) {
    if (handle_.try_spawn_marked(mark_, make_call)) return;
    spawn_listed(make_call);
  }

  // Runs one unstarted callable of the group on the calling thread (or a job above the mark); false
  // when it finds none. Listed ones first (they are ours, and the claim decides who runs them),
  // then the top of the worker's deque while it lies above the mark, on a fresh stack when this
  // one is nearly full (the recursion is the program's own). None once the pool is gone or
  // refusing (!pool_usable): it ran, or runs, everything queued.
  bool run_own(bool pool_usable) {
    if (run_listed()) return true;
    if (!pool_usable) return false;
    return run_own_on_home();
  }

  // run_own() without the listed callables, on the worker that made the group: the waiter's first
  // step, when all of its work is usually on its own deque.
  // Every task the loop runs starts at this depth, so one look at the stack serves them all: with
  // room, the loop calls each directly; nearly full, each moves to a fresh stack.
  bool run_own_on_home() {
    if (!stack_nearly_full()) [[likely]]
      return handle_.run_own_above(mark_, [](auto&& body) { body(); });
    return handle_.run_own_above(mark_, [](auto&& body) { with_stack_room(body); });
  }

  // True when the group was made on one of a scheduler's workers (the mark's home): answered
  // from the group alone, without a look at the pool.
  bool homed_on_a_worker() const noexcept { return mark_.home != nullptr; }
  // True when the waiter (the thread that made the group) is outside the scheduler's workers
  // and does not continue a blocked worker's work (stack_room.hpp): its callables then wait,
  // listed, in the injector, and it leaves them to the workers (TaskGroup::wait_beside_workers())
  // so that the pool computes on as many CPUs as it has workers.
  bool waits_outside_workers() const noexcept {
    return !homed_on_a_worker() && handle_.hands_outside_joins_to_workers() &&
           !stands_in_for_a_worker_of(handle_.pool());
  }
  // Listed callables started so far, whether one runs now, and one run here (false when none
  // is unstarted).
  std::size_t listed_started() const noexcept {
    const GroupCallList* list = listed_.load(std::memory_order_acquire);
    return list != nullptr ? list->started() : 0;
  }
  bool listed_running() {
    GroupCallList* list = listed_.load(std::memory_order_acquire);
    return list != nullptr && list->one_running();
  }
  bool every_worker_busy() const noexcept { return handle_.every_worker_busy(); }
  bool run_listed() {
    GroupCallList* list = listed_.load(std::memory_order_acquire);
    return list != nullptr && list->run_own(handle_.pool());
  }

  // Which wait is this group's own, for its group jobs: the scheduler's loop for a wait names its
  // mark (GroupJob::run()).
  const void* own_wait() const noexcept { return &mark_; }

  // After a wait: what the next round pushes sets the mark afresh.
  void round_over() noexcept {
    mark_.low = sched::OwnWorkMark::kNone;
    mark_.frame_low = sched::OwnWorkMark::kNone;
    if (mark_.frames_full) {  // a cap reached is for one round
      mark_.frames_full = false;
      mark_.frame_home = mark_.home;
    }
  }

  // A callable as a group job of `Bytes` bytes, on the home worker: build(memory) constructs it
  // (see the scheduler's ForkJoinHandle). False, with nothing called, elsewhere.
  template <std::size_t Bytes, std::size_t Align, class Build>
  [[gnu::always_inline]] bool try_push_group_job(Build& build) {
    return handle_.template try_push_group_job<Bytes, Align>(mark_, build);
  }
  // A callable as a frame's words, make_words(), on the home worker while the mark allows frames
  // (the step is on, the group was made on a worker, the frame deque has not reached its cap this
  // round): count() first. False, with nothing called, elsewhere. May throw std::bad_alloc after
  // count() (see the scheduler's ForkJoinHandle). The mark's frame home is a worker of the
  // scheduler, or nullptr, which no thread's context is: one compare answers every condition.
  template <class Count, class MakeWords>
  [[gnu::always_inline]] bool try_push_group_frame(Count& count, MakeWords& make_words) {
    if (sched::this_thread_context() != mark_.frame_home) return false;
    return handle_.try_push_group_frame(mark_, count, make_words);
  }

 private:
  // Out of line: it allocates and locks anyway, and inlined its code takes the registers of the
  // worker's path in run()'s loop.
  template <class MakeCall>
  [[gnu::noinline]] void spawn_listed(MakeCall& make_call) {
    list().spawn(handle_.pool(), make_call());
  }

  // The list, made by the first callable listed: a group whose callables all go to a worker's
  // deque (the common case) never builds its mutex and vectors. Several threads may list at once
  // (the owner and callables on another pool's threads): the first to install its list wins.
  // acq_rel: the winner's construction happens before every use through the pointer. Two first
  // listings at once need callables of a group made on a worker, running outside the pool, that
  // add work to it; no test reaches that, so none would catch a plain store here.
  GroupCallList& list() {
    GroupCallList* list = listed_.load(std::memory_order_acquire);
    if (list != nullptr) return *list;
    auto* made = new GroupCallList;  // std::bad_alloc: run() then throws, nothing queued
    if (listed_.compare_exchange_strong(list, made, std::memory_order_acq_rel,
                                        std::memory_order_acquire)) {
      return *made;
    }
    delete made;
    return *list;
  }

  Handle handle_;
  sched::OwnWorkMark mark_;  // the waiting worker's deque: where the group's work begins there
  std::atomic<GroupCallList*> listed_{nullptr};  // made by list() on first use
};

}  // namespace wslab
