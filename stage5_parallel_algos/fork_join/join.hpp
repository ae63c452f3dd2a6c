// join(pool, a, b): run two callables, potentially in parallel, and return both results.
//
// The shape is Rayon's: b is forked (made stealable), a runs on the calling thread, then the
// caller takes b back and runs it inline if no other thread has started it, or else helps the
// pool until b is done (help_until_done.hpp). On a pool where nothing is ever stolen, join costs
// one small allocation, one submit and one claim; the parallelism is only paid for when it is
// used.
//
// Exceptions: both callables always run to completion (b may use a's frame, so we wait for it
// even when a has thrown). If both throw, a's exception is rethrown and b's is dropped; if one
// throws, that one is rethrown.
//
// Generic path: b lives in a small reference-counted heap job, because the queued trampoline may
// come out of the queue after this call returned. It works on every IThreadPool, from inside a
// task and from outside the pool (the calling thread then works alongside the pool's workers).
//
// Scheduler path (join_on_worker.hpp): on a worker of the stage-5 scheduler (any layout, any
// knobs), found through the thread's WorkerContext (scheduler/worker_context.hpp), b lives in the
// caller's frame and goes on the worker's own deque: no allocation. Called from outside, the
// caller takes the pool's guest seat (scheduler/fork_join_host.hpp) and runs the join as a worker
// would, while one parked worker stays asleep in its place (README.md, step 'Guest seat'); every
// nested join below it then takes the fast path too. If another outside thread has the seat, or
// the seat is switched off, the whole join is handed to the pool as one task and the caller
// sleeps until it is done (Rayon's way).
#pragma once

#include <exception>
#include <functional>
#include <new>
#include <optional>
#include <type_traits>
#include <utility>
#include <variant>

#include "../../common/task.hpp"
#include "../../common/thread_pool.hpp"
#include "../../common/worker_identity.hpp"
#include "../scheduler/scheduler.hpp"
#include "claimable_job.hpp"
#include "help_until_done.hpp"
#include "join_on_worker.hpp"
#include "latch.hpp"
#include "stack_room.hpp"
#include "thread_tag.hpp"

namespace wslab {

// What a callable returning R leaves behind: void becomes std::monostate so that results can be
// stored and paired uniformly.
template <class R>
using stored_result_t = std::conditional_t<std::is_void_v<R>, std::monostate, std::decay_t<R>>;

namespace detail {

template <class F, class... Args>
stored_result_t<std::invoke_result_t<F&, Args...>> invoke_stored(F& f, Args&&... args) {
  if constexpr (std::is_void_v<std::invoke_result_t<F&, Args...>>) {
    std::invoke(f, std::forward<Args>(args)...);
    return {};
  } else {
    return std::invoke(f, std::forward<Args>(args)...);
  }
}

// The forked half of a join: b(bool migrated), its result or exception, and the flag its waiter
// sleeps on. `migrated` tells b whether it runs on a thread other than the forker's: the adaptive
// splitter of parallel_for uses it to split more where work is being stolen.
template <class B>
class ForkedCall final : public ClaimableJob {
 public:
  using Result = stored_result_t<std::invoke_result_t<B&, bool>>;

  template <class F>
  explicit ForkedCall(F&& fn)
      : ClaimableJob(2), fn_(std::in_place, std::forward<F>(fn)), forker_(this_thread_tag()) {}

  void run_claimed() noexcept override {
    try {
      result_.emplace(invoke_stored(*fn_, this_thread_tag() != forker_));
    } catch (...) {
      error_ = std::current_exception();
    }
    // The callable's captures die here, while the waiter still waits, not whenever the last
    // reference (perhaps a late trampoline) goes.
    fn_.reset();
    flag_.set();  // release: result_/error_ are published to the waiter
  }

  CompletionFlag& flag() noexcept { return flag_; }
  std::exception_ptr& error() noexcept { return error_; }
  Result take_result() { return std::move(*result_); }

