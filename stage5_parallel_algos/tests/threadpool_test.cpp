// wslab::ThreadPool, the one-header API: exactly the calls the brief lists, as outside code uses
// them.
#include <gtest/gtest.h>
#include <pthread.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <new>
#include <numeric>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "stage5_parallel_algos/tests/algos_test_util.hpp"
#include "stage5_parallel_algos/tests/allocation_counter.hpp"
#include "stage5_parallel_algos/threadpool.hpp"

namespace wslab {
namespace {

using test::TestFailure;

std::uint64_t fib_join(IThreadPool& pool, int n) {
  if (n < 2) return static_cast<std::uint64_t>(n);
  auto [a, b] = join(
      pool, [&] { return fib_join(pool, n - 1); }, [&] { return fib_join(pool, n - 2); });
  return a + b;
}

// On a scheduler worker the forked half lives in the joining frame: no allocation at all,
// whether or not another worker steals some of the forks.
TEST(ThreadPool, JoinOnASchedulerWorkerDoesNotAllocate) {
  for (std::size_t threads : {1u, 2u}) {
    ThreadPool pool(threads);
    std::size_t allocations = 1;
    std::uint64_t result = 0;
    pool.spawn([&] {
      const std::size_t before = test::allocations_on_this_thread();
      result = fib_join(pool.scheduler(), 20);
      allocations = test::allocations_on_this_thread() - before;
    });
    pool.wait_all();
    EXPECT_EQ(result, 6765u);
    EXPECT_EQ(allocations, 0u) << threads << " threads";
  }
}

TEST(ThreadPool, SpawnAndWaitAllRunEveryTaskOnce) {
  ThreadPool pool(4);
  std::atomic<int> counter{0};
  for (int i = 0; i < 1000; i++)
    pool.spawn([&] { counter++; });
  pool.wait_all();
  EXPECT_EQ(counter.load(), 1000);
}

TEST(ThreadPool, WaitAllRethrowsASpawnedTasksException) {
  ThreadPool pool(2);
  std::atomic<int> ran{0};
  pool.spawn([] { throw TestFailure("spawned"); });
  for (int i = 0; i < 10; ++i)
    pool.spawn([&] { ran++; });
  EXPECT_THROW(pool.wait_all(), TestFailure);
  EXPECT_EQ(ran.load(), 10);
  EXPECT_NO_THROW(pool.wait_all());
}

TEST(ThreadPool, AsyncGetReturnsOrRethrows) {
  ThreadPool pool(2);
  auto answer = pool.async([] { return 6 * 7; });
  EXPECT_EQ(answer.get(), 42);
  auto failing = pool.async([]() -> int { throw TestFailure("async"); });
  EXPECT_THROW(failing.get(), TestFailure);
}

TEST(ThreadPool, ParallelForOnIteratorsAndIndices) {
  ThreadPool pool(2);
  std::vector<double> v(10'000);
  std::iota(v.begin(), v.end(), 0.0);
  pool.parallel_for(v.begin(), v.end(), [](double& x) { x = x * 2; });
  for (std::size_t i = 0; i < v.size(); ++i)
    ASSERT_EQ(v[i], 2.0 * static_cast<double>(i));
  std::vector<int> hits(1000);
  pool.parallel_for(0, 1000, [&](int i) { hits[static_cast<std::size_t>(i)]++; });
  pool.parallel_for(
      0, 1000, [&](int i) { hits[static_cast<std::size_t>(i)]++; }, 16);
  for (int h : hits)
    ASSERT_EQ(h, 2);
}

TEST(ThreadPool, ParallelReduceMeansStdReduce) {
  ThreadPool pool(2);
  std::vector<std::int64_t> v(100'000);
  std::iota(v.begin(), v.end(), 1);
  EXPECT_EQ(pool.parallel_reduce(v.begin(), v.end(), std::int64_t{10}, std::plus<>{}),
            std::reduce(v.begin(), v.end(), std::int64_t{10}, std::plus<>{}));
}

TEST(ThreadPool, JoinReturnsAPairOrVoid) {
  ThreadPool pool(2);
  auto [a, b] = pool.join([] { return 1; }, [] { return std::string("two"); });
  EXPECT_EQ(a, 1);
  EXPECT_EQ(b, "two");
  int x = 0, y = 0;
  pool.join([&] { x = 1; }, [&] { y = 2; });
  EXPECT_EQ(x + y, 3);
}

TEST(ThreadPool, ParallelSortWithAndWithoutComparator) {
  ThreadPool pool(2);
  std::vector<int> v(200'000);
  for (std::size_t i = 0; i < v.size(); ++i)
    v[i] = static_cast<int>((i * 7919) % 100'003);
  std::vector<int> expected = v;
  std::sort(expected.begin(), expected.end());
  pool.parallel_sort(v.begin(), v.end());
  EXPECT_EQ(v, expected);
  pool.parallel_sort(v.begin(), v.end(), std::greater<>{});
  std::reverse(expected.begin(), expected.end());
  EXPECT_EQ(v, expected);
}

// Stable: records with equal keys keep their order (the key is the value modulo 10).
TEST(ThreadPool, ParallelStableSortKeepsEqualKeysInOrder) {
  ThreadPool pool(2);
  std::vector<int> v(200'000);
  for (std::size_t i = 0; i < v.size(); ++i)
    v[i] = static_cast<int>((i * 7919) % 100'003);
  const auto by_last_digit = [](int a, int b) { return a % 10 < b % 10; };
  std::vector<int> expected = v;
  std::stable_sort(expected.begin(), expected.end(), by_last_digit);
  pool.parallel_stable_sort(v.begin(), v.end(), by_last_digit);
  EXPECT_EQ(v, expected);
  pool.parallel_stable_sort(v.begin(), v.end());
  EXPECT_TRUE(std::is_sorted(v.begin(), v.end()));
}

TEST(ThreadPool, WorkerStartHookAndThreadNames) {
  std::mutex mutex;
  std::set<std::size_t> started;
  std::set<std::string> names;
  PoolOptions options;
  options.thread_name_prefix = "algo";
  options.on_worker_start = [&](std::size_t index) {
    char name[16] = {};
    pthread_getname_np(pthread_self(), name, sizeof(name));
    std::lock_guard<std::mutex> lock(mutex);
    started.insert(index);
    names.insert(name);
  };
  {
    ThreadPool pool(3, options);
    pool.wait_all();
  }  // joined: every hook has run
  EXPECT_EQ(started, (std::set<std::size_t>{0, 1, 2}));
  EXPECT_EQ(names, (std::set<std::string>{"algo-0", "algo-1", "algo-2"}));
}

TEST(ThreadPool, RejectsZeroThreads) {
  EXPECT_THROW(ThreadPool pool(0), std::invalid_argument);
  ThreadPool defaulted;
  EXPECT_GE(defaulted.size(), 1u);
}

}  // namespace
}  // namespace wslab
