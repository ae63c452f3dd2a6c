// The one header an engineer includes: wslab::ThreadPool, a work-stealing pool with fork-join
// and parallel algorithms.
//
//   #include "stage5_parallel_algos/threadpool.hpp"
//
//   wslab::ThreadPool pool(4);
//   pool.spawn([] { do_something(); });              // fire and forget
//   auto answer = pool.async([] { return 6 * 7; });   // answer.get() == 42, or rethrows
//   pool.parallel_for(v.begin(), v.end(), [](double& x) { x = std::sqrt(x); });
//   double sum = pool.parallel_reduce(v.begin(), v.end(), 0.0, std::plus<>{});
//   auto [l, r] = pool.join([] { return left(); }, [] { return right(); });
//   pool.with_worker([](wslab::WorkerRef w) { return fib(w, 30); });  // w.join(a, b) inside
//   int n = pool.run(co_fib(30));   // a CoTask<int>: co_await co_join(...) and futures inside
//   pool.parallel_sort(v.begin(), v.end());
//   pool.wait_all();                                   // idle; rethrows a spawned task's exception
//   pool.dropped_exceptions();                         // ...and how many more it discarded
//   wslab::TaskGroup group(pool);                      // run(f)..., wait(), cancel()
//
// Every algorithm is also available as a free function over any wslab::IThreadPool (see the
// headers included below), which is how the lab runs them on every stage's pool.
#pragma once

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <functional>
#include <iterator>
#include <stdexcept>
#include <thread>
#include <type_traits>
#include <utility>

#include "../common/thread_pool.hpp"
#include "../common/worker_threads.hpp"
#include "algorithms/parallel_for.hpp"
#include "algorithms/parallel_reduce.hpp"
#include "algorithms/parallel_scan.hpp"
#include "algorithms/parallel_sort.hpp"
#include "algorithms/parallel_stable_sort.hpp"
#include "algorithms/per_worker.hpp"
#include "coro/await_future.hpp"
#include "coro/co_join.hpp"
#include "coro/co_task.hpp"
#include "coro/resume_on_pool.hpp"
#include "coro/sync_wait.hpp"
#include "fork_join/help_bounds.hpp"
#include "fork_join/join.hpp"
#include "fork_join/task_group.hpp"
#include "fork_join/worker_ref.hpp"
#include "futures/future.hpp"
#include "scheduler/scheduler.hpp"

namespace wslab {

class ThreadPool {
 public:
  // The scheduler underneath (scheduler/scheduler.hpp): on its workers join takes its
  // allocation-free path.
  using SchedulerType = wslab::Scheduler;

  // One worker per hardware thread, at most kMaxThreads (default_thread_count()).
  ThreadPool() : ThreadPool(default_thread_count()) {}

  // Throws std::invalid_argument for 0 or an absurd count and for a refused stack size,
  // std::system_error if a thread cannot be started. `options` carries the worker-start hook (run
  // on each worker before it takes work: CPU affinity, priorities, thread-local setup), the prefix
  // of the OS thread names ("wslab-0", "wslab-1", ...) and the workers' stack size.
  explicit ThreadPool(std::size_t num_threads, PoolOptions options = {})
      : scheduler_(num_threads, std::move(options)) {}

  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // Runs every task still queued (including tasks they spawn), then joins the workers.
  ~ThreadPool() = default;

  // Queues f() and returns at once. What f throws is rethrown by the next wait_all(). Throws
  // std::invalid_argument for an empty f (an empty Task, a null function pointer or an empty
  // std::function), and wslab::SubmitRefused (a std::logic_error) when called from outside the pool
  // once its destruction has begun (f is then destroyed unrun).
  template <class F>
    requires std::invocable<std::decay_t<F>&>
  void spawn(F&& f) {
    if (is_empty_callable(f)) throw_empty_task("wslab::ThreadPool::spawn()");
    try {
      // The scheduler's typed spawn, not the virtual submit(Task): on a worker the callable is
      // built straight into the recycled task node (stage 5 README, step 'Typed spawn').
      scheduler_.spawn(std::forward<F>(f));
    } catch (const SubmitRefused&) {
      throw SubmitRefused(
          "wslab::ThreadPool::spawn() from outside the pool after its destruction began; the "
          "task was not queued");
    }
  }

  // Waits until no spawned task is queued or running, then rethrows the first exception a
  // spawned task threw since the last wait_all(), unchanged; dropped_exceptions() then tells how
  // many others it discarded. Throws std::logic_error on one of the pool's workers and inside
  // any of its tasks, whichever thread runs it (one that Future::get(), TaskGroup::wait() or a
  // helping thread runs inline too): it would wait for itself. Use a TaskGroup there.
  void wait_all() {
    if (waiting_would_wait_for_itself(scheduler_)) {
      throw std::logic_error(
          "wslab::ThreadPool::wait_all() called from one of the pool's workers or from inside one "
          "of its tasks would wait for itself; wait for a TaskGroup there instead");
    }
    scheduler_.wait_idle();
  }

