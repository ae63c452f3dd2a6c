// Where a suspended coroutine goes to be resumed: a task on its pool. `co_await schedule(pool)`
// moves a coroutine there; an awaited future and a forked CoTask resume through the same call.
#pragma once

#include <coroutine>
#include <stdexcept>

#include "../../common/thread_pool.hpp"

namespace wslab {
namespace detail {

// Queues h.resume() on `pool`. When the pool is gone, or refuses the task (its destruction has
// begun and the caller is not one of its tasks; or no memory for the task), the coroutine resumes
// here instead: a suspended coroutine is never dropped. The submission is made inside a visit
// (PoolVisit): the caller may be a thread of another pool, which nothing stops from reaching this
// one just as its destructor completes. Once the destructor has drained the pool no visit is
// admitted, and the coroutine resumes here, as when the pool is gone.
inline void resume_on(IThreadPool& pool, const PoolLifetime& lifetime, std::coroutine_handle<> h) {
  if (PoolVisit visit(lifetime); visit) {
    try {
      pool.submit([h] { h.resume(); });
      return;
    } catch (...) {
    }
  }
  h.resume();
}

// `co_await schedule(pool)`: suspends, and resumes on one of the pool's workers.
class ScheduleAwaiter {
 public:
  explicit ScheduleAwaiter(IThreadPool& pool) noexcept : pool_(pool) {}
  bool await_ready() const noexcept { return false; }
  // What submit() throws (the pool's destruction has begun: std::logic_error) comes out of the
  // co_await, with the coroutine still on the calling thread.
  void await_suspend(std::coroutine_handle<> h) const {
    pool_.submit([h] { h.resume(); });
  }
  void await_resume() const noexcept {}

 private:
  IThreadPool& pool_;
};

}  // namespace detail

// `co_await wslab::schedule(pool)` moves the calling coroutine onto one of the pool's workers: it
// suspends, and a task of the pool resumes it. Throws (out of the co_await, the coroutine not
// moved) what pool.submit() throws: std::logic_error once the pool's destruction has begun.
inline detail::ScheduleAwaiter schedule(IThreadPool& pool) noexcept {
  return detail::ScheduleAwaiter(pool);
}

}  // namespace wslab