 private:
  std::optional<B> fn_;
  const void* forker_;
  std::optional<Result> result_;
  std::exception_ptr error_;
  CompletionFlag flag_;
};

// Runs f() as one task of `pool` and sleeps until it is done; rethrows what f threw. The flag
// lives in this frame: the task sets it as its last touch of anything here. For a scheduler seen
// from outside without its guest seat: the task runs on a worker, where f's joins take the fast
// path.
template <class F>
auto run_as_one_task(IThreadPool& pool, F& f) -> decltype(f()) {
  using R = decltype(f());
  std::optional<std::conditional_t<std::is_void_v<R>, std::monostate, R>> result;
  std::exception_ptr error;
  CompletionFlag done;
  pool.submit(Task([&f, &result, &error, &done] {
    try {
      if constexpr (std::is_void_v<R>) {
        f();
        result.emplace();
      } else {
        result.emplace(f());
      }
    } catch (...) {
      error = std::current_exception();
    }
    done.set();
  }));
  help_until_done(nullptr, done, [] { return false; });
  if (error) std::rethrow_exception(error);
  if constexpr (!std::is_void_v<R>) return std::move(*result);
}

template <class A, class B>
using join_results_t = std::pair<stored_result_t<std::invoke_result_t<A&>>,
                                 stored_result_t<std::invoke_result_t<B&, bool>>>;

template <class A, class B>
join_results_t<A, B> join_context(IThreadPool& pool, A&& a, B&& b);

// Everything but the scheduler's worker fast path, out of line so that the fast path stays a
// small function: a nearly full stack, a call from outside a scheduler, and the generic heap
// path.
template <class A, class B>
[[gnu::noinline]] join_results_t<A, B> join_cold(IThreadPool& pool, A&& a, B&& b) {
  using ResultA = stored_result_t<std::invoke_result_t<A&>>;
  if (stack_nearly_full()) {
    return with_stack_room(
        [&] { return join_context(pool, std::forward<A>(a), std::forward<B>(b)); });
  }
  if (sched::ForkJoinHost* host = sched::fork_join_host(pool)) {
    // Not one of its workers (join_context() checked). Take the guest seat if it is free and run
    // the join here, as a worker would; the seat is left when `seat` goes out of scope.
    if (sched::GuestSeat seat = host->try_seat_guest()) {
      return join_context(pool, std::forward<A>(a), std::forward<B>(b));
    }
    if (!detail::on_overflow_stack) {
      auto whole = [&] { return join_context(pool, std::forward<A>(a), std::forward<B>(b)); };
      return run_as_one_task(pool, whole);
    }
  }
  using Job = ForkedCall<std::decay_t<B>>;
  // Two references: ours, and the trampoline's.
  JobRef<Job> job = JobRef<Job>::adopt(new Job(std::forward<B>(b)));
  submit_trampoline(pool, JobRef<Job>::adopt(job.get()));

  std::optional<ResultA> result_a;
  std::exception_ptr error_a;
  try {
    result_a.emplace(invoke_stored(a));
  } catch (...) {
    error_a = std::current_exception();
  }

  help_until_done(&pool, job->flag(), [&] {
    if (!job->try_claim()) return false;
    job->run_claimed();
    return true;
  });
  if (error_a) std::rethrow_exception(error_a);
  // Moved out, not copied: see FutureStateBase::take_error() for why the heap job must not keep
  // a reference to an exception its waiter rethrows.
  if (job->error()) std::rethrow_exception(std::exchange(job->error(), nullptr));
  return {std::move(*result_a), job->take_result()};
}

// join with b(bool migrated); returns both stored results.
template <class A, class B>
join_results_t<A, B> join_context(IThreadPool& pool, A&& a, B&& b) {
  using ResultA = stored_result_t<std::invoke_result_t<A&>>;
  using ResultB = stored_result_t<std::invoke_result_t<B&, bool>>;
  if (sched::WorkerContext* ctx = sched::worker_context_of(pool)) [[likely]] {
    if (!stack_nearly_full()) [[likely]] {
      return sched::with_local_queue(*ctx, [&](sched::WorkerQueue auto queue) {
        return join_on_worker<ResultA, ResultB>(queue, a, b);
      });
    }
  }
  return join_cold(pool, std::forward<A>(a), std::forward<B>(b));
}

}  // namespace detail

// Runs a() and b(), potentially in parallel, and returns both results as a std::pair (a callable
// returning void contributes a std::monostate). When both return void, join returns void.
template <class A, class B>
requires std::invocable<A&> && std::invocable<B&>
auto join(IThreadPool& pool, A&& a, B&& b) {
  // b is referenced, not copied: join does not return before b has finished.
  auto results = detail::join_context(pool, std::forward<A>(a),
                                      [&b](bool) -> decltype(auto) { return std::invoke(b); });
  if constexpr (std::is_void_v<std::invoke_result_t<A&>> &&
                std::is_void_v<std::invoke_result_t<B&>>) {
    return;
  } else {
    return results;
  }
}

}  // namespace wslab
