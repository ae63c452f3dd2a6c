// co_join: a coroutine forks CoTasks and waits for all of them.
//
//   auto [x, y] = co_await wslab::co_join(fib(n - 1), fib(n - 2));
//   std::vector<int> all = co_await wslab::co_join(std::move(tasks));   // n children
//
// The parent suspends; every child but the first is queued on the pool as a task that starts it,
// where this worker's thieves can take it; the first runs at once on this thread (a symmetric
// transfer). Each child arrives at the join's counter when it finishes, and the last to arrive
// resumes the parent on its own thread: the parent continues where its work ended, with no thread
// blocked in between. Every child runs, whatever the others do; the exception of the first child
// in argument order that threw is rethrown (the others' are dropped, as join drops b's when a's
// wins).
//
// The interleaving: a queued child may finish, and arrive, before the first child has started.
// The counter starts at the number of children, so whichever arrival is last resumes the parent;
// await_suspend reads everything it needs before it queues the first child, since from then on
// the parent may be resumed (and the awaiter destroyed) on another thread.
#pragma once

#include <coroutine>
#include <cstddef>
#include <exception>
#include <stdexcept>
#include <utility>
#include <vector>

#include "../../common/thread_pool.hpp"
#include "../fork_join/current_pool.hpp"
#include "../fork_join/pool_handle.hpp"
#include "co_task.hpp"
#include "resume_on_pool.hpp"

namespace wslab {
namespace detail {

// Queues a child's start as a task of the pool. On one of the stage-5 scheduler's workers, the
// task node is built in place on the worker's own deque, with no virtual call and no Task moved
// (the fork-join port's try_spawn_marked, with a mark of no worker); elsewhere pool.submit().
inline void queue_child(IThreadPool& pool, std::coroutine_handle<> child) {
  const bool spawned = with_fork_join_pool(pool, [&](ForkJoinPool auto handle) {
    sched::OwnWorkMark no_mark;
    auto make_call = [child] { return [child] { child.resume(); }; };
    return handle.try_spawn_marked(no_mark, make_call);
  });
  if (!spawned) resume_on(pool, pool.lifetime(), child);
}

template <class A, class B>
class PairJoinAwaiter {
 public:
  PairJoinAwaiter(IThreadPool& pool, CoTask<A>&& a, CoTask<B>&& b)
      : pool_(pool), a_(std::move(a)), b_(std::move(b)) {
    frame_a_ = CoTaskAccess<A>::start(a_, "wslab::co_join");
    frame_b_ = CoTaskAccess<B>::start(b_, "wslab::co_join");
  }
  bool await_ready() const noexcept { return false; }
  std::coroutine_handle<> await_suspend(std::coroutine_handle<> parent) {
    counter_.resume_at_end(parent);
    frame_a_.promise().arrive_at(&counter_);
    frame_b_.promise().arrive_at(&counter_);
    // b is queued, a runs here. From the queueing on, b may finish and arrive on another thread.
    const std::coroutine_handle<> a = frame_a_;
    queue_child(pool_, frame_b_);
    return a;
  }
  std::pair<stored_result_t<A>, stored_result_t<B>> await_resume() {
    if (frame_a_.promise().failed() || frame_b_.promise().failed()) [[unlikely]]
      rethrow_first();
    return {take_stored(frame_a_), take_stored(frame_b_)};
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
                                                       : frame_b_.promise().take_error());
  }

  IThreadPool& pool_;
  CoTask<A> a_;
  CoTask<B> b_;
  std::coroutine_handle<CoPromise<A>> frame_a_;
  std::coroutine_handle<CoPromise<B>> frame_b_;
  JoinCounter counter_{2};
};

template <class T>
class VectorJoinAwaiter {
 public:
  VectorJoinAwaiter(IThreadPool& pool, std::vector<CoTask<T>>&& tasks)
      : pool_(pool), tasks_(std::move(tasks)), counter_(tasks_.size()) {
    frames_.reserve(tasks_.size());
    for (CoTask<T>& t : tasks_)
      frames_.push_back(CoTaskAccess<T>::start(t, "wslab::co_join"));
  }
  bool await_ready() const noexcept { return frames_.empty(); }
  std::coroutine_handle<> await_suspend(std::coroutine_handle<> parent) {
    counter_.resume_at_end(parent);
    for (auto f : frames_)
      f.promise().arrive_at(&counter_);
    // frames_[1..] are queued, frames_[0] runs here. The awaiter outlives the loop: the parent
    // cannot resume before frames_[0], not started yet, has arrived.
    for (std::size_t i = frames_.size(); i-- > 1;)  // the last pushed is popped first: frames_[1]
      queue_child(pool_, frames_[i]);
    return frames_.front();
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
  JoinCounter counter_;
};

}  // namespace detail

// co_await co_join(a, b): runs both CoTasks, potentially in parallel, on the pool whose task the
// calling coroutine runs (or on `pool`), and returns their results as a std::pair (void gives
// std::monostate). Throws std::logic_error, before starting either, for an empty or started
// CoTask, or when there is no pool to find.
template <class A, class B>
detail::PairJoinAwaiter<A, B> co_join(IThreadPool& pool, CoTask<A> a, CoTask<B> b) {
  return detail::PairJoinAwaiter<A, B>(pool, std::move(a), std::move(b));
}
template <class A, class B>
detail::PairJoinAwaiter<A, B> co_join(CoTask<A> a, CoTask<B> b) {
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
