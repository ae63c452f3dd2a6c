// co_join: a coroutine forks CoTasks and waits for all of them.
//
//   auto [x, y] = co_await wslab::co_join(fib(n - 1), fib(n - 2));
//   std::vector<int> all = co_await wslab::co_join(std::move(tasks));   // n children
//
// The parent suspends and, on one of the stage-5 scheduler's workers, runs its children in a run
// (join_point.hpp): every child but the first is pushed onto the worker's split deque, where
// thieves can take it, as a job in the parent's frame; the first is called here; then the worker
// takes back what the thieves left, newest first, and calls it here too. When every child has
// finished in the run, the parent goes on at once, as after a call: no task node, no trip through
// the worker's loop, no read-modify-write. A child a thief took, or one that suspended (on a
// future, or on a join whose child was stolen), finishes elsewhere later: the last of them to
// arrive resumes the parent on its own thread, and meanwhile the worker returns to whoever resumed
// the parent. Every child runs, whatever the others do; the exception of the first child in
// argument order that threw is rethrown (the others' are dropped, as join drops b's when a's wins).
//
// The run calls each child as a plain function call, so a recursion of co_joins uses the stack
// of its depth, as a recursion of joins does; where the stack is nearly full, the children are
// all queued as the pool's tasks instead, and the run is empty. Off the scheduler's
// workers (another pool, or a thread outside it), the queued children are the pool's tasks and
// always finish elsewhere; the first still runs here.
//
// The interleaving: a queued child may finish on a thief, and arrive, before the first child has
// started. The counter counts the run as one more arrival, so the parent is not resumed before
// the run is over; after its own arrival the run touches nothing of the join, since the parent
// may then be resumed (and the awaiter destroyed) on another thread.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <coroutine>
#include <cstddef>
#include <exception>
#include <iterator>
#include <stdexcept>
#include <utility>
#include <vector>

#include "../../common/thread_pool.hpp"
#include "../fork_join/current_pool.hpp"
#include "../fork_join/pool_handle.hpp"
#include "../fork_join/stack_room.hpp"
#include "co_task.hpp"
#include "join_point.hpp"
#include "resume_on_pool.hpp"

namespace wslab {
namespace detail {

// A queued child: a job in the awaiter, so in the parent's frame, which outlives it (the parent
// is resumed only after the child has finished). The run takes it back and calls the child
// itself, or a thief steals it and runs it; either way it counts as the pool's task until its
// runner retires it (pool_handle.hpp's task_job_run()).
class ChildJob final : public sched::Job {
 public:
  ChildJob(PoolHandle pool, std::coroutine_handle<> child) noexcept
      : Job(&run), pool_(pool), child_(child) {}
  ChildJob(const ChildJob& other) noexcept : ChildJob(other.pool_, other.child_) {}
  ChildJob& operator=(const ChildJob&) = delete;
  // For another child, once the run has this job back or its thief has read it.
  void reset(std::coroutine_handle<> child) noexcept {
    child_ = child;
    taken_.store(false, std::memory_order_relaxed);
  }

  std::coroutine_handle<> child() const noexcept { return child_; }
  PoolHandle pool() const noexcept { return pool_; }
  sched::Scheduler::TaskJobRun::Place place;  // where the run pushed it
  // Set as the thief's first step: from then on the job's slot in the split deque may be reused
  // (TaskJobRun::take_back() waits for it before it frees the slot). acquire, pairing with the
  // thief's release store: the thief's read of the slot happens before the forker refills it.
  // The window this closes, between a thief's CAS on the deque and its read of the slot, is a few
  // instructions wide, and no stress test reaches it; a run that freed the slot without waiting
  // would let that thief run whatever job the forker pushed next, twice, and lose this one.
  bool thief_has_read() const noexcept { return taken_.load(std::memory_order_acquire); }

 private:
  static void run(sched::Job& self) noexcept {
    auto& job = static_cast<ChildJob&>(self);
    const PoolHandle pool = job.pool_;
    const std::coroutine_handle<> child = job.child_;
    // release: see thief_has_read(). The job may be gone once the child has finished, so it is
    // not touched after this.
    job.taken_.store(true, std::memory_order_release);
    child.resume();
    pool.retire_task_job();
  }

