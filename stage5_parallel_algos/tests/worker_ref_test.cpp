// WorkerRef and with_worker (fork_join/worker_ref.hpp): results and exceptions on either side of a
// fork, whether b is taken back or stolen, with b's frame in the deque's slot and in the joining
// stack; b's copies, each destroyed once, and a b passed as an lvalue never moved from; every leaf
// of a tree exactly once; the general path (off the workers, a full or switched-off split deque, a
// nearly full stack, another stage's pool); nesting with TaskGroup and pool.join; no allocation on
// a worker.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <thread>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "common/config.hpp"
#include "stage1_global_lock/global_lock_pool.hpp"
#include "stage5_parallel_algos/fork_join/task_group.hpp"
#include "stage5_parallel_algos/fork_join/worker_ref.hpp"
#include "stage5_parallel_algos/scheduler/scheduler.hpp"
#include "stage5_parallel_algos/tests/allocation_counter.hpp"
#include "stage5_parallel_algos/tests/fork_rounds.hpp"
#include "stage5_parallel_algos/tests/seat_guest.hpp"
#include "stage5_parallel_algos/threadpool.hpp"
#include "tests/test_scale.hpp"

namespace wslab {
namespace {

std::uint64_t fib_plain(int n) {
  return n < 2 ? std::uint64_t(n) : fib_plain(n - 1) + fib_plain(n - 2);
}

std::uint64_t fib(WorkerRef w, int n) {
  if (n < 2) return std::uint64_t(n);
  auto [x, y] = w.join([n](WorkerRef here) { return fib(here, n - 1); },
                       [n](WorkerRef here) { return fib(here, n - 2); });
  return x + y;
}

// Leaves [first, first + count) of a binary tree of forks, each counted once per visit.
// AForksWithJoinsHandle: each a forks with the handle its join was called on, not the one it
// receives (AHalfThatForksWithItsJoinsHandleRunsEveryLeafOnce).
template <bool AForksWithJoinsHandle = false>
void visit(WorkerRef w, std::vector<std::atomic<int>>& counts, std::size_t first,
           std::size_t count) {
  if (count == 1) {
    counts[first].fetch_add(1, std::memory_order_relaxed);
    return;
  }
  const std::size_t half = count / 2;
  w.join(
      [&](WorkerRef here) {
        visit<AForksWithJoinsHandle>(AForksWithJoinsHandle ? w : here, counts, first, half);
      },
      [&](WorkerRef here) {
        visit<AForksWithJoinsHandle>(here, counts, first + half, count - half);
      });
}

// Every leaf exactly once, `rounds` times over.
::testing::AssertionResult each_leaf_once(IThreadPool& pool, std::size_t leaves, int rounds) {
  std::vector<std::atomic<int>> counts(leaves);
  for (int r = 0; r < rounds; ++r)
    with_worker(pool, [&](WorkerRef w) { visit(w, counts, 0, leaves); });
  for (std::size_t i = 0; i < leaves; ++i) {
    if (counts[i].load() != rounds)
      return ::testing::AssertionFailure()
             << "leaf " << i << " ran " << counts[i].load() << " times in " << rounds << " rounds";
  }
  return ::testing::AssertionSuccess();
}

struct Failure {
  char which;
};

// root(handle) inside a task, so that the root's own joins take the fast path whatever the
// workers are doing (from outside, the root needs the guest seat for that).
template <class F>
void on_a_worker(Scheduler& pool, F root) {
  pool.submit([&] { with_worker(pool, root); });
  pool.wait_idle();
}

TEST(WorkerRef, FibFromOutsideAndFromATaskOnOneTwoAndFourWorkers) {
  const std::uint64_t expected = fib_plain(22);
  for (std::size_t workers : {1u, 2u, 4u}) {
    Scheduler pool(workers);
    EXPECT_EQ(with_worker(pool, [](WorkerRef w) { return fib(w, 22); }), expected) << workers;
    std::uint64_t in_task = 0;
    pool.submit([&] { in_task = with_worker(pool, [](WorkerRef w) { return fib(w, 22); }); });
    pool.wait_idle();
    EXPECT_EQ(in_task, expected) << workers;
  }
  ThreadPool pool(2);
  EXPECT_EQ(pool.with_worker([](WorkerRef w) { return fib(w, 22); }), expected);
}

TEST(WorkerRef, EveryLeafRunsExactlyOnceWhileThievesSteal) {
  for (std::size_t workers : {2u, 4u}) {
    Scheduler pool(workers);
    EXPECT_TRUE(each_leaf_once(pool, test::scaled(1 << 16, 1 << 12), 20)) << workers;
  }
}

// Inside each half the handle is the running thread's: a worker's (or the seated guest's), on
// the pool the join was made on.
TEST(WorkerRef, EachHalfReceivesAHandleOnItsOwnThread) {
  Scheduler pool(2);
  std::atomic<int> wrong{0};
  std::atomic<int> halves{0};
  on_a_worker(pool, [&](WorkerRef root) {
    if (!root.on_worker() || &root.pool() != &pool) ++wrong;
    struct Check {
      Scheduler& pool;
      std::atomic<int>& wrong;
      std::atomic<int>& halves;
      void operator()(WorkerRef w, int depth) const {
        halves.fetch_add(1);
        if (!w.on_worker() || &w.pool() != &pool) wrong.fetch_add(1);
        if (sched::worker_context_of(pool) == nullptr) wrong.fetch_add(1);
        if (depth == 0) return;
        w.join([&](WorkerRef a) { (*this)(a, depth - 1); },
               [&](WorkerRef b) { (*this)(b, depth - 1); });
      }
    } check{pool, wrong, halves};
    check(root, 12);
  });
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(halves.load(), (1 << 13) - 1);
}

// Off the workers (another thread while this one holds the guest seat, or a pool that is not the
// scheduler) the root's handle takes the general path, and the results are the same.
TEST(WorkerRef, OffTheWorkersEveryJoinTakesTheGeneralPath) {
  const std::uint64_t expected = fib_plain(18);
  Scheduler pool(2);
  Scheduler::GuestSeat seat = test::seat_once_a_worker_sleeps(pool);
  ASSERT_TRUE(seat);
  bool root_on_worker = true;
  std::uint64_t result = 0;
  std::thread([&] {
    result = with_worker(pool, [&](WorkerRef w) {
      root_on_worker = w.on_worker();
      return fib(w, 18);
    });
  }).join();
  EXPECT_FALSE(root_on_worker);
  EXPECT_EQ(result, expected);

  GlobalLockPool other(2);
  std::atomic<int> on_worker{0};
  struct Walk {
    std::atomic<int>& on_worker;
    std::uint64_t operator()(WorkerRef w, int n) const {
      if (w.on_worker()) on_worker.fetch_add(1);
      if (n < 2) return std::uint64_t(n);
      auto [x, y] = w.join([&](WorkerRef a) { return (*this)(a, n - 1); },
                           [&](WorkerRef b) { return (*this)(b, n - 2); });
      return x + y;
    }
  } walk{on_worker};
  EXPECT_EQ(with_worker(other, [&](WorkerRef w) { return walk(w, 14); }), fib_plain(14));
  EXPECT_EQ(on_worker.load(), 0);
  EXPECT_TRUE(each_leaf_once(other, 1 << 10, 3));
}

// In the guest seat the root runs as a worker would, and wait_all() inside it is refused, as it is
// off the workers (tests/algorithms/lifetime_test.cpp): in the seat it would wait for itself.
TEST(WorkerRef, WaitAllInsideASeatedRootIsRefused) {
  ThreadPool pool(2);
  test::wait_until_a_worker_sleeps(static_cast<Scheduler&>(pool.scheduler()));
  const bool seated = pool.with_worker([&](WorkerRef w) {
    EXPECT_THROW(pool.wait_all(), std::logic_error);
    return w.on_worker();
  });
  EXPECT_TRUE(seated) << "the test needs the caller in the guest seat";
  EXPECT_NO_THROW(pool.wait_all());
}

TEST(WorkerRef, ResultsOfEveryKind) {
  Scheduler pool(2);
  with_worker(pool, [](WorkerRef w) {
    static_assert(std::is_void_v<decltype(w.join([](WorkerRef) {}, [](WorkerRef) {}))>);
    auto [a, b] = w.join([](WorkerRef) { return 7; }, [](WorkerRef) {});
    static_assert(std::is_same_v<decltype(b), std::monostate>);
    EXPECT_EQ(a, 7);
    auto [p, q] = w.join([](WorkerRef) { return std::make_unique<int>(1); },
                         [](WorkerRef) { return std::make_unique<int>(2); });
    EXPECT_EQ(*p + *q, 3);
  });
}

// Runs round(w, stolen) 100 times on a worker of each of test::on_one_and_two_workers()'s
// schedulers; round returns how many of its checks failed.
template <class Round>
void taken_back_and_stolen(Round round) {
  test::on_one_and_two_workers([&](Scheduler& pool, bool stolen) {
    int wrong = 0;
    on_a_worker(pool, [&](WorkerRef w) {
      for (int i = 0; i < 100; ++i)
        wrong += round(w, stolen);
    });
    return wrong;
  });
}

// A b passed as a temporary is moved into the slot (a move-only capture too) and run once, from
// there or by a thief; when a throws it is dropped unrun or, stolen, finishes first. Every copy of
// it is destroyed once: none left, none twice (a Tracked count, and ASan for the unique_ptr).
TEST(WorkerRef, BIsMovedIntoTheSlotRunsOnceAndEveryCopyOfItIsDestroyed) {
  taken_back_and_stolen([](WorkerRef w, bool stolen) {
    int wrong = 0;
    for (bool a_throws : {false, true}) {
      std::atomic<int> b_runs{0};
      try {
        auto [x, y] = w.join(
            [&](WorkerRef) {
              if (stolen && !test::eventually([&] { return b_runs.load() != 0; })) wrong += 1000;
              if (a_throws) throw Failure{'a'};
              return 1;
            },
            [&b_runs, box = std::make_unique<int>(41), t = test::Tracked{}](WorkerRef) {
              b_runs.fetch_add(1);
              return *box + 1;
            });
        if (a_throws || x + y != 43) ++wrong;
      } catch (const Failure& e) {
        if (!a_throws || e.which != 'a') ++wrong;
      }
      // Dropped unrun only when a threw before anyone started b.
      if (b_runs.load() != (a_throws && !stolen ? 0 : 1)) ++wrong;
      if (test::Tracked::live.load() != 0) ++wrong;
    }
    return wrong;
  });
}

// An a for a round of taken_back_and_stolen() whose b counts its runs in `b_runs`: when b is to
// be stolen, a waits until it has started elsewhere.
auto a_that_waits_for_b(bool stolen, std::atomic<int>& b_runs, int& wrong) {
  return [stolen, &b_runs, &wrong](WorkerRef) {
    if (stolen && !test::eventually([&] { return b_runs.load() != 0; })) wrong += 1000;
    return 0;
  };
}

// A b passed as an lvalue is never moved from: one that copies as bytes is copied into the slot;
// any other keeps its frame in the joining stack and is called in place.
TEST(WorkerRef, AnLvalueBIsCopiedOnlyWhenItCopiesAsBytes) {
  taken_back_and_stolen([](WorkerRef w, bool stolen) {
    int wrong = 0;
    std::atomic<int> b_runs{0};
    auto wait_for_b = a_that_waits_for_b(stolen, b_runs, wrong);
    // Small enough for a slot, but a move would empty it.
    auto shared = [&b_runs, value = std::make_shared<const int>(64)](WorkerRef) {
      b_runs.fetch_add(1);
      return value ? *value : 0;
    };
    static_assert(detail::builds_in_slot<decltype(shared), int>);
    static_assert(!detail::builds_in_slot<decltype(shared)&, int>);
    auto [x, y] = w.join(wait_for_b, shared);
    if (y != 64) ++wrong;
    b_runs = 0;
    const auto [p, q] = w.join(wait_for_b, shared);  // still holds its value
    if (q != 64) ++wrong;
    int seven = 7;
    auto bytes = [&b_runs, seven](WorkerRef) {
      b_runs.fetch_add(1);
      return seven;
    };
    static_assert(std::is_trivially_copyable_v<decltype(bytes)>);
    b_runs = 0;
    const auto [r, s] = w.join(wait_for_b, bytes);
    if (s != 7) ++wrong;
    (void)x;
    (void)p;
    (void)r;
    return wrong;
  });
}

// A b, or a result, too large for a slot: the frame stays in the joining stack, linked from the
// slot, taken back or stolen.
TEST(WorkerRef, HalvesAndResultsTooLargeForASlotKeepTheirFrameInTheJoiningStack) {
  static_assert(!detail::builds_in_slot<std::array<std::uint64_t, 8>, int>);
  taken_back_and_stolen([](WorkerRef w, bool stolen) {
    int wrong = 0;
    std::atomic<int> b_runs{0};
    auto wait_for_b = a_that_waits_for_b(stolen, b_runs, wrong);
    std::array<std::uint64_t, 8> values{1, 2, 3, 4, 5, 6, 7, 8};
    auto [x, sum] = w.join(wait_for_b, [&b_runs, values](WorkerRef) {
      b_runs.fetch_add(1);
      std::uint64_t total = 0;
      for (std::uint64_t v : values)
        total += v;
      return total;
    });
    if (sum != 36) ++wrong;
    b_runs = 0;
    auto [y, big] = w.join(wait_for_b, [&b_runs](WorkerRef) {
      b_runs.fetch_add(1);
      std::array<char, 48> text{};
      text.fill('y');
      return text;
    });
    if (big[0] != 'y' || big[47] != 'y') ++wrong;
    (void)x;
    (void)y;
    return wrong;
  });
}

// b throws, taken back (it runs inline) or stolen (the exception crosses threads through the
// frame).
TEST(WorkerRef, BThrowsInlineOrStolenAndTheJoinerGetsIt) {
  taken_back_and_stolen([](WorkerRef w, bool stolen) {
    int wrong = 0;
    std::atomic<bool> b_started{false};
    bool a_ran = false;
    const std::thread::id joiner = std::this_thread::get_id();
    bool b_elsewhere = false;
    try {
      w.join(
          [&](WorkerRef) {
            if (stolen && !test::eventually([&] { return b_started.load(); })) wrong += 1000;
            a_ran = true;
            return 1;
          },
          [&](WorkerRef) -> int {
            b_elsewhere = std::this_thread::get_id() != joiner;
            b_started = true;
            throw Failure{'b'};
          });
      ++wrong;  // swallowed
    } catch (const Failure& e) {
      if (e.which != 'b') ++wrong;
    }
    if (!a_ran || b_elsewhere != stolen) ++wrong;
    return wrong;
  });
}

// a throws. b not started (one worker): b is dropped, never run. b stolen (two workers, a waits
// until b has started elsewhere): the join waits for b to finish before a's exception leaves it
// (b finishes only after a has thrown, so a join that rethrew at once would see it unfinished),
// and a's exception wins when both throw. This catches a take-back that skips the wait: the frame
// would die under the running b.
TEST(WorkerRef, WhenAThrowsAnUnstartedBIsDroppedAndAStolenBFinishesFirst) {
  taken_back_and_stolen([](WorkerRef w, bool stolen) {
    int wrong = 0;
    for (bool b_throws : {false, true}) {
      std::atomic<int> b_started{0};
      std::atomic<int> b_finished{0};
      std::atomic<bool> a_threw{false};
      try {
        w.join(
            [&](WorkerRef) {
              if (stolen && !test::eventually([&] { return b_started.load() != 0; })) wrong += 1000;
              a_threw = true;
              throw Failure{'a'};
            },
            [&](WorkerRef) {
              b_started.fetch_add(1);
              if (!test::eventually([&] { return a_threw.load(); })) return;
              b_finished.fetch_add(1);
              if (b_throws) throw Failure{'b'};
            });
        ++wrong;  // swallowed
      } catch (const Failure& e) {
        if (e.which != 'a') ++wrong;
      }
      const int runs = stolen ? 1 : 0;
      if (b_started.load() != runs || b_finished.load() != runs) ++wrong;
    }
    return wrong;
  });
}

// A recursion deeper than a worker's stack: past three quarters of it the join moves to a fresh
// stack (stack_room.hpp), where the halves get handles off the workers. The worker's stack is
// small (256 KiB) and the chain ends 200 levels after it has left it: a level off the workers
// takes about 5 us in Release, and under ThreadSanitizer a chain's cost grows faster than its
// depth (50,000 levels on an 8 MiB stack took 46 s there).
TEST(WorkerRef, ARecursionDeeperThanTheStackMovesToAFreshStack) {
  PoolOptions small_stacks;
  small_stacks.stack_size = 256 * 1024;
  Scheduler pool(1, small_stacks);
  constexpr std::size_t kMaxLevels = 100'000, kLevelsOffTheWorkers = 200;
  // One thread at a time descends: the worker, then the fresh stack's thread, which it starts
  // and waits for. Only the `b`s, which touch neither count, could run elsewhere.
  std::size_t levels = 0, off_the_workers = 0;
  struct Chain {
    std::size_t& levels;
    std::size_t& off_the_workers;
    std::size_t operator()(WorkerRef w) const {
      if (levels == kMaxLevels || off_the_workers == kLevelsOffTheWorkers) return 0;
      ++levels;
      if (!w.on_worker()) ++off_the_workers;
      auto [below, one] =
          w.join([&](WorkerRef a) { return (*this)(a); }, [](WorkerRef) { return std::size_t{1}; });
      return below + one;
    }
  };
  std::size_t result = 0;
  pool.submit([&] {
    result = with_worker(pool, [&](WorkerRef w) { return Chain{levels, off_the_workers}(w); });
  });
  pool.wait_idle();
  EXPECT_EQ(off_the_workers, kLevelsOffTheWorkers) << "the chain never left the worker's stack";
  EXPECT_EQ(result, levels);
}

// A split deque that fills up (4 slots) or is switched off: the forks that do not fit take the
// general join, and every leaf still runs exactly once.
TEST(WorkerRef, AFullOrSwitchedOffSplitDequeForksTheGeneralWay) {
  for (std::uint32_t slots : {4u, 0u}) {
    SchedulerKnobs knobs;
    knobs.split_deque = slots;
    Scheduler pool(2, {}, knobs);
    EXPECT_EQ(with_worker(pool, [](WorkerRef w) { return fib(w, 20); }), fib_plain(20)) << slots;
    EXPECT_TRUE(each_leaf_once(pool, test::scaled(1 << 14, 1 << 10), 5)) << slots;
  }
}

// The halves use the rest of the API: a TaskGroup, pool.join, a nested with_worker.
TEST(WorkerRef, HalvesMixWithTaskGroupsAndPoolJoin) {
  Scheduler pool(2);
  constexpr std::size_t kLeaves = 256;
  std::vector<std::atomic<int>> counts(kLeaves * 4);
  struct Mixed {
    Scheduler& pool;
    std::vector<std::atomic<int>>& counts;
    void operator()(WorkerRef w, std::size_t first, std::size_t count) const {
      if (count == 1) {
        TaskGroup group(pool);
        group.run([this, first] { counts[4 * first].fetch_add(1); });
        group.run([this, first] { counts[4 * first + 1].fetch_add(1); });
        join(
            pool, [this, first] { counts[4 * first + 2].fetch_add(1); },
            [this, first] {
              with_worker(pool, [&](WorkerRef) { counts[4 * first + 3].fetch_add(1); });
            });
        group.wait();
        return;
      }
      const std::size_t half = count / 2;
      w.join([&](WorkerRef a) { (*this)(a, first, half); },
             [&](WorkerRef b) { (*this)(b, first + half, count - half); });
    }
  } mixed{pool, counts};
  with_worker(pool, [&](WorkerRef w) { mixed(w, 0, kLeaves); });
  for (std::size_t i = 0; i < counts.size(); ++i)
    ASSERT_EQ(counts[i].load(), 1) << i;
}

// Leaves counted as visit() counts them, but each a forks with the handle its join was called on,
// not the one it receives: both name the worker, and a runs on the joining thread, which the
// reference allows ("at any depth"). a's forks then go above its join's pending b, wherever the
// handle was made: a handle that kept a position in the deque of its own would build them over
// b's frame.
TEST(WorkerRef, AHalfThatForksWithItsJoinsHandleRunsEveryLeafOnce) {
  for (std::size_t workers : {1u, 2u}) {
    Scheduler pool(workers);
    const std::size_t leaves = test::scaled(1 << 12, 1 << 10);
    std::vector<std::atomic<int>> counts(leaves);
    constexpr int kRounds = 10;
    for (int r = 0; r < kRounds; ++r)
      on_a_worker(pool, [&](WorkerRef w) { visit<true>(w, counts, 0, leaves); });
    for (std::size_t i = 0; i < leaves; ++i)
      ASSERT_EQ(counts[i].load(), kRounds) << "leaf " << i << ", " << workers << " worker(s)";
  }
}

// Several threads outside the pool at once: one may take the guest seat, the others' roots fork
// the general way and their halves reach the workers.
TEST(WorkerRef, ManyOutsideThreadsAtOnce) {
  Scheduler pool(2);
  constexpr int kThreads = 4;
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      if (!each_leaf_once(pool, test::scaled(1 << 12, 1 << 9), 5)) wrong.fetch_add(1);
    });
  }
  for (std::thread& t : threads)
    t.join();
  EXPECT_EQ(wrong.load(), 0);
}

