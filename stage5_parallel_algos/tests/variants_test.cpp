// The stage-5 scheduler as a plain object (as ThreadPool holds it), not made by the registry:
// fork-join's fast path, and each ablation knob really switching its refinement off, where that
// shows from outside. The registry's stage-5 variants on the fast path, and every other pool on
// the generic one, are tests/algorithms/variants_test.cpp.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <thread>

#include "stage5_parallel_algos/algorithms/range_splitter.hpp"
#include "stage5_parallel_algos/fork_join/join.hpp"
#include "stage5_parallel_algos/fork_join/task_group.hpp"
#include "stage5_parallel_algos/scheduler/scheduler.hpp"
#include "stage5_parallel_algos/tests/algos_test_util.hpp"
#include "stage5_parallel_algos/tests/allocation_counter.hpp"
#include "stage5_parallel_algos/tests/blocked_task.hpp"
#include "stage5_parallel_algos/tests/idle_pool.hpp"
#include "stage5_parallel_algos/tests/seat_guest.hpp"

namespace wslab {
namespace {

using test::allocations_on_a_worker;
using test::idle_gate_count;
using test::wait_for_parks;

using test::fib_join;
using test::timed_leaves_for;

// ---- The scheduler as an object takes the fast path. ----

// Not made by the registry's factory: the same fast path as the registry's stage-5 variants
// (tests/algorithms/variants_test.cpp).
TEST(Stage5Type, ASchedulerObjectTakesTheFastPath) {
  Scheduler pool(2);
  std::uint64_t result = 0;
  EXPECT_EQ(allocations_on_a_worker(pool, [&] { result = fib_join(pool, 18); }), 0u);
  EXPECT_EQ(result, 2584u);
  const std::thread::id caller = std::this_thread::get_id();
  test::wait_until_a_worker_sleeps(pool);  // the seat is lent only in a sleeper's place
  auto [a_here, unused] = join(
      pool, [&] { return std::this_thread::get_id() == caller && pool.owns_current_thread(); },
      [] { return 0; });
  EXPECT_TRUE(a_here);
  EXPECT_TRUE(timed_leaves_for(pool, 0));
}

// TaskGroup reaches the scheduler through the same handle as join: its callables are task nodes
// from the worker's cache, so a second round allocates nothing (the heap path of other pools
// allocates a job per run()).
TEST(Stage5Type, ASchedulerObjectRunsTaskGroupsOnTaskNodes) {
  Scheduler pool(1);
  constexpr std::size_t kCallables = 200;  // within the deque's initial capacity: no growth
  std::atomic<std::size_t> ran{0};
  auto round = [&] {
    TaskGroup group(pool);
    for (std::size_t i = 0; i < kCallables; ++i)
      group.run([&ran] { ran.fetch_add(1, std::memory_order_relaxed); });
    group.wait();
  };
  std::size_t second_round = ~std::size_t{0};
  allocations_on_a_worker(pool, [&] {
    round();  // fills the worker's node cache
    const std::size_t before = test::allocations_on_this_thread();
    round();
    second_round = test::allocations_on_this_thread() - before;
  });
  EXPECT_EQ(ran.load(), 2 * kCallables);
  EXPECT_EQ(second_round, 0u);
}

// A worker of one scheduler joining on another takes the other's outside path (its guest seat),
// not its own worker's deque.
TEST(Stage5Type, AWorkerOfAnotherSchedulerIsAnOutsider) {
  Scheduler outer(1);
  Scheduler inner(2);
  // An outsider's join runs `a` on the calling thread when every worker of the pool is busy
  // (none sleeps or searches), which is also how the workers of a new pool look before they
  // first reach their loop on a loaded machine. Wait until one of inner's workers is idle.
  while (Scheduler::ForkJoinHandle(inner).every_worker_busy())
    std::this_thread::yield();
  std::atomic<int> ok{0};
  outer.submit([&] {
    auto [a_on_inner, result] = join(
        inner, [&] { return inner.owns_current_thread() && !outer.owns_current_thread(); },
        [&] { return fib_join(inner, 10); });
    if (a_on_inner && result == 55u && outer.owns_current_thread()) ok = 1;
  });
  outer.wait_idle();
  EXPECT_EQ(ok.load(), 1);
}

// ---- Each knob switches its refinement off. ----

// With the cache a worker's second burst of spawns reuses the nodes of its first; without it,
// every spawn allocates its node.
TEST(Stage5Knobs, NoNodeCacheAllocatesANodePerSpawn) {
  constexpr std::size_t kSpawns = 100;
  for (bool cache : {true, false}) {
    Scheduler pool(1, {}, SchedulerKnobs{.node_cache = cache});
    std::size_t allocations = 0;
    for (int round = 0; round < 2; ++round) {  // the first round fills the cache
      allocations = allocations_on_a_worker(pool, [&] {
        for (std::size_t i = 0; i < kSpawns; ++i)
          pool.spawn([] {});
      });
    }
    EXPECT_EQ(allocations, cache ? 0u : kSpawns) << "node_cache " << cache;
  }
}

// With the gate, a pool of one worker (no victim, so no thief) leaves its pops fence-free; without
// it, one session is open for good, so every pop fences.
TEST(Stage5Knobs, NoStealGateKeepsASessionOpenForGood) {
  for (bool gate : {true, false}) {
    Scheduler pool(1, {}, SchedulerKnobs{.steal_gate = gate});
    pool.submit([&] { fib_join(pool, 15); });  // on the worker: an outside join would seat a
    pool.wait_idle();                          // guest, a victim for the worker to steal from
    EXPECT_EQ(pool.open_steal_sessions(), idle_gate_count() + (gate ? 0 : 1)) << "gate " << gate;
  }
}

// A thief's session: with lingering it stays open while the thief runs what it stole, and is
// left open (idle, for the next thief) when the thief parks; without, it closes at the thief's
// first job and when it parks.
TEST(Stage5Knobs, NoLingerClosesTheSessionAtTheThiefsFirstJob) {
  for (bool linger : {true, false}) {
    SCOPED_TRACE(linger ? "linger" : "no_linger");
    // Without Step 'Look first', so that a search of the empty pool opens a session.
    Scheduler pool(2, {}, SchedulerKnobs{.linger = linger, .look_first = false});
    // Both workers searched (a session each: two workers, so a victim) and parked.
    wait_for_parks(pool, 2);
    if (linger) {
      EXPECT_GT(pool.open_steal_sessions(), idle_gate_count());
    } else {
      EXPECT_EQ(pool.open_steal_sessions(), idle_gate_count());
    }
    // One worker spawns a task and waits for the other to steal it: the sessions open while the
    // stolen task runs.
    std::atomic<std::uint32_t> while_running{0};
    std::atomic<bool> stolen_ran{false};
    pool.submit([&] {
      pool.spawn([&] {
        while_running = pool.open_steal_sessions();
        stolen_ran = true;
      });
      while (!stolen_ran)
        std::this_thread::yield();
    });
    pool.wait_idle();
    if (linger) {
      EXPECT_GT(while_running.load(), idle_gate_count());
    } else {
      EXPECT_EQ(while_running.load(), idle_gate_count());
    }
  }
}

// Quick scans come before a worker counts itself a searcher. With no spin budget, a worker that
// runs dry and parks fails one steal per scan: the quick ones, then the re-scan after
// announcing. Without quick scans, only the re-scan.
TEST(Stage5Knobs, NoQuickScansGoesStraightToSearching) {
  for (std::uint32_t quick : {4u, 0u}) {
    Scheduler pool(2, {}, SchedulerKnobs{.spin_rounds = 0, .quick_scans = quick});
    wait_for_parks(pool, 2);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));  // nobody wakes them
    const WorkerStats total = pool.stats().total();
    EXPECT_EQ(total.failed_steals, (quick + 1) * total.parks) << quick << " quick scans";
  }
}

