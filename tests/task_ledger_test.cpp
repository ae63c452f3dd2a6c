// TaskLedger, the bookkeeping every pool shares: the batched retire(n) that stage 4's workers use
// to pay their deferred retirements, and the shutdown floor.
#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <thread>

#include "common/task_ledger.hpp"

namespace {

TEST(TaskLedger, RetireManyReachesZeroOnlyWithTheLastTask) {
  wslab::TaskLedger ledger;
  for (int i = 0; i < 5; ++i)
    ledger.admit_external("test");
  EXPECT_FALSE(ledger.retire(2));
  EXPECT_EQ(ledger.in_flight(), 3);
  EXPECT_FALSE(ledger.retire(3));
  EXPECT_EQ(ledger.in_flight(), 0);
}

// A waiter blocked in wait_idle() is released by one retire(n) that pays for several tasks.
TEST(TaskLedger, RetireManyWakesAWaiter) {
  wslab::TaskLedger ledger;
  for (int i = 0; i < 3; ++i)
    ledger.admit_external("test");
  std::atomic<bool> returned{false};
  std::thread waiter([&] {
    ledger.wait_idle("test", false);
    returned.store(true);
  });
  EXPECT_FALSE(ledger.retire(1));
  EXPECT_FALSE(ledger.retire(2));
  waiter.join();  // would hang if the batched retirement forgot the notify
  EXPECT_TRUE(returned.load());
}

// During shutdown from inside a task the floor is 1 (the destroying task itself): a retire(n)
// that takes the count to the floor reports the pool drained, one that stops above it does not.
TEST(TaskLedger, RetireManyReportsDrainedAtTheShutdownFloor) {
  wslab::TaskLedger ledger;
  for (int i = 0; i < 4; ++i)
    ledger.admit_external("test");
  ledger.begin_shutdown(/*from_own_worker=*/true);
  EXPECT_FALSE(ledger.retire(2));
  EXPECT_FALSE(ledger.drained());
  EXPECT_TRUE(ledger.retire(1));
  EXPECT_TRUE(ledger.drained());
  EXPECT_THROW(ledger.admit_external("test"), std::logic_error);
}

}  // namespace
