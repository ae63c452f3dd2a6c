// async(pool, f) -> Future<T>; future.then(g) -> Future<U>; when_all(futures) -> Future<vector>.
//
// A Future is the single owner of the result of a job that runs once. get() waits the
// help-while-waiting way: if the job (or, for a continuation, a job it depends on) has not been
// started, the caller runs it inline; otherwise it helps the pool within the bounds of
// help_bounds.hpp (help_until_done.hpp), and sleeps only when everything it depends on is running
// elsewhere. So get() from inside a task never parks a worker on work only it could run, even on a
// 1-thread pool.
//
// Exceptions travel with the value: get() rethrows what the job threw. A continuation whose
// antecedent failed does not run its callable; its future carries the antecedent's exception.
// when_all waits for every input; if several failed, it carries the first failed one in input
// order (the others are dropped).
//
// Caveat, as with every help-while-waiting scheme: structured waits (a task waits only for work
// it created) never deadlock, but a task that waits for a future whose job itself waits for
// something the first task holds up is a dependency cycle the scheduler cannot break.
#pragma once

#include <atomic>
#include <cstddef>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "../common/thread_pool.hpp"
#include "claimable_job.hpp"
#include "help_until_done.hpp"
#include "latch.hpp"
#include "stack_room.hpp"

namespace wslab {

template <class T>
class Future;

namespace detail {

// The type-independent part of a future's shared state: the once-only job, the antecedents it
// waits for, the continuations that wait for it, and the completion flag get() sleeps on.
class FutureStateBase : public ClaimableJob {
 public:
  CompletionFlag& flag() noexcept { return flag_; }
  bool failed() const noexcept { return static_cast<bool>(error_); }
  // Moves the exception out, so that the one consumer holds the only reference. Were a copy left
  // here, the last reference could be dropped on whichever thread frees this state last, after
  // the consumer caught the exception; libstdc++ counts exception references with atomics that
  // ThreadSanitizer does not see, and it would report the free as racing with the catch.
  std::exception_ptr take_error() noexcept { return std::exchange(error_, nullptr); }
  IThreadPool& pool() const noexcept { return pool_; }

  // Runs this job, or an unstarted job it depends on, on the calling thread. The antecedent list
  // is fixed before the state is shared, so reading it needs no lock.
  bool run_something_inline() {
    if (ready() && try_claim()) {
      with_stack_room([&] { run_claimed(); });
      return true;
    }
    for (const JobRef<FutureStateBase>& a : antecedents_) {
      if (a->run_something_inline()) return true;
    }
    return false;
  }

  // Registers `next` to be told when this state completes (at once if it already has).
  void add_continuation(JobRef<FutureStateBase> next) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!completed_) {
        continuations_.push_back(std::move(next));
        return;
      }
    }
    next->antecedent_done();
  }

  // Schedules the job once nothing it depends on is outstanding.
  void start_if_ready() {
    if (ready()) schedule();
  }

 protected:
  FutureStateBase(IThreadPool& pool, std::size_t antecedents)
      : ClaimableJob(1), pool_(pool), outstanding_(antecedents) {}

  void depends_on(JobRef<FutureStateBase> antecedent) {
    antecedents_.push_back(std::move(antecedent));
  }
  const std::vector<JobRef<FutureStateBase>>& antecedents() const noexcept { return antecedents_; }

  // Computes the value; what it throws becomes the future's exception.
  virtual void compute() = 0;

 public:
  void run_claimed() noexcept final {
    try {
      compute();
    } catch (...) {
      error_ = std::current_exception();
    }
    complete();
  }

 private:
  bool ready() const noexcept { return outstanding_.load(std::memory_order_acquire) == 0; }

  // acq_rel: the last antecedent to finish acquires the others' results (they released them
  // here), and whoever runs this job afterwards sees them through the queue hand-off or, when
  // inlined, through ready()'s acquire load.
  void antecedent_done() {
    if (outstanding_.fetch_sub(1, std::memory_order_acq_rel) == 1) schedule();
  }

  void schedule() {
    add_ref();  // the trampoline's reference
    try {
      submit_trampoline(pool_, JobRef<FutureStateBase>::adopt(this));
    } catch (...) {
      // The pool is shutting down and refuses new tasks: run it here rather than lose it.
      if (try_claim()) run_claimed();
    }
  }

  void complete() {
    std::vector<JobRef<FutureStateBase>> next;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      completed_ = true;
      next.swap(continuations_);
    }
    flag_.set();  // release: value and error are published to get()
    for (JobRef<FutureStateBase>& n : next)
      n->antecedent_done();
  }

  IThreadPool& pool_;
  std::atomic<std::size_t> outstanding_;
  std::vector<JobRef<FutureStateBase>> antecedents_;
  std::exception_ptr error_;
  CompletionFlag flag_;

  std::mutex mutex_;
  bool completed_ = false;                              // guarded by mutex_
  std::vector<JobRef<FutureStateBase>> continuations_;  // guarded by mutex_
};

