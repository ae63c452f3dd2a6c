// A task group's callables as group jobs on its home worker's deque (README.md, step 'Group
// jobs'), which the home's waiter counts with plain adds. The shapes that count has to survive: a
// sibling group's wait running the callables first, a thief still running one the waiter did not
// get, callables adding to their group, a wait inside a join, a group waited for on another
// thread than its home while the home adds to it (and a hand-in racing the home's pushes, or a
// thief's add to the count), and a callable that destroys the pool.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <future>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "stage5_parallel_algos/tests/blocked_task.hpp"
#include "stage5_parallel_algos/tests/idle_pool.hpp"
#include "stage5_parallel_algos/threadpool.hpp"
#include "tests/exactly_once.hpp"
#include "tests/test_scale.hpp"

namespace wslab {
namespace {

template <class Body>
void run_inside(ThreadPool& pool, Body body) {
  pool.spawn(body);
  pool.wait_all();
}

// A group on the heap made in a task on one of the pool's workers (its home) and filled there by
// fill(group), then handed to the calling thread, which waits for it and deletes it.
template <class Fill>
TaskGroup* group_made_on_a_worker(ThreadPool& pool, Fill fill) {
  std::atomic<TaskGroup*> handed{nullptr};
  pool.spawn([&] {
    auto* g = new TaskGroup(pool);
    fill(*g);
    handed.store(g);
  });
  TaskGroup* g = nullptr;
  while ((g = handed.load()) == nullptr)
    std::this_thread::yield();
  return g;
}

// Keeps the calling thread busy for `d`: a callable that is still running when the shape under
// test needs it to be.
void spin_for(std::chrono::microseconds d) {
  const auto until = std::chrono::steady_clock::now() + d;
  while (std::chrono::steady_clock::now() < until) {
  }
}

// a's wait runs b's callable too (it lies above a's mark): not b's own wait, so it counts as run
// elsewhere, and b's wait hands it in (a count b did not get hangs its wait; one counted twice
// ends it early). b's next callable lands below b's first slot, where a's wait left the deque's
// bottom, and b's wait still runs it.
TEST(GroupJobs, ASiblingsWaitRunsTheGroupsCallableAndTheGroupCountsIt) {
  ThreadPool pool(1);
  int first = 0, second = 0, third = 0;
  int third_when_b_returned = -1;
  run_inside(pool, [&] {
    TaskGroup a(pool), b(pool);
    a.run([&] { ++first; });
    b.run([&] { ++second; });
    a.wait();  // runs both: b's callable lies above a's mark
    b.run([&] { ++third; });
    b.wait();
    third_when_b_returned = third;
  });
  EXPECT_EQ(first, 1);
  EXPECT_EQ(second, 1);
  EXPECT_EQ(third_when_b_returned, 1) << "b's wait returned before b's callable ran";
}

// The other worker steals the group's only callable and runs it for a while: the waiter ran none
// of what its home pushed, and must wait for the thief rather than count the round done.
TEST(GroupJobs, AWaiterWaitsForTheThiefOfItsCallable) {
  ThreadPool pool(2);
  std::atomic<bool> started{false}, finished{false};
  bool finished_when_wait_returned = false;
  bool stolen = false;
  run_inside(pool, [&] {
    TaskGroup g(pool);
    g.run([&] {
      started.store(true);
      spin_for(std::chrono::milliseconds(20));
      finished.store(true);
    });
    // The other worker was woken by the push; give it test::kPatience to take the callable.
    stolen = test::eventually([&] { return started.load(); });
    g.wait();
    finished_when_wait_returned = finished.load();
  });
  ASSERT_TRUE(stolen) << "the other worker never took the callable";
  EXPECT_TRUE(finished_when_wait_returned) << "the wait returned while the thief still ran";
}

// The thief has finished the callable before the waiter looks: the waiter hands the job in and
// finds it already counted (its hand-in must take back the unit it added for it, or it waits
// forever). The waiter usually looks after the thief's count, as here, but either order must end
// the wait with the callable done.
TEST(GroupJobs, AThiefThatFinishedBeforeTheWaitLeavesTheGroupDone) {
  ThreadPool pool(2);
  for (int round = 0; round < 20; ++round) {
    std::atomic<bool> finished{false};
    bool stolen = false, finished_when_wait_returned = false;
    run_inside(pool, [&] {
      TaskGroup g(pool);
      g.run([&] { finished.store(true); });
      stolen = test::eventually([&] { return finished.load(); });
      // The thief counts the job right after its flag; give it that moment.
      for (int i = 0; i < 1000; ++i)
        std::this_thread::yield();
      g.wait();
      finished_when_wait_returned = finished.load();
    });
    ASSERT_TRUE(stolen) << "round " << round << ": the other worker never took the callable";
    EXPECT_TRUE(finished_when_wait_returned) << "round " << round;
  }
}

// Two hand-ins while the first is still out. The owner's callable s is stolen (worker B) and the
// wait hands it in; s runs t into the group from B, and only the waiter is free to take t (worker
// C is held), so t runs on the home thread and runs y there, as a group job; C, now let go,
// takes y, so the waiter hands y in while s still runs. Each hand-in adds a unit to the count;
// the second, finding the first unit still held (s unfinished), must take its own back, and the
// first must stay until s and y have both finished: too few units and the wait returns early,
// too many and it never returns. (If y finishes before the second hand-in, which the 20 ms spin
// makes rare, the wait takes the other branch; the outcome checked is the same.)
TEST(GroupJobs, ASecondHandInWhileTheFirstIsOutWaitsForBoth) {
  ThreadPool pool(3);
  struct Shared {
    TaskGroup* g = nullptr;
    std::thread::id home;
    std::atomic<bool> hold_b{true}, hold_c{true};
    std::atomic<bool> s_started{false}, t_started{false}, y_started{false};
    std::atomic<bool> s_done{false}, y_done{false};
    bool s_was_stolen = false, y_was_stolen = false, t_on_home = false;
    bool both_done_when_wait_returned = false;
  } shared;
  Shared* st = &shared;  // every callable captures this one pointer: each is a group job's size
  // Two workers held, the third runs the owner.
  pool.spawn([st] {
    while (st->hold_b.load())
      std::this_thread::yield();
  });
  pool.spawn([st] {
    while (st->hold_c.load())
      std::this_thread::yield();
  });
  pool.spawn([st, &pool] {
    st->home = std::this_thread::get_id();
    TaskGroup g(pool);
    st->g = &g;
    g.run([st] {  // s, on B
      st->s_started.store(true);
      st->g->run([st] {  // t: a task node on B's deque, which only the waiter is free to take
        st->t_started.store(true);
        st->t_on_home = std::this_thread::get_id() == st->home;
        st->hold_c.store(false);
        st->g->run([st] {  // y: a group job on the home's deque, for C
          st->y_started.store(true);
          spin_for(std::chrono::milliseconds(20));
          st->y_done.store(true);
        });
        st->y_was_stolen = test::eventually([st] { return st->y_started.load(); });
      });
      (void)test::eventually([st] { return st->y_done.load(); });
      st->s_done.store(true);
    });
    st->hold_b.store(false);
    st->s_was_stolen = test::eventually([st] { return st->s_started.load(); });
    g.wait();
    st->both_done_when_wait_returned = st->s_done.load() && st->y_done.load();
  });
  pool.wait_all();
  ASSERT_TRUE(shared.s_was_stolen) << "no worker took s";
  ASSERT_TRUE(shared.t_started.load());
  EXPECT_TRUE(shared.both_done_when_wait_returned)
      << "the wait returned before s and y had finished";
  // The shape itself (else the test checked an easier one): t on the home, y taken from there.
  EXPECT_TRUE(shared.t_on_home) << "t did not run on the home thread";
  EXPECT_TRUE(shared.y_was_stolen) << "no worker took y";
}

// Callables that add to their own group (each node of a binary tree runs its children into the
// same group), on one and two workers: every node exactly once, whoever runs it.
void tree_into_one_group(std::size_t threads) {
  constexpr int kDepth = 14;
  ThreadPool pool(threads);
  test::ExactlyOnce ran((1u << (kDepth + 1)) - 1);  // node ids 1 to 2^(kDepth + 1) - 1
  run_inside(pool, [&] {
    TaskGroup g(pool);
    struct Node {
      TaskGroup& g;
      test::ExactlyOnce* ran;
      void operator()(int id, int depth) const {
        ran->mark(static_cast<std::size_t>(id) - 1);
        if (depth == kDepth) return;
        const Node self = *this;
        g.run([self, id, depth] { self(2 * id, depth + 1); });
        g.run([self, id, depth] { self(2 * id + 1, depth + 1); });
      }
    };
    g.run([&] { Node{g, &ran}(1, 0); });
    g.wait();
  });
  ran.expect_each_once();
}
TEST(GroupJobs, CallablesAddingToTheirGroupRunEachOnceOnOneWorker) {
  tree_into_one_group(1);
}
TEST(GroupJobs, CallablesAddingToTheirGroupRunEachOnceOnTwoWorkers) {
  tree_into_one_group(2);
}

// The group's wait is called inside a join, above the join's fork (on the split deque): the
// callables, below it on the Chase-Lev deque, still run.
TEST(GroupJobs, AWaitInsideAJoinRunsTheCallablesBelowTheFork) {
  for (std::size_t threads : {1, 2}) {
    ThreadPool pool(threads);
    std::atomic<int> ran{0};
    int ran_when_wait_returned = -1;
    run_inside(pool, [&] {
      TaskGroup g(pool);
      for (int i = 0; i < 3; ++i)
        g.run([&] { ran.fetch_add(1); });
      (void)pool.join(
          [&] {
            g.wait();
            ran_when_wait_returned = ran.load();
            return 0;
          },
          [&] { return ran.fetch_add(10); });
    });
    EXPECT_EQ(ran_when_wait_returned % 10, 3) << threads << " worker(s)";
    EXPECT_EQ(ran.load(), 13) << threads << " worker(s)";
  }
}

// A group in a coroutine's frame may be waited for on another thread than the one it ran() on:
// here the coroutine moves to another pool between run() and wait(), while the group's home
// worker runs the callables, and each adds one more to the group from there, as group jobs the
// waiter has not seen. The home counts its pushes alone and the waiter its hand-ins: TSan checks
// that nothing else touches the plain count. The home runs each new callable as soon as it is
// pushed, so the jobs counted elsewhere reach the number handed in while two callables are still
// queued, and the flag reads done: a wait that then ended on the flag alone, with pushes it had
// not handed in, would return before they ran. Each callable takes 100 us, so that it would.
TEST(GroupJobs, AGroupWaitedOnAnotherThreadCountsWhatItsHomeAddsMeanwhile) {
  ThreadPool home(1), away(1);
  for (int round = 0; round < 50; ++round) {
    std::atomic<int> ran{0};
    auto body = [&]() -> CoTask<int> {
      TaskGroup g(home);
      for (int i = 0; i < 4; ++i) {
        g.run([&] {
          spin_for(std::chrono::microseconds(100));
          ran.fetch_add(1);
          g.run([&] {
            spin_for(std::chrono::microseconds(100));
            ran.fetch_add(1);
          });
        });
      }
      co_await away.schedule();
      g.wait();
      co_return ran.load();
    };
    ASSERT_EQ(home.run(body()), 8) << "round " << round;
  }
}

// The same from the heap: a group made on a worker and handed to a thread outside the pool, which
// waits while the home runs the callables and they add to the group there.
TEST(GroupJobs, AGroupOnTheHeapWaitedOutsideCountsWhatItsHomeAddsMeanwhile) {
  ThreadPool pool(1);
  for (int round = 0; round < 50; ++round) {
    std::atomic<int> ran{0};
    std::atomic<bool> go{false};
    TaskGroup* g = group_made_on_a_worker(pool, [&](TaskGroup& group) {
      for (int i = 0; i < 4; ++i) {
        group.run([&, home = &group] {
          while (!go.load())
            std::this_thread::yield();
          spin_for(std::chrono::microseconds(100));
          ran.fetch_add(1);
          home->run([&] {
            spin_for(std::chrono::microseconds(100));
            ran.fetch_add(1);
          });
        });
      }
    });
    go.store(true);
    g->wait();
    const int ran_when_wait_returned = ran.load();
    delete g;
    pool.wait_all();
    ASSERT_EQ(ran_when_wait_returned, 8) << "round " << round;
  }
}

// Found by the program fuzzer (wslab_fuzz --pool stage5_parallel_algos:no_quick_scans
// --program-seed 0x3902deffa3b529ed, a wait that returned before every callable ran). A callable
// that a thief took off the home adds to its group there through a task node, which raises the
// group's count (add_pending()); the count knows nothing of a group job until the waiter hands it
// in, so it may be zero then, and the adder resets the flag a few instructions after its add. A
// hand-in in between raises a count already above zero, resets nothing, and reads the flag still
// done: a wait that took the flag's word for it, with the count above zero, returned before the
// new callable ran, or before the home had run its own. The window is a few instructions wide; on
// the pool the fuzzer found it on, with the waiter asleep on a future until the group arrives,
// TSan's slowdown opens it in most runs (9 of 10), Release in none of 10. The same rounds on a
// default ThreadPool, the waiter yielding until the group arrives, reached it in none of 30 runs
// under TSan.
TEST(GroupJobs, AWaitEndsOnTheCountNotOnAFlagAnAdderHasYetToReset) {
  Scheduler pool(2, {}, SchedulerKnobs{.quick_scans = 0});
  const std::size_t rounds = test::scaled(20000, 3000);
  for (std::size_t round = 0; round < rounds; ++round) {
    const std::size_t k = 1 + round % 4;
    // Plain counters, not test::ExactlyOnce: with its marks the window opened less often under
    // TSan (4 failing runs of 20 without the fix, against 9 of 10 with these).
    std::vector<std::atomic<int>> ran(2 * k);
    std::promise<TaskGroup*> handed;
    pool.submit([&] {
      auto* group = new TaskGroup(pool);
      for (std::size_t i = 0; i < k; ++i) {
        group->run([&ran, group, i, k] {
          ran[i].fetch_add(1);
          group->run([&ran, i, k] { ran[k + i].fetch_add(1); });
        });
      }
      handed.set_value(group);
    });
    TaskGroup* g = handed.get_future().get();
    g->wait();
    std::size_t not_once = 0;
    for (const auto& n : ran)
      not_once += n.load() != 1 ? 1 : 0;
    pool.wait_idle();  // what a wait that returned early left running reaches `ran` no more
    ASSERT_EQ(not_once, 0u) << "round " << round << ", " << k << " callable(s) and theirs";
    delete g;
  }
}

// Found by the program fuzzer (wslab_fuzz --pool ThreadPool --program-seed 0xeea33d3f6afb8700,
// a wait that never ended). A waiter away from the home reads how many jobs the home pushed, then
// takes that number off the jobs counted elsewhere; a job the home pushes and finishes between the
// two is counted elsewhere but not in the number, so the take-off finds more finished than it
// hands in. That hand-in's unit must go at once (all it covers has finished): kept, nothing would
// release it, and the wait would never end. Chains of tiny callables keep the home pushing while
// the waiter hands in; a wait that outlasts kPatience fails the test instead of hanging it.
TEST(GroupJobs, AHandInThatFindsMoreFinishedThanItHandsInReleasesItsUnit) {
  constexpr int kChains = 8, kLinks = 40;
  ThreadPool pool(1);
  const std::size_t rounds = test::scaled(40000, 3000);
  for (std::size_t round = 0; round < rounds; ++round) {
    std::atomic<int> ran{0};
    TaskGroup* g = group_made_on_a_worker(pool, [&](TaskGroup& group) {
      struct Link {
        TaskGroup* g;
        std::atomic<int>* ran;
        int left;
        void operator()() const {
          ran->fetch_add(1);
          if (left > 0) g->run(Link{g, ran, left - 1});
        }
      };
      for (int i = 0; i < kChains; ++i)
        group.run(Link{&group, &ran, kLinks - 1});
    });
    std::atomic<bool> returned{false};
    std::thread waiter([&] {
      g->wait();
      returned.store(true);
    });
    if (!test::eventually([&] { return returned.load(); })) {
      // The waiter cannot be joined: it never returns.
      test::fail_hung(("round " + std::to_string(round) + ": the wait has not ended").c_str());
    }
    waiter.join();
    ASSERT_EQ(ran.load(), kChains * kLinks) << "round " << round;
    delete g;
    pool.wait_all();
  }
}

// A callable destroys the pool: the destructor, on that worker, runs the callable below it, and
// the waiter, back from the callable, touches the deque no more.
TEST(GroupJobs, ACallableThatDestroysThePoolLeavesNothingUnrun) {
  testing::internal::CaptureStderr();
  auto* pool = new ThreadPool(1);
  std::atomic<int> below{0}, above{0};
  std::atomic<bool> done{false};
  pool->spawn([pool, &below, &above, &done] {
    {
      TaskGroup g(*pool);
      g.run([&below] { below.fetch_add(1); });
      g.run([pool] { delete pool; });
      g.run([&above] { above.fetch_add(1); });
      g.wait();
    }
    done.store(true);
  });
  while (!done.load())
    std::this_thread::yield();
  (void)testing::internal::GetCapturedStderr();
  EXPECT_EQ(above.load(), 1);
  EXPECT_EQ(below.load(), 1);
}

// Steal sessions (README.md, step 'Lingering sessions') close once their holder has run or popped
// kLinger jobs of its own; while one is open, every pop of every owner fences. A home that runs
// its own group jobs is busy too: here both workers searched and parked, leaving their sessions
// open and idle; one then blocks in a task it took from the injector (no steal, so no session),
// and the other runs several times kLinger group jobs of its own, which must close them all.
// Without the count in the waiter's loop, the idle sessions stay open (and the home's pops fence)
// until the home runs some other kind of job.
TEST(GroupJobs, AHomeRunningItsOwnJobsClosesTheSessionsThievesLeftOpen) {
  const std::uint32_t idle_gate = test::idle_gate_count();
  // Without Step 'Look first', so that the workers' searches of the empty pool open sessions.
  Scheduler pool(2, {}, SchedulerKnobs{.look_first = false});
  test::wait_for_parks(pool, 2);
  ASSERT_GT(pool.open_steal_sessions(), idle_gate) << "the parked workers left no session open";
  test::BlockedTask blocked(pool);
  std::uint32_t open_after = 0;
  std::atomic<int> ran{0};
  pool.submit([&] {
    for (int round = 0; round < 4; ++round) {
      TaskGroup g(pool);
      for (std::uint32_t i = 0; i < sched::kLinger; ++i)
        g.run([&ran] { ran.fetch_add(1, std::memory_order_relaxed); });
      g.wait();
    }
    open_after = pool.open_steal_sessions();
    blocked.release();
  });
  pool.wait_idle();
  EXPECT_EQ(ran.load(), 4 * static_cast<int>(sched::kLinger));
  EXPECT_EQ(open_after, idle_gate) << "sessions still open after the home's own jobs";
}

// A wait's loop counts the jobs it runs for the statistics once, when the loop ends (README.md,
// step 'Group jobs'): every callable it ran is in the count when the wait returns, the group jobs
// and the task nodes of callables too large for one alike. One worker, so nobody steals and the
// waiter runs them all.
TEST(GroupJobs, TheStatisticsCountEveryCallableAWaitRan) {
  Scheduler pool(1);
  constexpr int kEach = 100;
  std::atomic<int> ran{0};
  std::uint64_t counted_by_the_wait = 0;
  const std::uint64_t before = pool.stats().tasks_executed();
  pool.submit([&] {
    const std::uint64_t at_start = pool.stats().tasks_executed();
    TaskGroup g(pool);
    std::array<char, 64> large{};  // too large for a group job: a task node
    for (int i = 0; i < kEach; ++i) {
      g.run([&ran] { ran.fetch_add(1, std::memory_order_relaxed); });
      g.run([&ran, large] { ran.fetch_add(1 + large[0], std::memory_order_relaxed); });
    }
    g.wait();
    counted_by_the_wait = pool.stats().tasks_executed() - at_start;
  });
  pool.wait_idle();
  EXPECT_EQ(ran.load(), 2 * kEach);
  EXPECT_EQ(counted_by_the_wait, static_cast<std::uint64_t>(2 * kEach));
  EXPECT_EQ(pool.stats().tasks_executed() - before, static_cast<std::uint64_t>(2 * kEach + 1));
}

}  // namespace
}  // namespace wslab