  PoolHandle pool_;
  std::coroutine_handle<> child_;
  std::atomic<bool> taken_{false};
};

// Where the stack is nearly full, a join does not run its children from it: every child goes to
// the pool, the last first, and the run is empty.
template <class Children>
[[gnu::cold, gnu::noinline]] bool queue_every_child(IThreadPool& pool, JoinPoint& join,
                                                    const Children& children) {
  for (std::size_t i = std::size(children); i-- > 0;)
    resume_on(pool, pool.lifetime(), children[i]);
  return join.parent_waits();
}

// The run's step for one queued child: back from the deque and called here, unless a thief has
// it.
[[gnu::always_inline]] inline void take_back_and_call(sched::Scheduler::TaskJobRun& run,
                                                      ChildJob& job) {
  if (run.take_back(job, job.place, [&job] { return job.thief_has_read(); })) {
    job.child().resume();
    run.retire();
  }
}

// A pair's fork and run (join_point.hpp): `job` queued, `first` called here, then `job` taken
// back and called here, unless a thief has it. What the push throws (no memory to grow the deque)
// comes out of the co_await, before either child has started. Returns true when the parent must
// wait for a child that finishes elsewhere.
inline bool fork_and_run(IThreadPool& pool, PoolHandle handle, JoinPoint& join,
                         std::coroutine_handle<> first, ChildJob& job) {
  if (stack_nearly_full()) [[unlikely]]
    return queue_every_child(pool, join, std::array{first, job.child()});
  sched::Scheduler::TaskJobRun run = handle.task_job_run();
  if (!run) [[unlikely]] {
    resume_on(pool, pool.lifetime(), job.child());  // off the workers: a task of the pool
    join.run([&] { first.resume(); });
    return join.parent_waits();
  }
  job.place = run.push(job);
  join.run([&]() __attribute__((always_inline)) {
    first.resume();
    take_back_and_call(run, job);
  });
  return join.parent_waits();
}

// n children's: the first called here, the others queued a window of at most kWindow at a time
// (the window's jobs are reused, so a join of a million children keeps a few hundred KiB of jobs,
// not tens of MiB), each window's children pushed the last first so that the lowest is on top,
// then taken back, newest first, and called here, unless a thief has them. Off the workers, or
// once a push has failed for want of memory, the queued children are tasks of the pool (or,
// when it refuses them, they run here).
template <class Frame>
bool fork_and_run(IThreadPool& pool, PoolHandle handle, JoinPoint& join,
                  const std::vector<Frame>& children, std::vector<ChildJob>& window) {
  constexpr std::size_t kWindow = 1024;
  const std::size_t n = children.size();
  if (stack_nearly_full()) [[unlikely]]
    return queue_every_child(pool, join, children);
  sched::Scheduler::TaskJobRun run = handle.task_job_run();
  bool pushing = static_cast<bool>(run);
  // Reserved once: the window's jobs never move while they are on a deque.
  window.reserve(std::min(n - 1, kWindow));
  std::size_t next = 1;  // the next child to queue
  // Queues children[next, next + k): window[lo, k) on the deques, window[0, lo) to the pool.
  struct Queued {
    std::size_t lo, hi;
  };
  auto queue_window = [&]() -> Queued {
    const std::size_t k = std::min(n - next, kWindow);
    while (window.size() < k)
      window.emplace_back(handle, std::coroutine_handle<>{});
    std::size_t lo = k;
    for (std::size_t j = k; j-- > 0;) {
      const std::coroutine_handle<> child = children[next + j];
      if (pushing) {
        window[j].reset(child);
        try {
          window[j].place = run.push(window[j]);
          lo = j;
          continue;
        } catch (...) {  // no memory to grow the deque: this child and the rest go to the pool
          pushing = false;
        }
      }
      resume_on(pool, pool.lifetime(), child);
    }
    next += k;
    return {lo, k};
  };
  Queued queued = queue_window();
  join.run([&] {
    children.front().resume();
    for (;;) {
      for (std::size_t j = queued.lo; j < queued.hi; ++j)
        take_back_and_call(run, window[j]);
      if (next == n) break;
      queued = queue_window();
    }
  });
  return join.parent_waits();
}

template <class A, class B>
class PairJoinAwaiter {
 public:
  PairJoinAwaiter(IThreadPool& pool, CoTask<A>&& a, CoTask<B>&& b)
      : a_(std::move(a)),
        b_(std::move(b)),
        frame_a_(CoTaskAccess<A>::start(a_, "wslab::co_join")),
        job_b_(fork_join_handle(pool), CoTaskAccess<B>::start(b_, "wslab::co_join")) {}
  bool await_ready() const noexcept { return false; }
  bool await_suspend(std::coroutine_handle<> parent) {
    IThreadPool& pool = job_b_.pool().pool();
    join_.resume_at_end(parent, pool);
    frame_a_.promise().finish_at(&join_);
    frame_b().promise().finish_at(&join_);
    return fork_and_run(pool, job_b_.pool(), join_, frame_a_, job_b_);
  }
  std::pair<stored_result_t<A>, stored_result_t<B>> await_resume() {
    if (frame_a_.promise().failed() || frame_b().promise().failed()) [[unlikely]]
      rethrow_first();
    return {take_stored(frame_a_), take_stored(frame_b())};
  }