// Step 'Look first': two workers search the empty pool and park. Looking first, neither opens a
// session (nothing looked worth a steal), so a busy owner would pop without fences; without it,
// each search opened one before it looked, and parking left it open for the next thief.
TEST(Stage5Knobs, NoLookFirstOpensASessionToFindNothing) {
  for (bool look : {true, false}) {
    Scheduler pool(2, {}, SchedulerKnobs{.look_first = look});
    wait_for_parks(pool, 2);
    if (look) {
      EXPECT_EQ(pool.open_steal_sessions(), idle_gate_count());
    } else {
      EXPECT_GT(pool.open_steal_sessions(), idle_gate_count());
    }
    // Looked at or not, an empty victim is a failed steal: quick scans, then the search (the
    // count NoQuickScansGoesStraightToSearching checks).
    EXPECT_GT(pool.stats().total().failed_steals, 0u) << "look_first " << look;
  }
}

// Step 'Forks off the count': a fork's take-back counts nothing for the steal sessions, so a thief
// whose stolen job only forks keeps its session open as long as it forks, until an owner busy
// with kLinger jobs of its own asks it to close: its next take-back closes it. One worker spawns
// a job and waits until the other has stolen it (a session opens); the job forks fib(12) by join
// again and again until told to stop. The first worker then runs task groups of 2 * kLinger
// callables, its own jobs, until no session is open, for up to 10 seconds (a bounded wait, not a
// sleep) while the thief still forks. Without the ask (Scheduler::close_forkers_sessions()) the
// thief's session stays open as long as it forks, and the rounds run out. Without the guest seat,
// so that the test's own thread, waiting outside, holds no session of its own.
TEST(Stage5Sessions, ABusyOwnerClosesTheSessionOfAThiefThatOnlyForks) {
  Scheduler pool(2, {}, SchedulerKnobs{.guest_seat = false});
  std::atomic<bool> forking{false};
  std::atomic<bool> stop{false};
  std::uint32_t open_while_forking = 0;
  bool closed = false;
  std::uint64_t rounds = 0;
  std::uint64_t wrong = 0;
  pool.submit([&] {
    pool.spawn([&] {
      forking.store(true, std::memory_order_release);
      for (; !stop.load(std::memory_order_acquire); ++rounds) {
        if (fib_join(pool, 12) != 144) ++wrong;
      }
    });
    while (!forking.load(std::memory_order_acquire))
      std::this_thread::yield();
    open_while_forking = pool.open_steal_sessions();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    do {
      TaskGroup group(pool);
      for (std::uint32_t i = 0; i < 2 * sched::kLinger; ++i)
        group.run([] {});
      group.wait();
      closed = pool.open_steal_sessions() == idle_gate_count();
    } while (!closed && std::chrono::steady_clock::now() < deadline);
    stop.store(true, std::memory_order_release);
  });
  pool.wait_idle();
  ASSERT_GT(open_while_forking, idle_gate_count()) << "the thief opened no session";
  EXPECT_TRUE(closed) << "the session of the thief that only forks stayed open";
  EXPECT_GT(rounds, 0u);
  EXPECT_EQ(wrong, 0u);
}

// The guest seat: an outside thread gets it only where it is switched on.
TEST(Stage5Knobs, NoGuestSeatRefusesEveryOutsideCaller) {
  for (bool seat : {true, false}) {
    Scheduler pool(2, {}, SchedulerKnobs{.guest_seat = seat});
    wait_for_parks(pool, 2);  // both asleep: only the knob can refuse the seat
    Scheduler::GuestSeat held = Scheduler::ForkJoinHandle(pool).try_seat_guest();
    EXPECT_EQ(static_cast<bool>(held), seat);
    EXPECT_EQ(pool.owns_current_thread(), seat);
  }
}

}  // namespace
}  // namespace wslab