  // How many exceptions of spawned tasks the last wait_all() discarded: it rethrows the first
  // one and counts the others here (0 when it threw none or only that one). Same meaning as
  // TaskGroup::dropped_exceptions().
  std::size_t dropped_exceptions() const {
    return static_cast<std::size_t>(scheduler_.dropped_exceptions());
  }

  // Runs f() on the pool; the future's get() returns the value or rethrows, and helps the pool
  // while it waits (future.hpp: then, when_all, when_any, wait_for). Throws
  // std::invalid_argument for an empty f.
  template <class F>
    requires std::invocable<std::decay_t<F>&>
  auto async(F&& f) {
    if (is_empty_callable(f)) throw_empty_task("wslab::ThreadPool::async()");
    return wslab::async(scheduler_, std::forward<F>(f));
  }

  // f(element) for every element of [first, last), like std::for_each; grain 0 splits on
  // demand, a positive grain splits until pieces are at most that long.
  template <std::random_access_iterator It, class F>
    requires(!std::integral<It>)
  void parallel_for(It first, It last, F&& f, std::size_t grain = 0) {
    wslab::parallel_for(scheduler_, first, last, std::forward<F>(f), grain);
  }

  // f(index) for every index in [begin, end). The index has the bounds' common type, so
  // parallel_for(0, v.size(), f) passes std::size_t; end <= begin does nothing; a non-empty range
  // that starts at a negative begin with an unsigned common type throws std::out_of_range
  // (parallel_for.hpp).
  template <IndexBound B, IndexBound E, class F>
  void parallel_for(B begin, E end, F&& f, std::size_t grain = 0) {
    wslab::parallel_for(scheduler_, begin, end, std::forward<F>(f), grain);
  }
  // f(element) for every element of a sized random-access range (std::vector, std::array,
  // std::span, C array).
  template <SizedRandomAccessRange R, class F>
  void parallel_for(R&& range, F&& f, std::size_t grain = 0) {
    wslab::parallel_for(scheduler_, range, std::forward<F>(f), grain);
  }

  // Same meaning as std::reduce(first, last, init, op): op associative and commutative. grain as
  // in parallel_for.
  template <std::random_access_iterator It, class T, class Op = std::plus<>>
  T parallel_reduce(It first, It last, T init, Op op = {}, std::size_t grain = 0) {
    return wslab::parallel_reduce(scheduler_, first, last, std::move(init), std::move(op), grain);
  }
  template <SizedRandomAccessRange R, class T, class Op = std::plus<>>
  T parallel_reduce(R&& range, T init, Op op = {}, std::size_t grain = 0) {
    return wslab::parallel_reduce(scheduler_, range, std::move(init), std::move(op), grain);
  }

  // Same meaning as std::transform_reduce(first, last, init, reduce, transform): reduces
  // transform(element); reduce associative and commutative.
  template <std::random_access_iterator It, class T, class Reduce, class Transform>
  T parallel_transform_reduce(It first, It last, T init, Reduce reduce, Transform transform,
                              std::size_t grain = 0) {
    return wslab::parallel_transform_reduce(scheduler_, first, last, std::move(init),
                                            std::move(reduce), std::move(transform), grain);
  }
  template <SizedRandomAccessRange R, class T, class Reduce, class Transform>
  T parallel_transform_reduce(R&& range, T init, Reduce reduce, Transform transform,
                              std::size_t grain = 0) {
    return wslab::parallel_transform_reduce(scheduler_, range, std::move(init), std::move(reduce),
                                            std::move(transform), grain);
  }

