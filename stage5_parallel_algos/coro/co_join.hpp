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
#include "co_task.hpp"
#include "resume_on_pool.hpp"

namespace wslab {
namespace detail {

// Starts frames[1..] on the pool and returns frames[0] to run here.
inline std::coroutine_handle<> fork_children(IThreadPool& pool,
                                             const std::vector<std::coroutine_handle<>>& frames) {
  const std::coroutine_handle<> first = frames.front();
  const PoolLifetime lifetime = pool.lifetime();
  for (std::size_t i = frames.size(); i-- > 1;)  // the last pushed is popped first: frames[1]
    resume_on(pool, lifetime, frames[i]);
  return first;
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
    counter_.emplace(2, parent);
    frame_a_.promise().arrive_at(&*counter_);
    frame_b_.promise().arrive_at(&*counter_);
    // b is queued, a runs here. From the queueing on, b may finish and arrive on another thread.
    const std::coroutine_handle<> a = frame_a_;
    resume_on(pool_, pool_.lifetime(), frame_b_);
    return a;
  }
  std::pair<stored_result_t<A>, stored_result_t<B>> await_resume() {
    std::exception_ptr a_error = frame_a_.promise().take_error();
    std::exception_ptr b_error = frame_b_.promise().take_error();
    if (a_error) std::rethrow_exception(a_error);
    if (b_error) std::rethrow_exception(b_error);
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

  IThreadPool& pool_;
  CoTask<A> a_;
  CoTask<B> b_;
  std::coroutine_handle<CoPromise<A>> frame_a_;
  std::coroutine_handle<CoPromise<B>> frame_b_;
  std::optional<JoinCounter> counter_;
};

template <class T>
class VectorJoinAwaiter {
 public:
  VectorJoinAwaiter(IThreadPool& pool, std::vector<CoTask<T>>&& tasks)
      : pool_(pool), tasks_(std::move(tasks)) {
    frames_.reserve(tasks_.size());
    for (CoTask<T>& t : tasks_)
      frames_.push_back(CoTaskAccess<T>::start(t, "wslab::co_join"));
  }
  bool await_ready() const noexcept { return frames_.empty(); }
  std::coroutine_handle<> await_suspend(std::coroutine_handle<> parent) {
    counter_.emplace(frames_.size(), parent);
    std::vector<std::coroutine_handle<>> frames(frames_.begin(), frames_.end());
    for (auto f : frames_)
      f.promise().arrive_at(&*counter_);
    return fork_children(pool_, frames);
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
  std::optional<JoinCounter> counter_;
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