// On a worker, a fork's frame lives in the deque's slot (or in the joining stack, linked from the
// slot): nothing is allocated, stolen or not.
TEST(WorkerRef, ForksOnAWorkerAllocateNothing) {
  for (std::size_t workers : {1u, 2u}) {
    Scheduler pool(workers);
    std::uint64_t result = 0;
    const std::size_t allocations = test::allocations_on_a_worker(
        pool, [&] { result = with_worker(pool, [](WorkerRef w) { return fib(w, 20); }); });
    EXPECT_EQ(result, fib_plain(20));
    EXPECT_EQ(allocations, 0u) << workers << " workers";
  }
}

// A thread outside the pool that helps while it waits (try_run_one(), as an outside join's waiter
// does) may steal a fork from a worker's split deque: b then runs there with a handle off the
// workers, and its own forks take the general path. (Found by UBSan in the asan build: a thief's
// handle was made as if every thief were a worker.)
TEST(WorkerRef, AThreadOutsideThePoolThatStealsAForkGetsAHandleOfItsOwn) {
  Scheduler pool(1);
  std::atomic<bool> a_started{false};
  std::atomic<bool> b_done{false};
  std::atomic<int> wrong{0};
  std::uint64_t result = 0;
  const std::thread::id outside = std::this_thread::get_id();
  pool.submit([&] {
    result = with_worker(pool, [&](WorkerRef w) {
      auto [x, y] = w.join(
          [&](WorkerRef) {
            a_started = true;
            if (!test::eventually([&] { return b_done.load(); })) wrong += 1000;
            return std::uint64_t{1};
          },
          [&](WorkerRef here) {
            if (here.on_worker() || std::this_thread::get_id() != outside) wrong.fetch_add(1);
            const std::uint64_t f = fib(here, 10);
            b_done = true;
            return f;
          });
      return x + y;
    });
  });
  // Once the worker runs a (the root is no longer in the injector, for this thread to take), its
  // fork is in its split deque, shared at the push (nothing was shared yet): steal it.
  ASSERT_TRUE(test::eventually([&] { return a_started.load(); }));
  const bool stole = test::eventually([&] { return pool.try_run_one(); });
  pool.wait_idle();
  EXPECT_TRUE(stole);
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(result, 1 + fib_plain(10));
}

// With the internal checks on (WSLAB_ASSERTIONS, common/config.hpp: the sanitizer and Debug
// builds), a worker's handle used on another thread aborts with a message at its first fork;
// without them the misuse goes unchecked, and the test is skipped.
TEST(WorkerRefDeathTest, AHandleForkedOnAnotherThreadFailsTheInternalCheck) {
  if (!WSLAB_ASSERTIONS) GTEST_SKIP() << "built without WSLAB_ASSERTIONS";
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        Scheduler pool(1);
        on_a_worker(pool, [](WorkerRef w) {
          ASSERT_TRUE(w.on_worker());
          std::thread other(
              [w] { (void)w.join([](WorkerRef) { return 1; }, [](WorkerRef) { return 2; }); });
          other.join();
        });
      },
      "wslab: internal check failed");
}

// Pools made, used and destroyed in a row, with work stolen in each.
TEST(WorkerRef, PoolsDestroyedRightAfterUse) {
  for (int round = 0; round < 20; ++round) {
    Scheduler pool(2);
    ASSERT_TRUE(each_leaf_once(pool, 1 << 10, 1)) << round;
  }
}

}  // namespace
}  // namespace wslab