  // Same meaning as std::inclusive_scan and std::exclusive_scan: op associative, out may equal
  // first; return out + (last - first). Allocates a small array (parallel_scan.hpp). grain as in
  // parallel_for, last; right after op (no init) it is a ScanGrain, since an integer there is init.
  template <std::random_access_iterator It, std::random_access_iterator Out, class Op = std::plus<>>
  Out parallel_inclusive_scan(It first, It last, Out out, Op op = {}) {
    return wslab::parallel_inclusive_scan(scheduler_, first, last, out, std::move(op));
  }
  template <std::random_access_iterator It, std::random_access_iterator Out, class Op>
  Out parallel_inclusive_scan(It first, It last, Out out, Op op, ScanGrain grain) {
    return wslab::parallel_inclusive_scan(scheduler_, first, last, out, std::move(op), grain);
  }
  template <std::random_access_iterator It, std::random_access_iterator Out, class Op, class T>
  Out parallel_inclusive_scan(It first, It last, Out out, Op op, T init, ScanGrain grain = {}) {
    return wslab::parallel_inclusive_scan(scheduler_, first, last, out, std::move(op),
                                          std::move(init), grain);
  }
  template <std::random_access_iterator It, std::random_access_iterator Out, class T,
            class Op = std::plus<>>
  Out parallel_exclusive_scan(It first, It last, Out out, T init, Op op = {},
                              ScanGrain grain = {}) {
    return wslab::parallel_exclusive_scan(scheduler_, first, last, out, std::move(init),
                                          std::move(op), grain);
  }
  template <SizedRandomAccessRange R, std::random_access_iterator Out, class Op = std::plus<>>
  Out parallel_inclusive_scan(R&& range, Out out, Op op = {}) {
    return wslab::parallel_inclusive_scan(scheduler_, range, out, std::move(op));
  }
  template <SizedRandomAccessRange R, std::random_access_iterator Out, class Op>
  Out parallel_inclusive_scan(R&& range, Out out, Op op, ScanGrain grain) {
    return wslab::parallel_inclusive_scan(scheduler_, range, out, std::move(op), grain);
  }
  template <SizedRandomAccessRange R, std::random_access_iterator Out, class Op, class T>
  Out parallel_inclusive_scan(R&& range, Out out, Op op, T init, ScanGrain grain = {}) {
    return wslab::parallel_inclusive_scan(scheduler_, range, out, std::move(op), std::move(init),
                                          grain);
  }
  template <SizedRandomAccessRange R, std::random_access_iterator Out, class T,
            class Op = std::plus<>>
  Out parallel_exclusive_scan(R&& range, Out out, T init, Op op = {}, ScanGrain grain = {}) {
    return wslab::parallel_exclusive_scan(scheduler_, range, out, std::move(init), std::move(op),
                                          grain);
  }

  // Runs fa() and fb(), potentially in parallel: auto [a, b] = pool.join(fa, fb). Two
  // void-returning callables give a void join.
  template <class A, class B>
  [[gnu::always_inline]] auto join(A&& fa, B&& fb) {
    return wslab::join(scheduler_, std::forward<A>(fa), std::forward<B>(fb));
  }

  // Runs root(w) with a WorkerRef w on this pool (fork_join/worker_ref.hpp): a recursion that
  // receives w and forks with w.join(a, b), each half taking a WorkerRef in turn, forks without
  // looking the worker up and without an optional or exception slot on the path nobody steals.
  // Returns what root returns, once everything it forked has finished; rethrows what it throws.
  template <class F>
    requires std::invocable<F&, WorkerRef>
  decltype(auto) with_worker(F&& root) {
    return wslab::with_worker(scheduler_, std::forward<F>(root));
  }

  // `co_await pool.schedule()` moves the calling coroutine onto one of this pool's workers
  // (coro/resume_on_pool.hpp).
  detail::ScheduleAwaiter schedule() noexcept { return wslab::schedule(scheduler_); }

  // Runs a CoTask on this pool and blocks until it has finished; returns its result or rethrows its
  // exception. A caller outside the workers sleeps meanwhile and runs no work itself, unlike
  // Future::get() (coro/sync_wait.hpp; the reference's sync_wait).
  template <class T>
  T run(CoTask<T> task) {
    return wslab::sync_wait(scheduler_, std::move(task));
  }

  template <std::random_access_iterator It>
  void parallel_sort(It first, It last) {
    wslab::parallel_sort(scheduler_, first, last);
  }
  template <std::random_access_iterator It, class Comp>
  void parallel_sort(It first, It last, Comp comp) {
    wslab::parallel_sort(scheduler_, first, last, std::move(comp));
  }
  // Like std::stable_sort: equal elements keep their order. A merge sort that allocates a buffer
  // as long as the range (it sorts in place, more slowly, if it cannot); see the header.
  template <std::random_access_iterator It, class Comp = std::less<>>
  void parallel_stable_sort(It first, It last, Comp comp = {}) {
    wslab::parallel_stable_sort(scheduler_, first, last, std::move(comp));
  }
  // The sorts over a sized random-access range that is not const.
  template <class R, class Comp = std::less<>>
    requires SortableRange<R>
  void parallel_sort(R&& range, Comp comp = {}) {
    wslab::parallel_sort(scheduler_, range, std::move(comp));
  }
  template <class R, class Comp = std::less<>>
    requires SortableRange<R>
  void parallel_stable_sort(R&& range, Comp comp = {}) {
    wslab::parallel_stable_sort(scheduler_, range, std::move(comp));
  }

  std::size_t size() const noexcept { return scheduler_.thread_count(); }
  // The calling thread's index among this pool's workers, in [0, size()); empty on other threads.
  std::optional<std::size_t> this_worker_index() const noexcept {
    return wslab::this_worker_index(scheduler_);
  }
  // The underlying pool, for TaskGroup and the free functions.
  IThreadPool& scheduler() noexcept { return scheduler_; }

 private:
  SchedulerType scheduler_;
};

inline TaskGroup::TaskGroup(ThreadPool& pool) : TaskGroup(pool.scheduler()) {}

}  // namespace wslab
