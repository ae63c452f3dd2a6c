// join, TaskGroup, futures and the help-while-waiting policy, on every registered pool.
#include <gtest/gtest.h>
#include <pthread.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "stage5_parallel_algos/fork_join/help_bounds.hpp"
#include "stage5_parallel_algos/fork_join/join.hpp"
#include "stage5_parallel_algos/fork_join/task_group.hpp"
#include "stage5_parallel_algos/futures/future.hpp"
#include "stage5_parallel_algos/scheduler/scheduler.hpp"
#include "stage5_parallel_algos/tests/algos_test_util.hpp"

namespace wslab {
namespace {

using test::OnEveryPool;
using test::scaled;
using test::TestFailure;
using test::VisitCounts;

std::uint64_t fib_join(IThreadPool& pool, int n) {
  if (n < 2) return static_cast<std::uint64_t>(n);
  auto [a, b] = join(
      pool, [&] { return fib_join(pool, n - 1); }, [&] { return fib_join(pool, n - 2); });
  return a + b;
}

constexpr std::uint64_t fib_seq(int n) {
  return n < 2 ? static_cast<std::uint64_t>(n) : fib_seq(n - 1) + fib_seq(n - 2);
}

// A chain of `depth` joins, each nested in the previous one's first branch: the program's own
// recursion is `depth` frames deep. Returns depth.
std::size_t join_chain(IThreadPool& pool, std::size_t depth) {
  if (depth == 0) return 0;
  auto [below, one] = join(
      pool, [&] { return join_chain(pool, depth - 1); }, [] { return std::size_t{1}; });
  return below + one;
}

// The same, nested through the forked (second) branch, which the waiter takes back inline.
std::size_t join_chain_through_fork(IThreadPool& pool, std::size_t depth) {
  if (depth == 0) return 0;
  auto [one, below] = join(
      pool, [] { return std::size_t{1}; },
      [&] { return join_chain_through_fork(pool, depth - 1); });
  return one + below;
}

class Join : public OnEveryPool {};
class Group : public OnEveryPool {};
class Futures : public OnEveryPool {};
class HelpPolicy : public OnEveryPool {};

TEST_P(Join, SmokeReturnsBothResults) {
  auto pool = make(2);
  auto [a, b] = join(
      *pool, [] { return 6; }, [] { return std::string("seven"); });
  EXPECT_EQ(a, 6);
  EXPECT_EQ(b, "seven");
}

TEST_P(Join, VoidBranchesGiveVoidJoinAndBothRun) {
  auto pool = make(2);
  std::atomic<int> ran{0};
  join(
      *pool, [&] { ran += 1; }, [&] { ran += 10; });
  EXPECT_EQ(ran.load(), 11);
  static_assert(std::is_void_v<decltype(join(
                    *pool, [] {}, [] {}))>);
}

TEST_P(Join, FibMatchesSequentialFromOutsideAndFromATask) {
  for (std::size_t threads : {1u, 2u, 4u}) {
    auto pool = make(threads);
    const int n = kSanitized ? 16 : 22;
    EXPECT_EQ(fib_join(*pool, n), fib_seq(n)) << threads << " threads, from outside";
    std::atomic<std::uint64_t> inside{0};
    pool->submit([&] { inside = fib_join(*pool, n); });
    pool->wait_idle();
    EXPECT_EQ(inside.load(), fib_seq(n)) << threads << " threads, from a task";
  }
}

TEST_P(Join, ExceptionFromEitherBranchPropagatesAndTheOtherBranchStillRuns) {
  auto pool = make(2);
  std::atomic<int> b_ran{0};
  EXPECT_THROW(join(
                   *pool, [] { throw TestFailure("a"); }, [&] { b_ran++; }),
               TestFailure);
  EXPECT_EQ(b_ran.load(), 1);
  std::atomic<int> a_ran{0};
  EXPECT_THROW(join(
                   *pool, [&] { a_ran++; }, [] { throw TestFailure("b"); }),
               TestFailure);
  EXPECT_EQ(a_ran.load(), 1);
  // Both throw: a's wins.
  try {
    join(
        *pool, [] { throw TestFailure("a"); }, [] { throw TestFailure("b"); });
    FAIL() << "join swallowed both exceptions";
  } catch (const TestFailure& e) {
    EXPECT_STREQ(e.what(), "a");
  }
  pool->wait_idle();  // nothing leaked into the pool's own error slot
}

TEST_P(Join, ConcurrentJoinsFromEightExternalThreads) {
  auto pool = make(2);
  const int n = kSanitized ? 12 : 18;
  std::vector<std::thread> callers;
  std::atomic<int> correct{0};
  for (int t = 0; t < 8; ++t) {
    callers.emplace_back([&] { correct += fib_join(*pool, n) == fib_seq(n); });
  }
  for (std::thread& t : callers)
    t.join();
  EXPECT_EQ(correct.load(), 8);
}

// The program's own recursion, 100,000 joins deep, does not fit in an 8 MiB stack at this frame
// size: the policy moves it to a fresh stack when three quarters are used. ThreadSanitizer's cost
// grows faster than linearly with stack depth (30,000 levels took 5.7 GB and 50 s), so it gets a
// shallower chain; the small-stack test below still drives the fresh-stack path under it.
TEST_P(Join, DeepRecursionOfJoinsDoesNotOverflowTheStack) {
  const std::size_t depth = WSLAB_TSAN ? 3'000 : 100'000;
  for (std::size_t threads : {1u, 2u}) {
    auto pool = make(threads);
    EXPECT_EQ(join_chain(*pool, depth), depth) << threads << " threads, outside";
    EXPECT_EQ(join_chain_through_fork(*pool, depth), depth) << threads << " threads, outside";
    std::atomic<std::size_t> inside{0}, inside_fork{0};
    pool->submit([&] {
      inside = join_chain(*pool, depth);
      inside_fork = join_chain_through_fork(*pool, depth);
    });
    pool->wait_idle();
    EXPECT_EQ(inside.load(), depth) << threads << " threads, in a task";
    EXPECT_EQ(inside_fork.load(), depth) << threads << " threads, in a task";
  }
}

// Runs f on a thread whose stack is only `bytes` big.
template <class F>
void run_on_small_stack(std::size_t bytes, F f) {
  pthread_attr_t attr;
  ASSERT_EQ(pthread_attr_init(&attr), 0);
  ASSERT_EQ(pthread_attr_setstacksize(&attr, bytes), 0);
  pthread_t thread;
  auto body = [](void* arg) -> void* {
    (*static_cast<F*>(arg))();
    return nullptr;
  };
  ASSERT_EQ(pthread_create(&thread, &attr, body, &f), 0);
  pthread_join(thread, nullptr);
  pthread_attr_destroy(&attr);
}

TEST_P(Join, RecursionDeeperThanASmallStackMovesToAFreshOne) {
  auto pool = make(2);
  const std::size_t depth = kSanitized ? 2'000 : 20'000;  // far beyond 256 KiB at any frame size
  std::size_t result = 0, result_fork = 0;
  run_on_small_stack(256 * 1024, [&] {
    result = join_chain(*pool, depth);
    result_fork = join_chain_through_fork(*pool, depth);
  });
  EXPECT_EQ(result, depth);
  EXPECT_EQ(result_fork, depth);
}

TEST_P(Group, ManyTasksRunExactlyOnce) {
  auto pool = make(2);
  const std::size_t n = scaled(100'000, 5'000);
  VisitCounts counts(n);
  TaskGroup group(*pool);
  for (std::size_t i = 0; i < n; ++i)
    group.run([&counts, i] { counts.mark(i); });
  group.wait();
  counts.expect_each_once();
}

TEST_P(Group, NestedGroupsInsideTasksNeverDeadlockEvenOnOneThread) {
  for (std::size_t threads : {1u, 2u}) {
    auto pool = make(threads);
    const std::size_t outer = 20, middle = 10, inner = 10;
    VisitCounts counts(outer * middle * inner);
    pool->submit([&] {
      TaskGroup g1(*pool);
      for (std::size_t i = 0; i < outer; ++i) {
        g1.run([&, i] {
          TaskGroup g2(*pool);
          for (std::size_t j = 0; j < middle; ++j) {
            g2.run([&, i, j] {
              TaskGroup g3(*pool);
              for (std::size_t k = 0; k < inner; ++k) {
                g3.run([&, i, j, k] { counts.mark((i * middle + j) * inner + k); });
              }
              g3.wait();
            });
          }
          g2.wait();
        });
      }
      g1.wait();
    });
    pool->wait_idle();
    counts.expect_each_once();
  }
}

TEST_P(Group, TasksMayAddWorkToTheirOwnGroup) {
  auto pool = make(2);
  const std::size_t n = scaled(10'000, 1'000);
  VisitCounts counts(n);
  TaskGroup group(*pool);
  // A binary tree of run() calls made from inside the group's own tasks.
  std::function<void(std::size_t)> spread = [&](std::size_t i) {
    counts.mark(i);
    for (std::size_t child : {2 * i + 1, 2 * i + 2}) {
      if (child < n) group.run([&spread, child] { spread(child); });
    }
  };
  group.run([&] { spread(0); });
  group.wait();
  counts.expect_each_once();
}

TEST_P(Group, FirstExceptionIsRethrownOthersCountedAndNoTaskSkipped) {
  auto pool = make(2);
  const std::size_t n = 1000;
  VisitCounts counts(n);
  TaskGroup group(*pool);
  for (std::size_t i = 0; i < n; ++i) {
    group.run([&counts, i] {
      counts.mark(i);
      if (i % 100 == 0) throw TestFailure("task " + std::to_string(i));
    });
  }
  EXPECT_THROW(group.wait(), TestFailure);
  counts.expect_each_once();
  EXPECT_EQ(group.dropped_exceptions(), 9u);
  // The group is reusable and the error was consumed.
  std::atomic<int> again{0};
  group.run([&] { again++; });
  EXPECT_NO_THROW(group.wait());
  EXPECT_EQ(again.load(), 1);
  pool->wait_idle();  // group exceptions never reach the pool's own error slot
}

TEST_P(Group, RepeatedRunWaitCycles) {
  auto pool = make(2);
  TaskGroup group(*pool);
  std::atomic<std::size_t> total{0};
  const std::size_t cycles = scaled(2'000, 200);
  for (std::size_t c = 0; c < cycles; ++c) {
    for (int i = 0; i < 3; ++i)
      group.run([&] { total++; });
    group.wait();
    ASSERT_EQ(total.load(), 3 * (c + 1)) << "wait() returned before its tasks finished";
  }
}

TEST_P(Group, DestructorWaitsForUnwaitedTasks) {
  auto pool = make(2);
  std::atomic<int> done{0};
  {
    TaskGroup group(*pool);
    for (int i = 0; i < 100; ++i)
      group.run([&] { done++; });
  }
  EXPECT_EQ(done.load(), 100);
}

TEST_P(Futures, AsyncCarriesValuesVoidAndExceptions) {
  auto pool = make(2);
  EXPECT_EQ(async(*pool, [] { return 42; }).get(), 42);
  std::atomic<int> ran{0};
  async(*pool, [&] { ran++; }).get();
  EXPECT_EQ(ran.load(), 1);
  auto failing = async(*pool, []() -> int { throw TestFailure("boom"); });
  EXPECT_THROW(failing.get(), TestFailure);
  EXPECT_FALSE(failing.valid());
  EXPECT_THROW(failing.get(), std::logic_error);
  pool->wait_idle();
}

TEST_P(Futures, MoveOnlyResults) {
  auto pool = make(2);
  auto f = async(*pool, [] { return std::make_unique<int>(7); });
  EXPECT_EQ(*f.get(), 7);
}

TEST_P(Futures, ThenChainsAndSkipsAfterAFailure) {
  auto pool = make(2);
  auto f = async(*pool, [] { return 20; }).then([](int x) { return x + 1; }).then([](int x) {
    return std::to_string(x * 2);
  });
  EXPECT_EQ(f.get(), "42");
  std::atomic<int> continuation_ran{0};
  auto g = async(*pool, []() -> int { throw TestFailure("first"); }).then([&](int x) {
    continuation_ran++;
    return x;
  });
  EXPECT_THROW(g.get(), TestFailure);
  EXPECT_EQ(continuation_ran.load(), 0);
  auto h = async(*pool, [] {}).then([] { return 5; });
  EXPECT_EQ(h.get(), 5);
}

TEST_P(Futures, WhenAllKeepsInputOrderAndCarriesTheFirstFailure) {
  auto pool = make(2);
  std::vector<Future<int>> inputs;
  for (int i = 0; i < 100; ++i)
    inputs.push_back(async(*pool, [i] { return i * i; }));
  std::vector<int> squares = when_all(std::move(inputs)).get();
  ASSERT_EQ(squares.size(), 100u);
  for (int i = 0; i < 100; ++i)
    EXPECT_EQ(squares[i], i * i);

  std::vector<Future<void>> voids;
  std::atomic<int> ran{0};
  for (int i = 0; i < 10; ++i) {
    voids.push_back(async(*pool, [&, i] {
      ran++;
      if (i == 3) throw TestFailure("three");
      if (i == 7) throw std::runtime_error("seven");
    }));
  }
  try {
    when_all(std::move(voids)).get();
    FAIL() << "when_all lost the failures";
  } catch (const TestFailure& e) {
    EXPECT_STREQ(e.what(), "three");
  }
  EXPECT_EQ(ran.load(), 10);
  EXPECT_THROW(when_all(std::vector<Future<int>>{}), std::invalid_argument);
}

TEST_P(Futures, GetFromInsideATaskOnOneThreadHelpsInsteadOfDeadlocking) {
  auto pool = make(1);
  std::atomic<int> result{0};
  pool->submit([&] {
    auto a = async(*pool, [] { return 1; });
    auto b = async(*pool, [] { return 2; }).then([](int x) { return x * 10; });
    std::vector<Future<int>> both;
    both.push_back(std::move(a));
    both.push_back(std::move(b));
    auto all = when_all(std::move(both)).then([](std::vector<int> v) { return v[0] + v[1]; });
    result = all.get();
  });
  pool->wait_idle();
  EXPECT_EQ(result.load(), 21);
}

TEST_P(HelpPolicy, HelpingStopsAtTheDepthBound) {
  auto pool = make(1);
  std::atomic<bool> release{false}, started{false};
  std::atomic<int> ran_here{0};
  // Keep the only worker busy so that the queued task below can only be run by a helper.
  pool->submit([&] {
    started.store(true, std::memory_order_release);
    started.notify_all();
    release.wait(false, std::memory_order_acquire);
  });
  started.wait(false, std::memory_order_acquire);
  const auto me = std::this_thread::get_id();
  pool->submit([&, me] { ran_here += std::this_thread::get_id() == me; });
  detail::help_depth = kMaxHelpDepth;
  EXPECT_FALSE(help_allowed());
  EXPECT_FALSE(help_once(*pool)) << "helped past the depth bound";
  detail::help_depth = 0;
  EXPECT_TRUE(help_allowed());
  release.store(true, std::memory_order_release);
  release.notify_all();
  pool->wait_idle();
  EXPECT_EQ(ran_here.load(), 0);
}

// Past the bound a waiter takes no foreign task, but its own work must still get done, or a
// 1-thread pool would deadlock: groups, joins and futures all run their own work inline.
TEST_P(HelpPolicy, WaitersPastTheBoundStillFinishOnOneThread) {
  auto pool = make(1);
  std::atomic<int> total{0};
  pool->submit([&] {
    detail::help_depth = kMaxHelpDepth;
    TaskGroup group(*pool);
    for (int i = 0; i < 10; ++i) {
      group.run([&] {
        TaskGroup inner(*pool);
        inner.run([&] { total += 1; });
        inner.wait();
      });
    }
    group.wait();
    auto [a, b] = join(
        *pool, [] { return 100; }, [] { return 1000; });
    total += a + b;
    total += async(*pool, [] { return 10000; }).then([](int x) { return x; }).get();
    detail::help_depth = 0;
  });
  pool->wait_idle();
  EXPECT_EQ(total.load(), 11110);
}

// A backlog of waiting tasks on few workers is what nests helpers; the depth stays bounded.
TEST_P(HelpPolicy, NestedHelpingStaysWithinTheBound) {
  auto pool = make(2);
  std::atomic<std::size_t> deepest{0};
  const std::size_t tasks = scaled(2'000, 200);
  for (std::size_t i = 0; i < tasks; ++i) {
    pool->submit([&] {
      std::size_t seen = current_help_depth();
      std::size_t prev = deepest.load();
      while (seen > prev && !deepest.compare_exchange_weak(prev, seen)) {
      }
      TaskGroup group(*pool);
      for (int k = 0; k < 4; ++k)
        group.run([] { std::this_thread::yield(); });
      group.wait();
    });
  }
  pool->wait_idle();
  EXPECT_LE(deepest.load(), kMaxHelpDepth);
}

// The scheduler's guest seat: an outside join runs its first branch on the calling thread (seated
// as a guest), and the seat is free again afterwards; a second outside caller meanwhile takes the
// hand-off path. Both give the same results.
TEST(SchedulerGuestJoin, OutsideJoinRunsItsFirstBranchOnTheCaller) {
  Scheduler pool(2);
  const std::thread::id caller = std::this_thread::get_id();
  for (int round = 0; round < 100; ++round) {
    auto [a_here, b_sum] = join(
        pool, [&] { return std::this_thread::get_id() == caller && pool.owns_current_thread(); },
        [] {
          int sum = 0;
          for (int i = 1; i <= 100; ++i)
            sum += i;
          return sum;
        });
    ASSERT_TRUE(a_here);
    ASSERT_EQ(b_sum, 5050);
    ASSERT_FALSE(pool.owns_current_thread());
  }
  // While this thread holds the seat, another outside caller's join is handed to the workers.
  Scheduler::GuestSeat seat = Scheduler::ForkJoinHandle(pool).try_seat_guest();
  ASSERT_TRUE(seat);
  bool other_ran_on_its_own_thread = true;
  std::thread([&] {
    const std::thread::id me = std::this_thread::get_id();
    auto [a_here, unused] = join(
        pool, [&] { return std::this_thread::get_id() == me; }, [] { return 0; });
    other_ran_on_its_own_thread = a_here;
  }).join();
  EXPECT_FALSE(other_ran_on_its_own_thread);
}

WSLAB_INSTANTIATE_ON_EVERY_POOL(Join);
WSLAB_INSTANTIATE_ON_EVERY_POOL(Group);
WSLAB_INSTANTIATE_ON_EVERY_POOL(Futures);
WSLAB_INSTANTIATE_ON_EVERY_POOL(HelpPolicy);

}  // namespace
}  // namespace wslab
