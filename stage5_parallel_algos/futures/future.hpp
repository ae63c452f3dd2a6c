// async(pool, f) -> Future<T>; future.then(g) -> Future<U>; when_all(futures) -> Future<vector>;
// when_any(futures) -> the index of a ready one.
//
// A Future is the single owner of the result of a job that runs once. get() waits the
// help-while-waiting way: if the job (or, for a continuation, a job it depends on) has not been
// started, the caller runs it inline; otherwise it helps the pool within the bounds of
// help_bounds.hpp (help_until_done.hpp), and sleeps only when everything it depends on is running
// elsewhere. So get() from inside a task never parks a worker on work only it could run, even on a
// 1-thread pool. A job run inline is still a task of its pool: wait_idle() inside it is refused
// with std::logic_error, as on a worker.
//
// Exceptions travel with the value: get() rethrows what the job threw. A continuation whose
// antecedent failed does not run its callable; its future carries the antecedent's exception.
// when_all waits for every input; if several failed, it carries the first failed one in input
// order and reports the others on stderr. A failed future destroyed without anyone collecting its
// exception (with get(), or through a continuation or when_all) reports it on stderr, as a pool
// does for a spawned task's.
//
// Misuse: an empty callable (a null function pointer, an empty std::function) is refused at the
// call with std::invalid_argument; a call on an empty future (default-constructed, or consumed
// by get() or then()) throws std::logic_error.
//
// Lifetime: a future may outlive its pool; it holds the pool's PoolLifetime (thread_pool.hpp),
// which never keeps the pool alive. Once the pool's destruction has completed, every job of the
// pool has run (the destructor drains them all), so get(), wait(), wait_for() and is_ready() keep
// working and never touch the pool; then() throws std::logic_error and leaves the future valid;
// when_all and when_any combine their inputs on the calling thread. A future may also be used
// while another thread destroys its pool: each call it makes into the pool from a thread the
// destructor does not wait for is made inside a PoolVisit, which holds off the end of the
// destruction (docs/reference.md, "Objects that outlive their pool"). A submission the pool
// refuses because its destruction has begun (a call from outside the pool) runs the job on the
// calling thread instead, and the continuations it releases there too: the pool is not asked
// again.
//
// Threads: one thread at a time uses a given Future (like std::future); different futures may be
// used from any threads.
//
// Caveat, as with every help-while-waiting scheme: structured waits (a task waits only for work
// it created) never deadlock, but a task that waits for a future whose job itself waits for
// something the first task holds up is a dependency cycle the scheduler cannot break.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <future>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "../../common/task_ledger.hpp"
#include "../../common/thread_pool.hpp"
#include "../../common/worker_identity.hpp"
#include "../fork_join/claimable_job.hpp"
#include "../fork_join/completion_flag.hpp"
#include "../fork_join/help_until_done.hpp"
#include "../fork_join/stack_room.hpp"
#include "../fork_join/thread_record.hpp"

namespace wslab {

template <class T>
class Future;

namespace detail {

// ForkJoinThread::refusing_pool is the pool that refused a submission on this thread, while the
// refused job runs here instead: the continuations it releases run here too, rather than ask (and
// touch) that pool again.

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
  const PoolLifetime& lifetime() const noexcept { return lifetime_; }

