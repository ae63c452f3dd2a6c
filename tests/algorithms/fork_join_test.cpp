// join, TaskGroup, futures and the help-while-waiting policy, on every registered pool (a join on
// stage 5's scheduler as an object: stage5_parallel_algos/tests/fork_join_test.cpp).
#include <gtest/gtest.h>
#include <pthread.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "stage5_parallel_algos/fork_join/help_bounds.hpp"
#include "stage5_parallel_algos/fork_join/join.hpp"
#include "stage5_parallel_algos/fork_join/task_group.hpp"
#include "stage5_parallel_algos/futures/future.hpp"
#include "stage5_parallel_algos/tests/algos_test_util.hpp"
#include "tests/on_every_pool.hpp"

namespace wslab {
namespace {

using test::OnEveryPool;
using test::scaled;
using test::TestFailure;
using test::VisitCounts;

std::uint64_t fib_join(IThreadPool& pool, int n) {
  if (n < 2) return static_cast<std::uint64_t>(n);
  auto [a, b] =
      join(pool, [&] { return fib_join(pool, n - 1); }, [&] { return fib_join(pool, n - 2); });
  return a + b;
}

constexpr std::uint64_t fib_seq(int n) {
  return n < 2 ? static_cast<std::uint64_t>(n) : fib_seq(n - 1) + fib_seq(n - 2);
}

// A chain of `depth` joins, each nested in the previous one's first branch: the program's own
// recursion is `depth` frames deep. Returns depth.
std::size_t join_chain(IThreadPool& pool, std::size_t depth) {
  if (depth == 0) return 0;
  auto [below, one] =
      join(pool, [&] { return join_chain(pool, depth - 1); }, [] { return std::size_t{1}; });
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

// Yields until `started` is set or about a millisecond has passed: a moment for another thread
// to take the callable just queued, so that a chain's levels alternate between threads. The
// program does not need it (past the moment, the waiter runs its callable itself); it makes the
// interleaving that nests every thread past the help bounds the likely one.
void let_another_thread_take_it(const std::atomic<bool>& started) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(1);
  while (!started.load(std::memory_order_acquire) && std::chrono::steady_clock::now() < until)
    std::this_thread::yield();
}

// A chain of `depth` task groups waited from the calling thread: each level's group has one
// callable, which marks its level and runs the next level's group inside itself. Every wait is
// structured (a callable waits only for the group it made). With `alternate`, each level gives
// its callable a moment to be taken by another thread before it waits.
void group_chain(IThreadPool& pool, std::size_t depth, VisitCounts& counts,
                 bool alternate = false) {
  if (depth == 0) return;
  TaskGroup group(pool);
  std::atomic<bool> started{false};
  group.run([&pool, &counts, &started, depth, alternate] {
    started.store(true, std::memory_order_release);
    counts.mark(depth - 1);
    group_chain(pool, depth - 1, counts, alternate);
  });
  if (alternate) let_another_thread_take_it(started);
  group.wait();
}

// The same with groups and joins alternating: a join level marks itself in its first branch and
// continues the chain in its forked one.
void group_and_join_chain(IThreadPool& pool, std::size_t depth, VisitCounts& counts) {
  if (depth == 0) return;
  if (depth % 2 == 0) {
    TaskGroup group(pool);
    group.run([&pool, &counts, depth] {
      counts.mark(depth - 1);
      group_and_join_chain(pool, depth - 1, counts);
    });
    group.wait();
  } else {
    join(
        pool, [&counts, depth] { counts.mark(depth - 1); },
        [&pool, &counts, depth] { group_and_join_chain(pool, depth - 1, counts); });
  }
}

// Runs f() on a thread of its own and waits at most `limit` for it. A structured program that
// has not finished by then is hung, and a hung pool cannot be destroyed: the test says what hung
// and ends the process (a failure, not a stuck test run).
template <class F>
void expect_finishes_within(std::chrono::seconds limit, const std::string& what, F f) {
  struct Done {
    std::mutex mutex;
    std::condition_variable cv;
    bool done = false;
  };
  auto done = std::make_shared<Done>();  // the runner may outlive this frame only if it hangs
  std::thread runner([done, &f] {
    f();
    std::lock_guard<std::mutex> lock(done->mutex);
    done->done = true;
    done->cv.notify_all();
  });
  {
    std::unique_lock<std::mutex> lock(done->mutex);
    if (!done->cv.wait_for(lock, limit, [&] { return done->done; })) {
      std::fprintf(stderr, "FAILED (hang): %s did not finish within %lld s\n", what.c_str(),
                   static_cast<long long>(limit.count()));
      std::fflush(stderr);
      std::_Exit(1);
    }
  }
  runner.join();
}

// `callers` outside threads at once, each running both chains `depth` deep; every callable runs
// exactly once.
void run_chains_from_outside(IThreadPool& pool, std::size_t callers, std::size_t depth,
                             bool past_the_bound) {
  std::vector<std::unique_ptr<VisitCounts>> groups, mixed;
  for (std::size_t c = 0; c < callers; ++c) {
    groups.push_back(std::make_unique<VisitCounts>(depth));
    mixed.push_back(std::make_unique<VisitCounts>(depth));
  }
  std::vector<std::thread> threads;
  for (std::size_t c = 0; c < callers; ++c) {
    threads.emplace_back([&, c] {
      if (past_the_bound) detail::this_fork_join_thread.help_depth = kMaxHelpDepth;
      group_chain(pool, depth, *groups[c]);
      group_and_join_chain(pool, depth, *mixed[c]);
    });
  }
  for (std::thread& t : threads)
    t.join();
  for (std::size_t c = 0; c < callers; ++c) {
    groups[c]->expect_each_once();
    mixed[c]->expect_each_once();
  }
}

class Join : public OnEveryPool {};
class Group : public OnEveryPool {};
class Futures : public OnEveryPool {};
class HelpPolicy : public OnEveryPool {};

TEST_P(Join, SmokeReturnsBothResults) {
  auto pool = make(2);
  auto [a, b] = join(*pool, [] { return 6; }, [] { return std::string("seven"); });
  EXPECT_EQ(a, 6);
  EXPECT_EQ(b, "seven");
}

TEST_P(Join, VoidBranchesGiveVoidJoinAndBothRun) {
  auto pool = make(2);
  std::atomic<int> ran{0};
  join(*pool, [&] { ran += 1; }, [&] { ran += 10; });
  EXPECT_EQ(ran.load(), 11);
  static_assert(std::is_void_v<decltype(join(*pool, [] {}, [] {}))>);
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
  EXPECT_THROW(join(*pool, [] { throw TestFailure("a"); }, [&] { b_ran++; }), TestFailure);
  EXPECT_EQ(b_ran.load(), 1);
  std::atomic<int> a_ran{0};
  EXPECT_THROW(join(*pool, [&] { a_ran++; }, [] { throw TestFailure("b"); }), TestFailure);
  EXPECT_EQ(a_ran.load(), 1);
  // Both throw: a's wins.
  try {
    join(*pool, [] { throw TestFailure("a"); }, [] { throw TestFailure("b"); });
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
// size (about 300 bytes a level at -O3, 27 MB in all): the policy moves it to a fresh stack when
// three quarters are used. Under AddressSanitizer at -O0 a level takes about 6 KB, so 5,000
// levels (30 MB) overflow the stack as many times over. Under ThreadSanitizer the chain's cost
// grows about as the square of its depth (3,000 levels take 24 to 42 s per pool of stages 1 to 4,
// 1,000 levels 3.5 to 6.5 s), so it gets 1,000 levels, still far past the help bounds
// (kMaxHelpDepth, 64); the small-stack test below drives the fresh-stack path under it.
TEST_P(Join, DeepRecursionOfJoinsDoesNotOverflowTheStack) {
  const std::size_t depth = WSLAB_TSAN ? 1'000 : WSLAB_ASAN ? 5'000 : 100'000;
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

// TaskGroup() names no pool: on a stage-5 pool's worker it finds that pool (current_pool.hpp); a
// worker of any other pool knows its pool only by an untyped address, so there it throws
// std::logic_error rather than guess, and so does join(a, b) without a pool.
TEST_P(Group, ADefaultConstructedGroupFindsOnlyAStage5Pool) {
  auto pool = make(2);
  const bool stage5 = sched::fork_join_host(*pool) != nullptr;
  std::atomic<int> ran{0}, threw{0};
  pool->submit([&] {
    try {
      TaskGroup group;
      for (int i = 0; i < 10; ++i)
        group.run([&ran] { ran.fetch_add(1); });
      group.wait();
    } catch (const std::logic_error&) {
      threw.fetch_add(1);
    }
    try {
      join([&ran] { ran.fetch_add(1); }, [&ran] { ran.fetch_add(1); });
    } catch (const std::logic_error&) {
      threw.fetch_add(1);
    }
  });
  pool->wait_idle();
  EXPECT_EQ(ran.load(), stage5 ? 12 : 0);
  EXPECT_EQ(threw.load(), stage5 ? 0 : 2);
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

// A callable whose copy throws when `fail` is set: run() of an lvalue copies it.
struct CopyMayThrow {
  std::atomic<int>* runs;
  const std::atomic<bool>* fail;
  CopyMayThrow(std::atomic<int>* r, const std::atomic<bool>* f) : runs(r), fail(f) {}
  CopyMayThrow(const CopyMayThrow& other) : runs(other.runs), fail(other.fail) {
    if (fail->load()) throw TestFailure("copy");
  }
  void operator()() const { runs->fetch_add(1); }
};

// run() throws what the copy threw and queues nothing; the group's other callables run once each
// and wait() returns (the count took the failed run() back). From outside the pool (a listed
// callable on the scheduler) and inside a task (a task node on its worker).
TEST_P(Group, ACallableWhoseCopyThrowsIsNotQueuedAndTheOthersRun) {
  auto pool = make(2);
  std::atomic<int> runs{0};
  std::atomic<bool> fail{false};
  const CopyMayThrow callable(&runs, &fail);
  auto round = [&] {
    TaskGroup group(*pool);
    for (int i = 0; i < 12; ++i) {
      fail.store(i % 3 == 1);
      if (i % 3 == 1) {
        EXPECT_THROW(group.run(callable), TestFailure);
      } else {
        group.run(callable);
      }
    }
    fail.store(false);
    group.wait();
  };
  round();
  EXPECT_EQ(runs.load(), 8);
  pool->submit(round);
  pool->wait_idle();
  EXPECT_EQ(runs.load(), 16);
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

// One thread outside a one-worker pool runs a chain of task groups 200 deep, its levels
// alternating between the two threads (each takes the callable the other just queued, as a
// helper), so that both nest past the help bounds (64 helps). Each must still reach its own
// unstarted callables wherever they are queued (the outside thread's are in the injector), or
// both sleep for good, each waiting for a callable under the other's blocked frame. Then the
// same chain without the nudge, many times over.
TEST_P(Group, StructuredChainFromOutsideThreadPastHelpBoundFinishes) {
  auto pool = make(1);
  const std::size_t depth = 200;
  expect_finishes_within(std::chrono::seconds(120), GetParam() + ": a 200-deep group chain", [&] {
    for (bool alternate : {true, false}) {
      const std::size_t rounds = alternate ? 3 : scaled(500, 50);
      for (std::size_t r = 0; r < rounds; ++r) {
        VisitCounts counts(depth);
        group_chain(*pool, depth, counts, alternate);
        counts.expect_each_once();
      }
    }
  });
}

// Groups nested 10,000 deep, and groups alternating with joins, waited from one and from two
// outside threads at once on a one-thread pool: they finish and run each callable once. The
// recursion is the program's own; it outgrows every help bound, and moves to a fresh stack
// whenever three quarters of a thread's stack is used. ThreadSanitizer gets shallower chains:
// its frames fill a stack sooner, each move starts a thread, and TSan keeps what it allocated for
// every thread a process started (at 2,000 levels this test alone took the suite's process past
// 12 GB).
TEST_P(Group, NestedGroupsAndJoinsTenThousandDeepFromOutsideThreadsFinish) {
  auto pool = make(1);
  const std::size_t depth = WSLAB_TSAN ? 400 : 10'000;
  for (std::size_t callers : {1u, 2u}) {
    expect_finishes_within(std::chrono::seconds(600),
                           GetParam() + ": chains " + std::to_string(depth) + " deep from " +
                               std::to_string(callers) + " outside thread(s)",
                           [&] { run_chains_from_outside(*pool, callers, depth, false); });
  }
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
  detail::this_fork_join_thread.help_depth = kMaxHelpDepth;
  EXPECT_FALSE(help_allowed());
  EXPECT_FALSE(help_once(*pool)) << "helped past the depth bound";
  detail::this_fork_join_thread.help_depth = 0;
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
    detail::this_fork_join_thread.help_depth = kMaxHelpDepth;
    TaskGroup group(*pool);
    for (int i = 0; i < 10; ++i) {
      group.run([&] {
        TaskGroup inner(*pool);
        inner.run([&] { total += 1; });
        inner.wait();
      });
    }
    group.wait();
    auto [a, b] = join(*pool, [] { return 100; }, [] { return 1000; });
    total += a + b;
    total += async(*pool, [] { return 10000; }).then([](int x) { return x; }).get();
    detail::this_fork_join_thread.help_depth = 0;
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

// The help bound never turns a structured program into a hang: with every thread past it from
// the start (the two outside callers, and the pool's one worker, set by a task it runs), the
// chains above still finish, each callable once. Past the bound a waiter runs only its own
// unstarted work, and it reaches all of it wherever it is queued; whatever it cannot reach has
// started on another thread.
TEST_P(HelpPolicy, StructuredWaitsPastTheBoundNeverHang) {
  auto pool = make(1);
  pool->submit([] { detail::this_fork_join_thread.help_depth = kMaxHelpDepth; });
  pool->wait_idle();
  const std::size_t depth = WSLAB_TSAN ? 500 : 2'000;
  expect_finishes_within(std::chrono::seconds(600), GetParam() + ": chains past the help bound",
                         [&] { run_chains_from_outside(*pool, 2, depth, true); });
  pool->submit([] { detail::this_fork_join_thread.help_depth = 0; });
  pool->wait_idle();
  detail::this_fork_join_thread.help_depth = 0;  // in case the pool ran either task on this thread
}

WSLAB_INSTANTIATE_ON_EVERY_POOL(Join);
WSLAB_INSTANTIATE_ON_EVERY_POOL(Group);
WSLAB_INSTANTIATE_ON_EVERY_POOL(Futures);
WSLAB_INSTANTIATE_ON_EVERY_POOL(HelpPolicy);

}  // namespace
}  // namespace wslab
