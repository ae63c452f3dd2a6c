// `co_await future` and `co_await first_ready(futures)`: a coroutine waits for a Future without
// blocking a thread. It suspends, registers a continuation with the future's state, and a task of
// the future's pool resumes it once the value or the exception is there.
//
// A continuation here is a FutureStateBase that runs no job: when its one antecedent completes
// (antecedent_done()), it queues the coroutine's resumption on the pool (resume_on_pool.hpp).
//
// The interleaving that matters: the future may complete on another thread between the check in
// await_ready() and the registration in await_suspend(). add_continuation() decides under the
// state's mutex (future.hpp): registered before completion, the completer is told; after, the
// registering thread is told at once. Either way the coroutine is resumed exactly once, and only
// after it has suspended (await_suspend runs after the suspension). From the registration on,
// the coroutine may be running (and destroying the future) on another thread, so await_suspend
// touches nothing of the awaiter after it: it keeps the states alive with references of its own.
#pragma once

#include <atomic>
#include <coroutine>
#include <cstddef>
#include <stdexcept>
#include <utility>
#include <vector>

#include "../futures/future.hpp"
#include "resume_on_pool.hpp"

namespace wslab {
namespace detail {

// Resumes the coroutine when its antecedent completes (for first_ready, the first of them).
class ResumeWhenDone final : public FutureStateBase {
 public:
  ResumeWhenDone(const FutureStateBase& first, std::coroutine_handle<> h)
      : FutureStateBase(first.pool(), first.lifetime(), 1), coroutine_(h) {}
  // Told once per antecedent; only the first resumes. acq_rel: the resumed coroutine reads the
  // input's result, which the input published before telling us.
  void antecedent_done() override {
    if (!fired_.exchange(true, std::memory_order_acq_rel))
      resume_on(pool(), lifetime(), coroutine_);
  }

 private:
  void compute() override {}
  std::coroutine_handle<> coroutine_;
  std::atomic<bool> fired_{false};
};

// Registers one ResumeWhenDone with every state. `states` is the awaiter's copy; the first
// registration may already resume the coroutine, so the loop runs over references held here.
inline void resume_when_any_done(std::vector<JobRef<FutureStateBase>> states,
                                 std::coroutine_handle<> h) {
  auto resumer = JobRef<FutureStateBase>::adopt(new ResumeWhenDone(*states.front(), h));
  for (JobRef<FutureStateBase>& s : states)
    s->add_continuation(JobRef<FutureStateBase>::share(resumer.get()));
}

template <class T>
class FutureAwaiter {
 public:
  explicit FutureAwaiter(Future<T>& f) : future_(f) {
    state_ = FutureAccess::state(f, "operator co_await");  // throws on an empty future
  }
  bool await_ready() const noexcept { return future_.is_ready(); }
  void await_suspend(std::coroutine_handle<> h) {
    resume_when_any_done({JobRef<FutureStateBase>::share(state_)}, h);
  }
  // The future is ready: get() does not wait.
  T await_resume() { return future_.get(); }

 private:
  Future<T>& future_;
  FutureStateBase* state_;
};

template <class T>
class OwningFutureAwaiter {
 public:
  explicit OwningFutureAwaiter(Future<T>&& f) : future_(std::move(f)), inner_(future_) {}
  OwningFutureAwaiter(const OwningFutureAwaiter&) = delete;  // inner_ refers to future_
  bool await_ready() const noexcept { return inner_.await_ready(); }
  void await_suspend(std::coroutine_handle<> h) { inner_.await_suspend(h); }
  T await_resume() { return inner_.await_resume(); }

 private:
  Future<T> future_;
  FutureAwaiter<T> inner_;
};

class FirstReadyAwaiter {
 public:
  explicit FirstReadyAwaiter(std::vector<FutureStateBase*> states) : states_(std::move(states)) {}
  bool await_ready() const noexcept { return lowest_ready() < states_.size(); }
  void await_suspend(std::coroutine_handle<> h) {
    std::vector<JobRef<FutureStateBase>> held;
    held.reserve(states_.size());
    for (FutureStateBase* s : states_)
      held.push_back(JobRef<FutureStateBase>::share(s));
    resume_when_any_done(std::move(held), h);
  }
  std::size_t await_resume() const noexcept { return lowest_ready(); }

 private:
  std::size_t lowest_ready() const noexcept {
    std::size_t i = 0;
    while (i < states_.size() && !states_[i]->flag().done())
      ++i;
    return i;
  }
  std::vector<FutureStateBase*> states_;
};

}  // namespace detail

// `T value = co_await future;` suspends the coroutine until the future is ready, then resumes it
// on a worker of the future's pool (on the completing thread once that pool is gone) and returns
// the value or rethrows the job's exception. A future that is ready already suspends nothing: the
// coroutine goes on where it runs (a hop to the future's pool would only cost a queued task). Like
// get(), it consumes the future (an lvalue future is left empty). Never blocks a thread and never
// runs the job inline. Throws std::logic_error on an empty future.
template <class T>
detail::FutureAwaiter<T> operator co_await(Future<T>& f) {
  return detail::FutureAwaiter<T>(f);
}
template <class T>
detail::OwningFutureAwaiter<T> operator co_await(Future<T>&& f) {
  return detail::OwningFutureAwaiter<T>(std::move(f));
}

// `std::size_t i = co_await first_ready(futures);` is when_any() for a coroutine: it suspends
// until at least one of the futures is ready, and returns the lowest index among the ready ones.
// Suspended, it resumes on a worker of the first future's pool; with one ready already, it does
// not suspend. Consumes nothing; the futures must outlive the co_await. Throws
// std::invalid_argument for an empty vector and std::logic_error for an empty future.
template <class T>
detail::FirstReadyAwaiter first_ready(const std::vector<Future<T>>& futures) {
  if (futures.empty()) throw std::invalid_argument("wslab::first_ready: no futures to wait for");
  std::vector<detail::FutureStateBase*> states;
  states.reserve(futures.size());
  for (const Future<T>& f : futures)
    states.push_back(detail::FutureAccess::state(f, "first_ready"));
  return detail::FirstReadyAwaiter(std::move(states));
}
template <class... T>
  requires(sizeof...(T) > 0)
detail::FirstReadyAwaiter first_ready(const Future<T>&... futures) {
  return detail::FirstReadyAwaiter({detail::FutureAccess::state(futures, "first_ready")...});
}

}  // namespace wslab