 private:
  template <class T>
  static stored_result_t<T> take_stored(std::coroutine_handle<CoPromise<T>> frame) {
    if constexpr (std::is_void_v<T>) {
      frame.promise().take();
      return {};
    } else {
      return frame.promise().take();
    }
  }

  // a's exception, else b's; the other child's is dropped with its frame.
  [[noreturn, gnu::noinline]] void rethrow_first() {
    std::rethrow_exception(frame_a_.promise().failed() ? frame_a_.promise().take_error()
                                                       : frame_b().promise().take_error());
  }

  std::coroutine_handle<CoPromise<B>> frame_b() const noexcept {
    return std::coroutine_handle<CoPromise<B>>::from_address(job_b_.child().address());
  }

  CoTask<A> a_;
  CoTask<B> b_;
  std::coroutine_handle<CoPromise<A>> frame_a_;
  JoinPoint join_{2};
  ChildJob job_b_;
};

template <class T>
class VectorJoinAwaiter {
 public:
  VectorJoinAwaiter(IThreadPool& pool, std::vector<CoTask<T>>&& tasks)
      : pool_(pool), tasks_(std::move(tasks)), join_(tasks_.size()) {
    frames_.reserve(tasks_.size());
    for (CoTask<T>& t : tasks_)
      frames_.push_back(CoTaskAccess<T>::start(t, "wslab::co_join"));
  }
  bool await_ready() const noexcept { return frames_.empty(); }
  bool await_suspend(std::coroutine_handle<> parent) {
    join_.resume_at_end(parent, pool_);
    for (auto f : frames_)
      f.promise().finish_at(&join_);
    return fork_and_run(pool_, fork_join_handle(pool_), join_, frames_, window_);
  }
  auto await_resume() {
    std::exception_ptr first;
    for (auto f : frames_) {
      std::exception_ptr e = f.promise().take_error();
      if (e && !first) first = std::move(e);
    }
    if (first) std::rethrow_exception(first);
    if constexpr (std::is_void_v<T>) {
      return;
    } else {
      std::vector<T> values;
      values.reserve(frames_.size());
      for (auto f : frames_)
        values.push_back(f.promise().take());
      return values;
    }
  }

 private:
  IThreadPool& pool_;
  std::vector<CoTask<T>> tasks_;
  std::vector<std::coroutine_handle<CoPromise<T>>> frames_;
  JoinPoint join_;
  std::vector<ChildJob> window_;
};

}  // namespace detail

// co_await co_join(a, b): runs both CoTasks, potentially in parallel, on the pool whose task the
// calling coroutine runs (or on `pool`), and returns their results as a std::pair (void gives
// std::monostate). Throws std::logic_error, before starting either, for an empty or started
// CoTask, or when there is no pool to find.
template <class A, class B>
[[gnu::always_inline]] inline detail::PairJoinAwaiter<A, B> co_join(IThreadPool& pool, CoTask<A> a,
                                                                    CoTask<B> b) {
  return detail::PairJoinAwaiter<A, B>(pool, std::move(a), std::move(b));
}
template <class A, class B>
[[gnu::always_inline]] inline detail::PairJoinAwaiter<A, B> co_join(CoTask<A> a, CoTask<B> b) {
  return co_join(detail::current_pool_for("wslab::co_join(a, b)"), std::move(a), std::move(b));
}

// co_await co_join(tasks): runs every CoTask of the vector, potentially in parallel, and returns
// their results in order (std::vector<T>; nothing for CoTask<void>). An empty vector returns at
// once.
template <class T>
detail::VectorJoinAwaiter<T> co_join(IThreadPool& pool, std::vector<CoTask<T>> tasks) {
  return detail::VectorJoinAwaiter<T>(pool, std::move(tasks));
}
template <class T>
detail::VectorJoinAwaiter<T> co_join(std::vector<CoTask<T>> tasks) {
  return co_join(detail::current_pool_for("wslab::co_join(tasks)"), std::move(tasks));
}

}  // namespace wslab
