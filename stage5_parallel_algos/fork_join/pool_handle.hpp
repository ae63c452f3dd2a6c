// The one seam between fork-join and the pools it runs on. join, TaskGroup and the algorithms
// reach a pool through a handle that models ForkJoinPool, resolved once per call by
// with_fork_join_pool(): on a stage-5 scheduler (of either layout) its own handle,
// BasicScheduler::ForkJoinHandle; on every other IThreadPool (stages 1-4, the lab's pools) the
// adapter AnyPool below. Each algorithm, join and TaskGroup has one code path; how pools differ
// is what their handles answer: a worker's own deque or none, a guest seat or none, timed leaves
// or not, and how a task group's callables are queued and found again.
#pragma once

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <mutex>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "../../common/thread_pool.hpp"
#include "../../common/worker_identity.hpp"
#include "../scheduler/fork_join_host.hpp"
#include "../scheduler/guest_seat.hpp"
#include "../scheduler/scheduler.hpp"
#include "../scheduler/worker_context.hpp"
#include "../scheduler/worker_queue.hpp"
#include "claimable_job.hpp"
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
}  // namespace detail

// What fork-join asks of a pool. A handle is a pointer or two, copied into every fork and valid
// while the pool lives; it may be used from any thread (what concerns the calling thread is
// looked up when asked).
template <class H>
concept ForkJoinPool = std::copyable<H> && requires(const H h) {
  // The pool behind the handle, for what every pool offers (submit, try_run_one, its lifetime).
  { h.pool() }
  noexcept->std::same_as<IThreadPool&>;
  { h.thread_count() }
  noexcept->std::same_as<std::size_t>;
  // with_worker_queue(on_worker, otherwise): on_worker(queue) with the calling thread's own
  // deque, a sched::WorkerQueue, when the thread works for this pool and the pool lends its
  // deques to fork-join; otherwise() when not. Either's result.
  { h.with_worker_queue(detail::QueueProbe{}, detail::NoQueueProbe{}) } -> std::same_as<bool>;
  // For a join from outside the pool: a seat among its workers (empty when there is none), and
  // whether a join that finds none is handed to a worker as one task, where its nested joins
  // find a worker's deque, rather than forked from here.
  { h.try_seat_guest() }
  noexcept->std::same_as<sched::GuestSeat>;
  { h.hands_outside_joins_to_workers() }
  noexcept->std::same_as<bool>;
  // Whether the range algorithms with the automatic grain cut timed leaves
  // (algorithms/range_splitter.hpp).
  { h.timed_leaves() }
  noexcept->std::same_as<bool>;
  // What a TaskGroup keeps to queue its callables and to find its unstarted ones again:
  // spawn(group, call) queues call() (which reports to the group itself) or throws, and then
  // call() never runs; run_own(group, pool_usable, may_help) runs one unstarted callable of the
  // group on the calling thread, false when it finds none it should run.
  typename H::GroupWork;
  requires std::constructible_from<typename H::GroupWork, H>;
};

// The adapter for every IThreadPool that is not a stage-5 scheduler: no deque lent to fork-join,
// no guest seat, no timed leaves. join boxes its forked half on the heap (fork_join/join.hpp), and
// a task group lists its callables, below.
class AnyPool {
 public:
  explicit AnyPool(IThreadPool& pool) noexcept : pool_(&pool) {}

  IThreadPool& pool() const noexcept { return *pool_; }
  std::size_t thread_count() const noexcept { return pool_->thread_count(); }
  template <class OnWorker, class Otherwise>
  decltype(auto) with_worker_queue(OnWorker&&, Otherwise&& otherwise) const {
    return otherwise();
  }
  sched::GuestSeat try_seat_guest() const noexcept { return {}; }
  bool hands_outside_joins_to_workers() const noexcept { return false; }
  bool timed_leaves() const noexcept { return false; }

  // A task group's callables on a pool that knows nothing of groups: each is a claimable job
  // (claimable_job.hpp) behind a trampoline task, listed under a mutex so that the waiter can
  // claim and run it itself. That is why groups nest freely, from outside the pool or inside
  // tasks, even on a 1-thread pool: a waiter can always run its own unstarted work.
  class GroupWork {
   public:
    explicit GroupWork(AnyPool handle) noexcept : pool_(handle.pool_) {}
    GroupWork(const GroupWork&) = delete;
    GroupWork& operator=(const GroupWork&) = delete;

