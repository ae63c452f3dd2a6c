// Step 'Prepaid admissions' (README.md): a worker's spawn with no debt to cancel admits a batch of
// tasks in one RMW and owes the units it has not spent. The balance on its own, against a model of
// the tasks alive, then on pools whose bursts end just below, at and just past a batch.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>

#include "common/task_ledger.hpp"
#include "stage5_parallel_algos/scheduler/deferred_retirements.hpp"
#include "stage5_parallel_algos/scheduler/scheduler.hpp"
#include "tests/exactly_once.hpp"

namespace wslab::sched {
namespace {

// A seeded walk of spawns, completions and settlements on one worker's balance. The invariant of
// steps 'Node cache' and 'Prepaid admissions': the ledger's count is the tasks alive plus what the
// worker owes, never below the tasks alive, and exactly them once the worker has settled.
void walk(bool deferred, std::uint32_t batch, std::uint64_t seed) {
  TaskLedger ledger;
  DeferredRetirements balance(deferred, batch);
  std::mt19937_64 rng(seed);
  std::int64_t alive = 0;
  for (int step = 0; step < 20'000; ++step) {
    const auto pick = rng() % 16;
    if (pick < 8) {
      balance.admit(ledger);
      ++alive;
    } else if (pick < 15 && alive > 0) {
      (void)balance.retire(ledger);
      --alive;
    } else {
      (void)balance.settle(ledger);
      ASSERT_EQ(balance.owed(), 0) << "step " << step;
      ASSERT_EQ(ledger.in_flight(), alive) << "step " << step << ": settled";
    }
    ASSERT_GE(balance.owed(), 0) << "step " << step;
    ASSERT_EQ(ledger.in_flight(), alive + balance.owed()) << "step " << step;
  }
  (void)balance.settle(ledger);
  EXPECT_EQ(ledger.in_flight(), alive);
}

TEST(PrepaidAdmissions, TheCountIsTheTasksAlivePlusWhatTheWorkerOwes) {
  for (const bool deferred : {true, false})
    for (const std::uint32_t batch : {0u, 1u, 2u, 64u})
      for (std::uint64_t seed = 1; seed <= 4; ++seed) {
        SCOPED_TRACE(testing::Message()
                     << "deferred " << deferred << ", batch " << batch << ", seed " << seed);
        walk(deferred, batch, seed);
      }
}

TEST(PrepaidAdmissions, ASpawnWithNothingOwedAdmitsTheBatch) {
  TaskLedger ledger;
  DeferredRetirements balance(true, 64);
  balance.admit(ledger);
  EXPECT_EQ(ledger.in_flight(), 64);  // one RMW for this spawn and the next 63
  EXPECT_EQ(balance.owed(), 63);
  for (int i = 0; i < 63; ++i)
    balance.admit(ledger);
  EXPECT_EQ(ledger.in_flight(), 64);  // spent without touching the count
  balance.admit(ledger);
  EXPECT_EQ(ledger.in_flight(), 128);
}

TEST(PrepaidAdmissions, OffOrWithoutTheNodeCacheEachSpawnAdmitsItself) {
  for (const bool deferred : {true, false}) {
    TaskLedger ledger;
    DeferredRetirements balance(deferred, deferred ? 1 : 64);
    balance.admit(ledger);
    balance.admit(ledger);
    EXPECT_EQ(ledger.in_flight(), 2) << "deferred " << deferred;
    EXPECT_EQ(balance.owed(), 0) << "deferred " << deferred;
  }
}

// A root task spawns `burst` children, each of which spawns `burst / 8` grandchildren; wait_idle()
// must return (a worker that never paid its unspent units would keep the count above zero for
// good: ctest's timeout) and only after every task ran, each once.
void bursts_on(std::size_t threads, std::uint32_t batch) {
  SchedulerKnobs knobs;
  knobs.admission_batch = batch;
  Scheduler pool(threads, {}, knobs);
  for (const std::size_t burst : {1u, 62u, 63u, 64u, 65u, 129u}) {
    SCOPED_TRACE(testing::Message()
                 << threads << " threads, batch " << batch << ", burst " << burst);
    const std::size_t per_child = burst / 8;
    test::ExactlyOnce children(burst);
    test::ExactlyOnce grandchildren(burst * per_child);
    pool.spawn([&] {
      for (std::size_t i = 0; i < burst; ++i) {
        pool.spawn([&, i] {
          for (std::size_t j = 0; j < per_child; ++j)
            pool.spawn([&, i, j] { grandchildren.mark(i * per_child + j); });
          children.mark(i);
        });
      }
    });
    pool.wait_idle();
    children.expect_each_once();
    grandchildren.expect_each_once();
  }
}

TEST(PrepaidAdmissions, WaitIdleSeesEveryTaskOfBurstsAroundABatch) {
  for (const std::size_t threads : {1u, 2u, 4u})
    for (const std::uint32_t batch : {1u, 64u})
      bursts_on(threads, batch);
}

// The destructor runs every task and what those spawn: a worker that still owes unspent units
// pays them before it sleeps, so the drain ends.
TEST(PrepaidAdmissions, APoolDestroyedWhileItsWorkersOweUnitsRunsEveryTask) {
  for (const std::size_t threads : {1u, 2u}) {
    test::ExactlyOnce ran(3);
    {
      Scheduler pool(threads);
      pool.spawn([&] {
        for (std::size_t i = 0; i < 3; ++i)
          pool.spawn([&, i] { ran.mark(i); });
      });
    }  // the destructor, with no wait_idle() before it
    ran.expect_each_once();
  }
}

}  // namespace
}  // namespace wslab::sched