template <class G, class T>
struct ContinuationResult {
  using type = std::invoke_result_t<G&, T>;
};
template <class G>
struct ContinuationResult<G, void> {
  using type = std::invoke_result_t<G&>;
};

template <class T>
class FutureState : public FutureStateBase {
 public:
  using Stored = std::conditional_t<std::is_void_v<T>, std::monostate, T>;
  Stored take_value() { return std::move(*value_); }

 protected:
  using FutureStateBase::FutureStateBase;
  template <class F>
  void store_from(F&& f) {
    if constexpr (std::is_void_v<T>) {
      std::forward<F>(f)();
      value_.emplace();
    } else {
      value_.emplace(std::forward<F>(f)());
    }
  }

 private:
  std::optional<Stored> value_;
};

template <class T, class F>
class AsyncState final : public FutureState<T> {
 public:
  template <class G>
  AsyncState(IThreadPool& pool, G&& fn) : FutureState<T>(pool, 0), fn_(std::forward<G>(fn)) {}

 private:
  void compute() override {
    this->store_from(*fn_);
    fn_.reset();
  }
  std::optional<F> fn_;
};

template <class U, class T, class G>
class ThenState final : public FutureState<U> {
 public:
  template <class H>
  ThenState(IThreadPool& pool, JobRef<FutureState<T>> antecedent, H&& fn)
      : FutureState<U>(pool, 1), antecedent_(antecedent.get()), fn_(std::forward<H>(fn)) {
    this->depends_on(std::move(antecedent));
  }

 private:
  void compute() override {
    if (antecedent_->failed()) std::rethrow_exception(antecedent_->take_error());
    if constexpr (std::is_void_v<T>) {
      this->store_from(*fn_);
    } else {
      this->store_from([&]() -> decltype(auto) { return (*fn_)(antecedent_->take_value()); });
    }
    fn_.reset();
  }
  FutureState<T>* antecedent_;  // kept alive by the antecedent list
  std::optional<G> fn_;
};

template <class T>
class WhenAllState final
    : public FutureState<std::conditional_t<std::is_void_v<T>, void, std::vector<T>>> {
 public:
  using Base = FutureState<std::conditional_t<std::is_void_v<T>, void, std::vector<T>>>;
  WhenAllState(IThreadPool& pool, std::vector<JobRef<FutureState<T>>> inputs)
      : Base(pool, inputs.size()) {
    for (auto& in : inputs) {
      inputs_.push_back(in.get());
      this->depends_on(std::move(in));
    }
  }

 private:
  void compute() override {
    for (FutureState<T>* in : inputs_) {
      if (in->failed()) std::rethrow_exception(in->take_error());
    }
    if constexpr (std::is_void_v<T>) {
      this->store_from([] {});
    } else {
      this->store_from([&] {
        std::vector<T> values;
        values.reserve(inputs_.size());
        for (FutureState<T>* in : inputs_)
          values.push_back(in->take_value());
        return values;
      });
    }
  }
  std::vector<FutureState<T>*> inputs_;  // kept alive by the antecedent list
};

}  // namespace detail