    template <class Call>
    void spawn(const void*, Call&& call) {
      {
        // Room for the listing first, so that nothing can throw once the job is queued.
        std::lock_guard<std::mutex> lock(mutex_);
        if (unstarted_.size() >= prune_at_) {
          // Jobs the pool already ran stay listed until the waiter pops them; drop them in bulk
          // here so a group that is fed for a long time without waiting stays small.
          std::erase_if(unstarted_, [](const JobRef<ClaimableJob>& j) { return j->claimed(); });
          prune_at_ = std::max<std::size_t>(64, unstarted_.size() * 2);
        }
        unstarted_.reserve(unstarted_.size() + 1);
      }
      auto* item = new Item<std::decay_t<Call>>(std::forward<Call>(call));  // ours + the queue's
      JobRef<ClaimableJob> ours = JobRef<ClaimableJob>::adopt(item);
      try {
        submit_trampoline(*pool_, JobRef<ClaimableJob>::adopt(item));
      } catch (...) {
        // Refused (the pool's destruction has begun) or out of memory: the trampoline is gone
        // and nobody else knows the job, so this claim wins and the call never runs.
        (void)ours->try_claim();
        throw;
      }
      std::lock_guard<std::mutex> lock(mutex_);
      unstarted_.push_back(std::move(ours));
    }

    // The newest listed callable nobody has started, run here as a task of the pool (wait_idle()
    // inside it is refused, as on a worker). Whether the pool is usable does not matter: the
    // claim decides who runs it.
    bool run_own(const void*, bool, bool) {
      for (;;) {
        JobRef<ClaimableJob> job;
        {
          std::lock_guard<std::mutex> lock(mutex_);
          if (unstarted_.empty()) return false;
          job = std::move(unstarted_.back());
          unstarted_.pop_back();
        }
        if (job->try_claim()) {
          with_stack_room([&] {
            RunningTaskScope running(*pool_);
            job->run_claimed();
          });
          return true;
        }
      }
    }

   private:
    template <class Call>
    class Item final : public ClaimableJob {
     public:
      template <class C>
      explicit Item(C&& call) : ClaimableJob(2), call_(std::forward<C>(call)) {}
      void run_claimed() noexcept override { call_(); }

     private:
      Call call_;
    };

    IThreadPool* pool_;
    std::mutex mutex_;
    std::vector<JobRef<ClaimableJob>> unstarted_;  // guarded by mutex_; may hold started ones
    std::size_t prune_at_ = 64;                    // guarded by mutex_
  };

 private:
  IThreadPool* pool_;
};

namespace detail {
inline constexpr SchedulerLayout kPaddedLayout{.padded = true};
inline constexpr SchedulerLayout kUnpaddedLayout{.padded = false};
template <SchedulerLayout Layout>
using SchedulerHandle = typename sched::BasicScheduler<Layout>::ForkJoinHandle;

template <SchedulerLayout Layout>
SchedulerHandle<Layout> scheduler_handle(IThreadPool& pool) noexcept {
  return SchedulerHandle<Layout>(static_cast<sched::BasicScheduler<Layout>&>(pool));
}

template <class F>
[[gnu::noinline]] decltype(auto) with_unpadded_scheduler(IThreadPool& pool, F& f) {
  return f(scheduler_handle<kUnpaddedLayout>(pool));
}

// From a thread that does not work for `pool`: once per call, so a cast is affordable.
template <class F>
[[gnu::noinline]] decltype(auto) with_pool_from_outside(IThreadPool& pool, F& f) {
  if (const sched::ForkJoinHost* host = sched::fork_join_host(pool)) {
    if (host->layout.padded) return f(scheduler_handle<kPaddedLayout>(pool));
    return f(scheduler_handle<kUnpaddedLayout>(pool));
  }
  return f(AnyPool(pool));
}
}  // namespace detail

static_assert(ForkJoinPool<AnyPool>);
static_assert(ForkJoinPool<detail::SchedulerHandle<detail::kPaddedLayout>>);
static_assert(ForkJoinPool<detail::SchedulerHandle<detail::kUnpaddedLayout>>);

// f(handle) with `pool`'s handle; f must return one type for every handle. On a worker of a
// scheduler (the hot case: a join inside a join) one TLS load, one compare and a branch on the
// layout, read from the context next to the pool's address; the default layout's call is inlined
// here and the other one is not, so that a caller stays as small as with one layout.
template <class F>
[[gnu::always_inline]] inline decltype(auto) with_fork_join_pool(IThreadPool& pool, F&& f) {
  if (const sched::WorkerContext* ctx = sched::worker_context_of(pool)) [[likely]] {
    if (ctx->layout.padded) [[likely]] {
      return f(detail::scheduler_handle<detail::kPaddedLayout>(pool));
    }
    return detail::with_unpadded_scheduler(pool, f);
  }
  return detail::with_pool_from_outside(pool, f);
}

// Any handle's GroupWork, for a TaskGroup, which is no template.
using AnyGroupWork =
    std::variant<AnyPool::GroupWork, detail::SchedulerHandle<detail::kPaddedLayout>::GroupWork,
                 detail::SchedulerHandle<detail::kUnpaddedLayout>::GroupWork>;

// The GroupWork of `pool`'s handle (built in place: a GroupWork is not movable).
inline AnyGroupWork group_work_of(IThreadPool& pool) {
  return with_fork_join_pool(pool, [](ForkJoinPool auto handle) {
    using Work = typename decltype(handle)::GroupWork;
    return AnyGroupWork(std::in_place_type<Work>, handle);
  });
}

}  // namespace wslab