  // Runs this job, or an unstarted job it depends on, on the calling thread. The antecedent list
  // is fixed before the state is shared, so reading it needs no lock.
  bool run_something_inline() {
    if (ready() && try_claim()) {
      with_stack_room([&] {
        RunningTaskScope running(pool_);  // a task of the pool, run by its waiter
        run_claimed();
      });
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

  // Told by each antecedent when it completes. acq_rel: the last antecedent to finish acquires
  // the others' results (they released them here), and whoever runs this job afterwards sees
  // them through the queue hand-off or, when inlined, through ready()'s acquire load. Virtual:
  // when_any's waiter only wakes its thread.
  virtual void antecedent_done() {
    if (outstanding_.fetch_sub(1, std::memory_order_acq_rel) == 1) schedule();
  }

 protected:
  FutureStateBase(IThreadPool& pool, PoolLifetime lifetime, std::size_t antecedents)
      : ClaimableJob(1), pool_(pool), lifetime_(lifetime), outstanding_(antecedents) {}

  ~FutureStateBase() override {
    if (error_) {
      report_uncollected_exception(
          "a failed Future was destroyed without anyone collecting its exception (get(), a "
          "continuation or when_all)",
          error_);
    }
  }

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

  void schedule() {
    // A pool that refused this thread a moment ago is left alone: run this one here.
    if (this_fork_join_thread.refusing_pool == &pool_) {
      run_here();
      return;
    }
    {
      // Inside a visit (PoolVisit): the calling thread (the one that completed the last
      // antecedent) may be one the pool's destructor does not wait for, so the pool may be
      // destroyed right after lifetime_ says it lives. No visit is admitted once the destructor
      // has drained the pool: then, as when the pool is gone (it has run all its jobs, so nothing
      // here can wait for it), the job runs here.
      PoolVisit visit(lifetime_);
      if (visit) {
        add_ref();  // the trampoline's reference
        try {
          submit_trampoline(pool_, JobRef<FutureStateBase>::adopt(this));
          return;
        } catch (...) {
          // Refused (the pool's destruction has begun) or not queued (out of memory): run it
          // here, below, rather than lose it.
        }
      }
    }
    // From here on leave that pool alone.
    const IThreadPool* const outer = std::exchange(this_fork_join_thread.refusing_pool, &pool_);
    run_here();
    this_fork_join_thread.refusing_pool = outer;
  }

  void run_here() noexcept {
    if (!try_claim()) return;
    RunningTaskScope running(pool_);
    run_claimed();
  }

  void complete() {
    std::vector<JobRef<FutureStateBase>> next;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      // release: value and error are published to get(). Set before completed_, under the
      // mutex: a continuation registered from here on is told at once (add_continuation()), and
      // when_any's waiter, so told, must find this input ready.
      flag_.set();
      completed_ = true;
      next.swap(continuations_);
    }
    for (JobRef<FutureStateBase>& n : next)
      n->antecedent_done();
  }

  IThreadPool& pool_;
  PoolLifetime lifetime_;
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
  AsyncState(IThreadPool& pool, G&& fn)
      : FutureState<T>(pool, pool.lifetime(), 0), fn_(std::forward<G>(fn)) {}

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
  ThenState(JobRef<FutureState<T>> antecedent, H&& fn)
      : FutureState<U>(antecedent->pool(), antecedent->lifetime(), 1),
        antecedent_(antecedent.get()),
        fn_(std::forward<H>(fn)) {
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
  // The inputs' pool, taken from the first input: the pool itself may be gone.
  explicit WhenAllState(std::vector<JobRef<FutureState<T>>> inputs)
      : Base(inputs.front()->pool(), inputs.front()->lifetime(), inputs.size()) {
    for (auto& in : inputs) {
      inputs_.push_back(in.get());
      this->depends_on(std::move(in));
    }
  }

 private:
  void compute() override {
    std::exception_ptr first, second;
    std::size_t others = 0;
    for (FutureState<T>* in : inputs_) {
      if (!in->failed()) continue;
      std::exception_ptr error = in->take_error();
      if (!first) {
        first = std::move(error);
      } else if (++others == 1) {
        second = std::move(error);
      }
    }
    if (others > 0) {
      report_uncollected_exception(
          "wslab::when_all carries the first failed input's exception "
          "and drops the other " +
              std::to_string(others) + "; the first dropped one",
          second);
    }
    if (first) std::rethrow_exception(first);
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

// when_any's waiter: a continuation of every input that, instead of running a job, wakes the
// thread that waits on its flag. Never scheduled and never fails.
class AnyWaiter final : public FutureStateBase {
 public:
  explicit AnyWaiter(const FutureStateBase& first)
      : FutureStateBase(first.pool(), first.lifetime(), 1) {}
  // set() is idempotent: the inputs that complete after the first change nothing.
  void antecedent_done() override { flag().set(); }

 private:
  void compute() override {}
};

// Blocks until one of `states` is ready and returns the lowest index of a ready one (see
// when_any below).
inline std::size_t wait_any(const std::vector<FutureStateBase*>& states) {
  const auto first_ready = [&]() -> std::optional<std::size_t> {
    for (std::size_t i = 0; i < states.size(); ++i) {
      if (states[i]->flag().done()) return i;
    }
    return std::nullopt;
  };
  if (std::optional<std::size_t> ready = first_ready()) return *ready;
  auto waiter = JobRef<FutureStateBase>::adopt(new AnyWaiter(*states.front()));
  for (FutureStateBase* s : states)
    s->add_continuation(JobRef<FutureStateBase>::share(waiter.get()));
  help_until_done(&states.front()->pool(), &states.front()->lifetime(), waiter->flag(), [&] {
    for (FutureStateBase* s : states) {
      if (s->run_something_inline()) return true;
    }
    return false;
  });
  // The waiter's flag is set after an input's own flag (complete()), so one is ready now.
  return first_ready().value_or(0);
}

// A timeout as a whole number of microseconds, rounded up, never negative, and capped far beyond
// any real wait (a century) so that adding it to a clock's now() cannot overflow.
template <class Rep, class Period>
std::chrono::microseconds saturating_microseconds(
    const std::chrono::duration<Rep, Period>& timeout) {
  constexpr double kCenturyUs = 100.0 * 365.25 * 24 * 3600 * 1e6;
  const double us = std::chrono::duration<double, std::micro>(timeout).count();
  if (!(us > 0)) return std::chrono::microseconds(0);
  return std::chrono::microseconds(static_cast<std::int64_t>(std::ceil(std::min(us, kCenturyUs))));
}

// What the free functions below need from a Future.
struct FutureAccess {
  template <class T>
  static FutureStateBase* state(const Future<T>& f, const char* call) {
    f.require_valid(call);
    return f.state_.get();
  }
  template <class T>
  static Future<T> adopt(JobRef<FutureState<T>> state) noexcept {
    return Future<T>(std::move(state));
  }
};

}  // namespace detail

template <class T>
class Future {
 public:
  using value_type = T;

  Future() noexcept = default;
  // Move-only: one owner takes the value (get() moves it out) or hands it on (then(), when_all).
  // A moved-from future is empty.
  Future(Future&&) noexcept = default;
  Future& operator=(Future&&) noexcept = default;
  Future(const Future&) = delete;
  Future& operator=(const Future&) = delete;

  bool valid() const noexcept { return static_cast<bool>(state_); }
  // Non-blocking: true once the value or the exception is there.
  bool is_ready() const noexcept { return valid() && state_->flag().done(); }

  // Waits (helping) until the value is there, without taking it.
  void wait() const {
    require_valid("wait");
    detail::FutureStateBase& s = *state_;
    help_until_done(&s.pool(), &s.lifetime(), s.flag(), [&s] { return s.run_something_inline(); });
  }

  // Waits at most `timeout` for the value: std::future_status::ready or ::timeout (never
  // ::deferred). Unlike wait() it neither runs the job nor helps the pool, either of which could
  // take longer than the timeout; it sleeps, and wakes when the job completes. So on a pool whose
  // every worker is busy, the job may not start before the timeout. Throws std::logic_error on an
  // empty future.
  template <class Rep, class Period>
  std::future_status wait_for(const std::chrono::duration<Rep, Period>& timeout) const {
    require_valid("wait_for");
    if (state_->flag().done()) return std::future_status::ready;
    return wait_until(std::chrono::steady_clock::now() + detail::saturating_microseconds(timeout));
  }

  // wait_for() up to a point in time of any clock; the clock is read again at least once a
  // second, so a clock that is set (system_clock) is followed.
  template <class Clock, class Duration>
  std::future_status wait_until(const std::chrono::time_point<Clock, Duration>& deadline) const {
    require_valid("wait_until");
    CompletionFlag& flag = state_->flag();
    for (;;) {
      if (flag.done()) return std::future_status::ready;
      const auto now = Clock::now();
      if (now >= deadline) return std::future_status::timeout;
      const std::chrono::microseconds left = detail::saturating_microseconds(deadline - now);
      flag.sleep_for(
          std::clamp(left, std::chrono::microseconds(1), std::chrono::microseconds(1'000'000)));
    }
  }

  // Waits, then returns the value or rethrows the job's exception. The future is then empty.
  T get() {
    wait();
    JobRef<detail::FutureState<T>> state = std::move(state_);
    if (state->failed()) std::rethrow_exception(state->take_error());
    if constexpr (!std::is_void_v<T>) return state->take_value();
  }

  // Returns the future of g(value), run on the same pool once this one is ready (g() for
  // Future<void>). Consumes this future. Throws std::invalid_argument for an empty g, and
  // std::logic_error when the pool is gone (there is nowhere to run g); this future then stays
  // valid.
  template <class G>
  auto then(G&& g) {
    require_valid("then");
    if (is_empty_callable(g)) throw_empty_task("wslab::Future::then()");
    if (state_->lifetime().expired()) {
      throw std::logic_error(
          "wslab::Future::then(): the future's pool has been destroyed, so the continuation has "
          "nowhere to run; the future is still valid (get() works)");
    }
    using U = typename detail::ContinuationResult<std::decay_t<G>, T>::type;
    using State = detail::ThenState<U, T, std::decay_t<G>>;
    JobRef<detail::FutureState<T>> antecedent = std::move(state_);
    auto next = JobRef<detail::FutureState<U>>::adopt(new State(antecedent, std::forward<G>(g)));
    antecedent->add_continuation(JobRef<detail::FutureStateBase>::share(next.get()));
    return Future<U>(std::move(next));
  }

 private:
  template <class>
  friend class Future;
  friend struct detail::FutureAccess;
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

// Runs f() on `pool` and returns the future of its result. Throws std::invalid_argument for an
// empty f. If the pool refuses it (its destruction has begun), f runs on the calling thread.
template <class F>
  requires std::invocable<std::decay_t<F>&>
auto async(IThreadPool& pool, F&& fn) {
  if (is_empty_callable(fn)) throw_empty_task("wslab::async()");
  using T = std::invoke_result_t<std::decay_t<F>&>;
  using State = detail::AsyncState<T, std::decay_t<F>>;
  auto state = JobRef<detail::FutureState<T>>::adopt(new State(pool, std::forward<F>(fn)));
  state->start_if_ready();
  return detail::FutureAccess::adopt<T>(std::move(state));
}

// The future of all the inputs' values, in input order (Future<void> for void inputs). The
// inputs are consumed. They may come from different pools: the result's job, which only gathers
// the values, runs on the first input's pool (on the completing thread once that pool is gone).
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
  auto* raw = new detail::WhenAllState<T>(inputs);
  auto state = JobRef<detail::FutureState<R>>::adopt(raw);
  for (auto& in : inputs)
    in->add_continuation(JobRef<detail::FutureStateBase>::share(raw));
  return Future<R>(std::move(state));
}

// Blocks until at least one of the futures is ready (holds a value or an exception) and returns
// the lowest index among the ready ones; consumes nothing, so the caller then get()s that one:
//
//   std::size_t i = when_any(futures);   // or when_any(fa, fb, fc) for futures of any types
//   auto value = futures[i].get();
//
// It waits the way get() does: it runs an unstarted job of any input inline and helps the first
// input's pool while it waits (the inputs may come from different pools). Throws
// std::invalid_argument for an empty vector and std::logic_error for an empty future. Each call
// leaves a small waiter registered with every input that is not ready yet, until that input
// completes.
template <class T>
std::size_t when_any(const std::vector<Future<T>>& futures) {
  if (futures.empty()) throw std::invalid_argument("wslab::when_any: no futures to wait for");
  std::vector<detail::FutureStateBase*> states;
  states.reserve(futures.size());
  for (const Future<T>& f : futures)
    states.push_back(detail::FutureAccess::state(f, "when_any"));
  return detail::wait_any(states);
}

template <class... T>
  requires(sizeof...(T) > 0)
std::size_t when_any(const Future<T>&... futures) {
  const std::vector<detail::FutureStateBase*> states{
      detail::FutureAccess::state(futures, "when_any")...};
  return detail::wait_any(states);
}

}  // namespace wslab
