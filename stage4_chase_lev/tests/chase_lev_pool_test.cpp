// ChaseLevPool beyond the conformance suite: parking and waking thousands of times, shutdown of
// a parked pool, and every knob in each of its positions, each checked by exactly-once counts.
#include "stage4_chase_lev/chase_lev_pool.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "common/config.hpp"
#include "tests/exactly_once.hpp"
#include "tests/test_scale.hpp"

namespace {

using wslab::BasicChaseLevPool;
using wslab::ChaseLevKnobs;
using wslab::ChaseLevLayout;
using wslab::ChaseLevPool;
using wslab::test::ExactlyOnce;

// E external tasks, each submitting R recursive ones. Invariant: each of the E * (1 + R) tasks
// ran exactly once, and the pool's own statistics count exactly that many.
template <class Pool>
void recursive_grid(Pool& pool, std::size_t externals, std::size_t children) {
  ExactlyOnce counts(externals * (1 + children));
  const std::uint64_t before = pool.stats().tasks_executed();
  for (std::size_t e = 0; e < externals; ++e) {
    pool.submit([&pool, &counts, e, children] {
      const std::size_t base = e * (1 + children);
      for (std::size_t c = 1; c <= children; ++c)
        pool.submit([&counts, i = base + c] { counts.mark(i); });
      counts.mark(base);
    });
  }
  pool.wait_idle();
  counts.expect_each_once();
  EXPECT_EQ(pool.stats().tasks_executed() - before, counts.size());
}

ChaseLevKnobs parks_at_once() {
  ChaseLevKnobs knobs;
  knobs.spin_rounds = 0;  // every idle moment goes through announce / re-scan / futex sleep
  return knobs;
}

TEST(ChaseLevParking, IdleAndWakeThousandsOfTimesWithoutAStall) {
  // A lost wake-up hangs a round (ctest's timeout catches it).
  ChaseLevPool pool(2, {}, parks_at_once());
  const std::size_t rounds = wslab::kSanitized ? 500 : 5000;
  ExactlyOnce counts(rounds);
  for (std::size_t r = 0; r < rounds; ++r) {
    pool.submit([&counts, r] { counts.mark(r); });
    pool.wait_idle();
  }
  counts.expect_each_once();
  // An idle worker with no spin budget parks. Waits for that: a loaded machine may preempt the
  // workers so that every round ends before either of them reaches its park.
  EXPECT_TRUE(wslab::test::eventually([&] { return pool.stats().total().parks > 0; }))
      << "no worker of the idle pool ever parked";
}

TEST(ChaseLevParking, ABlockedTaskGetsItsPartnerRunByAParkedWorker) {
  // Task A pushes B onto its own deque and waits for it without helping: only the other worker,
  // parked or on its way to park, can run B, so A's push must wake it. Repeated to hit both
  // orders of the race between the push and the other worker's announce.
  ChaseLevPool pool(2, {}, parks_at_once());
  const std::size_t rounds = wslab::kSanitized ? 200 : 2000;
  ExactlyOnce counts(2 * rounds);
  for (std::size_t r = 0; r < rounds; ++r) {
    std::atomic<bool> b_ran{false};
    pool.submit([&, r] {
      pool.submit([&, r] {
        counts.mark(2 * r + 1);
        b_ran.store(true, std::memory_order_release);
      });
      while (!b_ran.load(std::memory_order_acquire))
        std::this_thread::yield();
      counts.mark(2 * r);
    });
    pool.wait_idle();
  }
  counts.expect_each_once();
}

TEST(ChaseLevParking, ManyOutsideSubmittersWakeAParkedPool) {
  // Every submission goes through the injector into a pool whose workers keep parking.
  ChaseLevPool pool(3, {}, parks_at_once());
  constexpr std::size_t kThreads = 4;
  const std::size_t per = wslab::kSanitized ? 2'000 : 20'000;
  ExactlyOnce counts(kThreads * per);
  std::vector<std::thread> submitters;
  for (std::size_t t = 0; t < kThreads; ++t) {
    submitters.emplace_back([&, t] {
      for (std::size_t i = 0; i < per; ++i) {
        pool.submit([&counts, k = t * per + i] { counts.mark(k); });
        if (i % 64 == 0) std::this_thread::yield();  // let the workers run dry and park
      }
    });
  }
  for (std::thread& t : submitters)
    t.join();
  pool.wait_idle();
  counts.expect_each_once();
}

TEST(ChaseLevParking, BurstAfterIdleWakesWorkersAndCompletes) {
  ChaseLevKnobs knobs;
  knobs.spin_rounds = 2;
  ChaseLevPool pool(4, {}, knobs);
  for (int r = 0; r < (wslab::kSanitized ? 20 : 200); ++r) {
    recursive_grid(pool, 8, 50);
    std::this_thread::sleep_for(std::chrono::microseconds(200));  // let every worker park
  }
}

TEST(ChaseLevParking, DestroyingAParkedPoolWakesAndJoinsEveryWorker) {
  // Shutdown's wake-all must reach workers asleep and workers between announce and sleep.
  for (int r = 0; r < (wslab::kSanitized ? 50 : 500); ++r) {
    std::atomic<int> ran{0};
    {
      ChaseLevPool pool(3, {}, parks_at_once());
      pool.submit([&ran] { ran.fetch_add(1); });
      if (r % 2 == 0) std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    ASSERT_EQ(ran.load(), 1);
  }
}

// ---- every knob in each position: the result must not depend on it ----

template <ChaseLevLayout Layout = ChaseLevLayout{}>
void grids_with(ChaseLevKnobs knobs, std::size_t threads = 3) {
  BasicChaseLevPool<Layout> pool(threads, {}, knobs);
  recursive_grid(pool, 1000, 50);
  recursive_grid(pool, 10, 5000);
  recursive_grid(pool, 20'000, 0);
}

TEST(Stage4Knobs, OwnerOrderLifoAndFifo) {
  for (auto order : {ChaseLevKnobs::OwnerOrder::lifo, ChaseLevKnobs::OwnerOrder::fifo}) {
    ChaseLevKnobs knobs;
    knobs.owner_order = order;
    grids_with(knobs);
  }
}

TEST(Stage4Knobs, InjectorAfterLocalFirstAndLast) {
  for (auto where : {ChaseLevKnobs::Injector::after_local, ChaseLevKnobs::Injector::first,
                     ChaseLevKnobs::Injector::last}) {
    ChaseLevKnobs knobs;
    knobs.injector = where;
    grids_with(knobs);
  }
}

TEST(Stage4Knobs, SpinRoundsZeroAndDefault) {
  grids_with(parks_at_once());
  grids_with(ChaseLevKnobs{});
}

TEST(Stage4Knobs, DequeCapacityTwoAndDefault) {
  ChaseLevKnobs knobs;
  knobs.deque_capacity = 2;  // grows on almost every burst, while thieves read
  grids_with(knobs);
  grids_with(ChaseLevKnobs{});
}

TEST(Stage4Knobs, PaddedAndUnpaddedLayout) {
  grids_with<ChaseLevLayout{.padded = true}>(ChaseLevKnobs{});
  grids_with<ChaseLevLayout{.padded = false}>(ChaseLevKnobs{});
}

TEST(Stage4Knobs, DefaultsAreTheDesign) {
  ChaseLevPool pool(2);
  EXPECT_EQ(pool.knobs().owner_order, ChaseLevKnobs::OwnerOrder::lifo);
  EXPECT_EQ(pool.knobs().injector, ChaseLevKnobs::Injector::after_local);
  EXPECT_GT(pool.knobs().spin_rounds, 0u);
  EXPECT_EQ(pool.knobs().deque_capacity, 256u);
}

// The order knobs do what they say: one worker, whose running task leaves children on its deque
// while an outside task waits in the injector. Records the order in which they then run.
std::vector<int> run_order(ChaseLevKnobs knobs) {
  ChaseLevPool pool(1, {}, knobs);
  std::mutex m;
  std::vector<int> order;
  auto record = [&](int id) {
    std::lock_guard<std::mutex> lock(m);
    order.push_back(id);
  };
  std::atomic<bool> outside_queued{false};
  pool.submit([&] {
    while (!outside_queued.load(std::memory_order_acquire))
      std::this_thread::yield();
    for (int child = 1; child <= 3; ++child)
      pool.submit([&record, child] { record(child); });
  });
  // The worker is busy in the task above, so this one waits in the injector.
  pool.submit([&record] { record(0); });
  outside_queued.store(true, std::memory_order_release);
  pool.wait_idle();
  return order;
}

TEST(Stage4Knobs, OrderKnobsChangeTheRunOrder) {
  ChaseLevKnobs knobs;
  EXPECT_EQ(run_order(knobs), (std::vector<int>{3, 2, 1, 0}));  // newest child first (LIFO)
  knobs.owner_order = ChaseLevKnobs::OwnerOrder::fifo;
  EXPECT_EQ(run_order(knobs), (std::vector<int>{1, 2, 3, 0}));
  knobs = {};
  knobs.injector = ChaseLevKnobs::Injector::first;
  EXPECT_EQ(run_order(knobs), (std::vector<int>{0, 3, 2, 1}));
  knobs.injector = ChaseLevKnobs::Injector::last;  // one worker: nobody to steal from
  EXPECT_EQ(run_order(knobs), (std::vector<int>{3, 2, 1, 0}));
}

TEST(ChaseLevPool, OutsideTryRunOneTakesFromTheInjectorAndSteals) {
  ChaseLevPool pool(1);
  std::atomic<bool> release{false};
  std::atomic<bool> busy{false};
  ExactlyOnce counts(21);
  pool.submit([&] {
    for (std::size_t i = 1; i <= 10; ++i)
      pool.submit([&counts, i] { counts.mark(i); });  // onto the worker's deque: stolen below
    busy.store(true, std::memory_order_release);
    while (!release.load(std::memory_order_acquire))
      std::this_thread::yield();
    counts.mark(0);
  });
  while (!busy.load(std::memory_order_acquire))
    std::this_thread::yield();
  for (std::size_t i = 11; i <= 20; ++i)
    pool.submit([&counts, i] { counts.mark(i); });  // into the injector
  int helped = 0;
  while (pool.try_run_one())
    ++helped;
  EXPECT_EQ(helped, 20);
  release.store(true, std::memory_order_release);
  pool.wait_idle();
  counts.expect_each_once();
  EXPECT_EQ(pool.stats().tasks_run_outside, 20u);
}

}  // namespace
