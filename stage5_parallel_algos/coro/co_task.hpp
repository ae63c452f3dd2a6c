// CoTask<T>: a lazily started coroutine that returns T (or throws). Nothing runs until it is
// awaited: `co_await std::move(task)` runs it on the awaiting thread (a symmetric transfer: no
// stack grows) and resumes the awaiter when it finishes; co_join() (co_join.hpp) runs several in
// parallel; sync_wait() (sync_wait.hpp) runs one from ordinary code.
//
// The promise keeps the result (a std::optional) or the exception, and who is told at the end:
// the awaiting coroutine, or the join that forked it. The frame comes from the thread's frame
// cache (frame_cache.hpp), so forks allocate nothing once the cache is warm.
//
// A CoTask owns its frame and destroys it with itself; it is move-only and can be awaited once.
#pragma once

#include <coroutine>
#include <cstddef>
#include <exception>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>

#include "../fork_join/join.hpp"
#include "../fork_join/thread_record.hpp"
#include "join_point.hpp"

namespace wslab {

template <class T = void>
class CoTask;

namespace detail {

template <class T>
struct CoTaskAccess;

class CoPromiseBase {
 public:
  static void* operator new(std::size_t bytes) {
    return this_fork_join_thread.frames.allocate(bytes);
  }
  static void operator delete(void* p, std::size_t bytes) noexcept {
    this_fork_join_thread.frames.deallocate(p, bytes);
  }

  std::suspend_always initial_suspend() noexcept { return {}; }

  // At the end the coroutine hands its thread to whoever waits: the awaiting parent, or in a
  // co_join the join's run or, once every child has arrived, the parent (join_point.hpp), else
  // nobody (the thread goes back to its pool). The frame may be destroyed by that parent on
  // another thread as soon as child_finished() returns, so nothing here touches the frame after.
  struct FinalAwaiter {
    bool await_ready() const noexcept { return false; }
    template <class P>
    std::coroutine_handle<> await_suspend(std::coroutine_handle<P> self) const noexcept {
      CoPromiseBase& p = self.promise();
      if (p.join_ != nullptr) return p.join_->child_finished();
      return p.continuation_;
    }
    void await_resume() const noexcept {}
  };
  FinalAwaiter final_suspend() noexcept { return {}; }

  void unhandled_exception() noexcept { error_ = std::current_exception(); }

  // Started (awaited, joined or sync-waited) at most once.
  void start_once(const char* call) {
    if (started_) [[unlikely]]
      throw_misuse(call, ": the CoTask has been started already (a CoTask runs once)");
    started_ = true;
  }
  // Out of line and cold, so that the checks on every fork stay a compare and a branch.
  [[noreturn, gnu::noinline, gnu::cold]] static void throw_misuse(const char* call,
                                                                  const char* what) {
    throw std::logic_error(std::string(call) + what);
  }
  void resume_after(std::coroutine_handle<> parent) noexcept { continuation_ = parent; }
  void finish_at(JoinPoint* join) noexcept { join_ = join; }
  std::exception_ptr take_error() noexcept { return std::exchange(error_, nullptr); }
  bool failed() const noexcept { return static_cast<bool>(error_); }

 private:
  std::coroutine_handle<> continuation_ = std::noop_coroutine();
  JoinPoint* join_ = nullptr;
  std::exception_ptr error_;
  bool started_ = false;
};

template <class T>
class CoPromise : public CoPromiseBase {
 public:
  CoTask<T> get_return_object() noexcept;
  template <class U>
    requires std::convertible_to<U&&, T>
  void return_value(U&& value) {
    value_.emplace(std::forward<U>(value));
  }
  // The result, or the coroutine's exception rethrown. Once.
  T take() {
    if (failed()) [[unlikely]]
      std::rethrow_exception(take_error());
    return std::move(*value_);
  }

 private:
  std::optional<T> value_;
};

template <>
class CoPromise<void> : public CoPromiseBase {
 public:
  CoTask<void> get_return_object() noexcept;
  void return_void() noexcept {}
  void take() {
    if (failed()) [[unlikely]]
      std::rethrow_exception(take_error());
  }
};

}  // namespace detail

template <class T>
class [[nodiscard]] CoTask {
  static_assert(std::is_void_v<T> || (std::is_object_v<T> && !std::is_array_v<T>),
                "CoTask<T>: T is void or an object type (return a pointer or a "
                "std::reference_wrapper for a reference)");

 public:
  using promise_type = detail::CoPromise<T>;
  using value_type = T;

  CoTask() noexcept = default;
  CoTask(CoTask&& other) noexcept : frame_(std::exchange(other.frame_, {})) {}
  CoTask& operator=(CoTask other) noexcept {
    std::swap(frame_, other.frame_);
    return *this;
  }
  // Destroys the coroutine; a CoTask must not be destroyed while it runs (an awaiter keeps it
  // until it has finished).
  ~CoTask() {
    if (frame_) frame_.destroy();
  }

  bool valid() const noexcept { return static_cast<bool>(frame_); }

  // `co_await std::move(task)`: runs the task here and returns its result, or rethrows.
  auto operator co_await() && {
    struct Awaiter {
      std::coroutine_handle<promise_type> child;
      bool await_ready() const noexcept { return false; }
      std::coroutine_handle<> await_suspend(std::coroutine_handle<> parent) noexcept {
        child.promise().resume_after(parent);
        return child;
      }
      T await_resume() { return child.promise().take(); }
    };
    started("wslab::CoTask: co_await").start_once("wslab::CoTask: co_await");
    return Awaiter{frame_};
  }

 private:
  friend promise_type;
  template <class U>
  friend struct detail::CoTaskAccess;
  explicit CoTask(std::coroutine_handle<promise_type> frame) noexcept : frame_(frame) {}

  promise_type& started(const char* what) {
    if (!frame_) [[unlikely]]
      detail::CoPromiseBase::throw_misuse(
          what, " on an empty CoTask (default-constructed or moved from)");
    return frame_.promise();
  }

  std::coroutine_handle<promise_type> frame_;
};

namespace detail {

template <class T>
CoTask<T> CoPromise<T>::get_return_object() noexcept {
  return CoTask<T>(std::coroutine_handle<CoPromise<T>>::from_promise(*this));
}
inline CoTask<void> CoPromise<void>::get_return_object() noexcept {
  return CoTask<void>(std::coroutine_handle<CoPromise<void>>::from_promise(*this));
}

// What co_join and sync_wait need from a CoTask: its frame, once, checked.
template <class T>
struct CoTaskAccess {
  static std::coroutine_handle<CoPromise<T>> start(CoTask<T>& task, const char* call) {
    task.started(call).start_once(call);
    return task.frame_;
  }
};

}  // namespace detail

}  // namespace wslab