template <class T>
class Future {
 public:
  using value_type = T;

  Future() noexcept = default;

  bool valid() const noexcept { return static_cast<bool>(state_); }
  bool is_ready() const noexcept { return valid() && state_->flag().done(); }

  // Waits (helping) until the value is there, without taking it.
  void wait() const {
    require_valid("wait");
    detail::FutureStateBase& s = *state_;
    help_until_done(&s.pool(), s.flag(), [&s] { return s.run_something_inline(); });
  }

  // Waits, then returns the value or rethrows the job's exception. The future is then empty.
  T get() {
    wait();
    JobRef<detail::FutureState<T>> state = std::move(state_);
    if (state->failed()) std::rethrow_exception(state->take_error());
    if constexpr (!std::is_void_v<T>) return state->take_value();
  }

  // Returns the future of g(value), run on the same pool once this one is ready (g() for
  // Future<void>). Consumes this future.
  template <class G>
  auto then(G&& g) {
    require_valid("then");
    using U = typename detail::ContinuationResult<std::decay_t<G>, T>::type;
    using State = detail::ThenState<U, T, std::decay_t<G>>;
    IThreadPool& pool = state_->pool();
    JobRef<detail::FutureState<T>> antecedent = std::move(state_);
    auto next =
        JobRef<detail::FutureState<U>>::adopt(new State(pool, antecedent, std::forward<G>(g)));
    antecedent->add_continuation(JobRef<detail::FutureStateBase>::share(next.get()));
    return Future<U>(std::move(next));
  }

 private:
  template <class>
  friend class Future;
  template <class U, class F>
  friend Future<U> make_future(IThreadPool&, F&&);
  template <class U>
  friend Future<std::conditional_t<std::is_void_v<U>, void, std::vector<U>>> when_all(
      std::vector<Future<U>> futures);

  explicit Future(JobRef<detail::FutureState<T>> state) noexcept : state_(std::move(state)) {}

  void require_valid(const char* what) const {
    if (!state_) {
      throw std::logic_error(std::string("wslab::Future::") + what +
                             "() on an empty future (already consumed by get() or then())");
    }
  }

  JobRef<detail::FutureState<T>> state_;
};

template <class T, class F>
Future<T> make_future(IThreadPool& pool, F&& fn) {
  using State = detail::AsyncState<T, std::decay_t<F>>;
  auto state = JobRef<detail::FutureState<T>>::adopt(new State(pool, std::forward<F>(fn)));
  state->start_if_ready();
  return Future<T>(std::move(state));
}

// Runs f() on `pool` and returns the future of its result.
template <class F>
requires std::invocable < std::decay_t<F>
& > auto async(IThreadPool& pool, F&& fn) {
  using T = std::invoke_result_t<std::decay_t<F>&>;
  return make_future<T>(pool, std::forward<F>(fn));
}

// The future of all the inputs' values, in input order (Future<void> for void inputs). The
// inputs are consumed. All inputs must come from the same pool; the result runs there too.
template <class T>
Future<std::conditional_t<std::is_void_v<T>, void, std::vector<T>>> when_all(
    std::vector<Future<T>> futures) {
  using R = std::conditional_t<std::is_void_v<T>, void, std::vector<T>>;
  if (futures.empty()) {
    throw std::invalid_argument("wslab::when_all: no futures (there is no pool to run on)");
  }
  std::vector<JobRef<detail::FutureState<T>>> inputs;
  inputs.reserve(futures.size());
  for (Future<T>& f : futures) {
    f.require_valid("when_all");
    inputs.push_back(std::move(f.state_));
  }
  IThreadPool& pool = inputs.front()->pool();
  auto* raw = new detail::WhenAllState<T>(pool, inputs);
  auto state = JobRef<detail::FutureState<R>>::adopt(raw);
  for (auto& in : inputs)
    in->add_continuation(JobRef<detail::FutureStateBase>::share(raw));
  return Future<R>(std::move(state));
}

}  // namespace wslab
