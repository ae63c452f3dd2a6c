// sync_wait(pool, task): runs a CoTask on the pool from ordinary code and blocks until it is done.
//
// A small driver coroutine awaits the task and sets a CompletionFlag at its end. On one of the
// pool's workers the caller starts the driver itself, then waits on the flag helping the pool, as
// Future::get() runs its own job first: the driver is the caller's own work, so no help bound
// holds it back (sync_wait nested in coroutines deeper than kMaxHelpDepth still finishes on one
// worker). Any other thread queues the driver's start on the pool and sleeps, so that the task
// runs on the workers alone. The driver sets the flag from an await_suspend that returns void,
// its very last step: the caller destroys the driver's frame as soon as it sees the flag.
#pragma once

#include <coroutine>
#include <exception>
#include <optional>
#include <type_traits>
#include <utility>

#include "../../common/thread_pool.hpp"
#include "../../common/worker_identity.hpp"
#include "../fork_join/completion_flag.hpp"
#include "../fork_join/help_until_done.hpp"
#include "../fork_join/stack_room.hpp"
#include "../fork_join/thread_record.hpp"
#include "co_task.hpp"
#include "resume_on_pool.hpp"

namespace wslab {
namespace detail {

class SyncDriver {
 public:
  struct promise_type {
    static void* operator new(std::size_t bytes) {
      return this_fork_join_thread.frames.allocate(bytes);
    }
    static void operator delete(void* p, std::size_t bytes) noexcept {
      this_fork_join_thread.frames.deallocate(p, bytes);
    }
    SyncDriver get_return_object() noexcept {
      return SyncDriver(std::coroutine_handle<promise_type>::from_promise(*this));
    }
    std::suspend_always initial_suspend() noexcept { return {}; }
    struct SetFlag {
      bool await_ready() const noexcept { return false; }
      void await_suspend(std::coroutine_handle<promise_type> self) const noexcept {
        self.promise().done->set();
      }
      void await_resume() const noexcept {}
    };
    SetFlag final_suspend() noexcept { return {}; }
    void return_void() noexcept {}
    // The driver's body catches everything the task throws; nothing reaches here.
    void unhandled_exception() noexcept { std::terminate(); }
    CompletionFlag* done = nullptr;
  };

  SyncDriver(SyncDriver&& other) noexcept : frame_(std::exchange(other.frame_, {})) {}
  SyncDriver& operator=(SyncDriver&&) = delete;
  ~SyncDriver() {
    if (frame_) frame_.destroy();
  }
  std::coroutine_handle<promise_type> frame() const noexcept { return frame_; }

 private:
  explicit SyncDriver(std::coroutine_handle<promise_type> frame) noexcept : frame_(frame) {}
  std::coroutine_handle<promise_type> frame_;
};

template <class T>
SyncDriver drive(CoTask<T> task, std::optional<stored_result_t<T>>& value,
                 std::exception_ptr& error) {
  try {
    if constexpr (std::is_void_v<T>) {
      co_await std::move(task);
      value.emplace();
    } else {
      value.emplace(co_await std::move(task));
    }
  } catch (...) {
    error = std::current_exception();
  }
}

}  // namespace detail

// Runs `task` on `pool` and returns its result, or rethrows its exception, once it and everything
// it awaits have finished. On one of the pool's workers the caller starts the task and helps the
// pool while it waits (so a 1-worker pool cannot deadlock on it); any other thread sleeps until
// the task is done, and the task runs on the workers. Throws std::logic_error for an empty or
// already started CoTask. If the pool refuses the start from outside its workers (its destruction
// has begun), the task starts on the calling thread.
template <class T>
T sync_wait(IThreadPool& pool, CoTask<T> task) {
  if (!task.valid()) {
    throw std::logic_error("wslab::sync_wait: an empty CoTask (default-constructed or moved from)");
  }
  std::optional<stored_result_t<T>> value;
  std::exception_ptr error;
  CompletionFlag done;
  detail::SyncDriver driver = detail::drive(std::move(task), value, error);
  driver.frame().promise().done = &done;
  if (pool.owns_current_thread()) {
    // A worker starts the task here and helps until it is done (the task may need it, on a pool
    // of one). Queued instead, the driver would be foreign work to this very wait, run only
    // within the help bounds: nested kMaxHelpDepth deep, the wait would run nothing and hang.
    with_stack_room([&] {
      RunningTaskScope running(pool);
      driver.frame().resume();
    });
    help_until_done(&pool, nullptr, done, [] { return false; });
  } else {
    // Any other thread sleeps: were it to help, the tree would grow on a thread outside the
    // pool, each fork queued through the injector, and the pool would use one CPU more than it
    // has workers.
    detail::resume_on(pool, pool.lifetime(), driver.frame());
    help_until_done(nullptr, nullptr, done, [] { return false; });
  }
  if (error) std::rethrow_exception(error);
  if constexpr (!std::is_void_v<T>) return std::move(*value);
}

}  // namespace wslab
