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
//   pool.parallel_sort(v.begin(), v.end());
//   pool.wait_all();                                   // idle; rethrows a spawned task's exception
//
// Every algorithm is also available as a free function over any wslab::IThreadPool (see the
// headers included below), which is how the lab runs them on every stage's pool.
#pragma once

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <functional>
#include <iterator>
#include <thread>
#include <type_traits>
#include <utility>

#include "../common/thread_pool.hpp"
#include "../common/worker_threads.hpp"
#include "future.hpp"
#include "help_bounds.hpp"
#include "join.hpp"
#include "parallel_for.hpp"
#include "parallel_reduce.hpp"
#include "parallel_sort.hpp"
#include "parallel_stable_sort.hpp"
#include "scheduler/scheduler.hpp"
#include "task_group.hpp"

namespace wslab {

class ThreadPool {
 public:
  // The scheduler underneath (scheduler/scheduler.hpp): on its workers join takes its
  // allocation-free path.
  using SchedulerType = wslab::Scheduler;

  // One worker per hardware thread.
  ThreadPool() : ThreadPool(std::max(1u, std::thread::hardware_concurrency())) {}

  // Throws std::invalid_argument for 0 or an absurd count. `options` carries the worker-start
  // hook (run on each worker before it takes work: CPU affinity, priorities, thread-local setup)
  // and the prefix of the OS thread names ("wslab-0", "wslab-1", ...).
  explicit ThreadPool(std::size_t num_threads, PoolOptions options = {})
      : scheduler_(num_threads, std::move(options)) {}

  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // Runs every task still queued (including tasks they spawn), then joins the workers.
  ~ThreadPool() = default;

  // Queues f() and returns at once. What f throws is rethrown by the next wait_all().
  template <class F>
  requires std::invocable < std::decay_t<F>
  & > void spawn(F&& f) { scheduler_.submit(Task(std::forward<F>(f))); }

  // Waits until no spawned task is queued or running, then rethrows the first exception a
  // spawned task threw since the last wait_all(). From inside a task it throws
  // std::logic_error (it would wait for itself): use a TaskGroup there.
  void wait_all() { scheduler_.wait_idle(); }

  // Runs f() on the pool; the future's get() returns the value or rethrows, and helps the pool
  // while it waits.
  template <class F>
  requires std::invocable < std::decay_t<F>
  & > auto async(F&& f) { return wslab::async(scheduler_, std::forward<F>(f)); }

  // f(element) for every element of [first, last), like std::for_each; grain 0 splits on
  // demand, a positive grain splits until pieces are at most that long.
  template <std::random_access_iterator It, class F>
  requires(!std::integral<It>) void parallel_for(It first, It last, F&& f, std::size_t grain = 0) {
    wslab::parallel_for(scheduler_, first, last, std::forward<F>(f), grain);
  }

  // f(index) for every index in [begin, end).
  template <std::integral Int, class F>
  void parallel_for(Int begin, Int end, F&& f, std::size_t grain = 0) {
    wslab::parallel_for(scheduler_, begin, end, std::forward<F>(f), grain);
  }

  // Same meaning as std::reduce(first, last, init, op): op associative and commutative.
  template <std::random_access_iterator It, class T, class Op>
  T parallel_reduce(It first, It last, T init, Op op) {
    return wslab::parallel_reduce(scheduler_, first, last, std::move(init), std::move(op));
  }

  // Runs fa() and fb(), potentially in parallel: auto [a, b] = pool.join(fa, fb). Two
  // void-returning callables give a void join.
  template <class A, class B>
  auto join(A&& fa, B&& fb) {
    return wslab::join(scheduler_, std::forward<A>(fa), std::forward<B>(fb));
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

  std::size_t size() const noexcept { return scheduler_.thread_count(); }
  // The underlying pool, for TaskGroup and the free functions.
  IThreadPool& scheduler() noexcept { return scheduler_; }

 private:
  SchedulerType scheduler_;
};

}  // namespace wslab
