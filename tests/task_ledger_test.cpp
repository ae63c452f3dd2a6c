// TaskLedger, the bookkeeping every pool shares: the batched retire(n) that stage 4's workers use
// to pay their deferred retirements, and the shutdown floor.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <optional>
#include <stdexcept>
#include <thread>

#include "common/task_ledger.hpp"

namespace {

TEST(TaskLedger, RetireManyReachesZeroOnlyWithTheLastTask) {
  wslab::TaskLedger ledger;
  for (int i = 0; i < 5; ++i)
    (void)ledger.admit_external("test");
  EXPECT_FALSE(ledger.retire(2));
  EXPECT_EQ(ledger.in_flight(), 3);
  EXPECT_FALSE(ledger.retire(3));
  EXPECT_EQ(ledger.in_flight(), 0);
}

// A waiter blocked in wait_idle() is released by one retire(n) that pays for several tasks.
TEST(TaskLedger, RetireManyWakesAWaiter) {
  wslab::TaskLedger ledger;
  for (int i = 0; i < 3; ++i)
    (void)ledger.admit_external("test");
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
    (void)ledger.admit_external("test");
  ledger.begin_shutdown(/*from_own_worker=*/true);
  EXPECT_FALSE(ledger.retire(2));
  EXPECT_FALSE(ledger.drained());
  EXPECT_TRUE(ledger.retire(1));
  EXPECT_TRUE(ledger.drained());
  EXPECT_THROW((void)ledger.admit_external("test"), std::logic_error);
}

// The destructor's wait for submitters (SubmitterStay): an outside thread whose task has already
// run, and whose count has already dropped, may still be inside submit() on its way to waking a
// worker. The destructor's ledger steps must not finish before that thread has left.
TEST(TaskLedger, DestructionWaitsForASubmitterStillInsideSubmit) {
  wslab::TaskLedger ledger;
  std::optional<wslab::TaskLedger::SubmitterStay> stay{ledger.admit_external("test")};
  EXPECT_EQ(ledger.submitters(), 1);
  ledger.retire();  // the task ran (and, in the real case, began destroying the pool)
  EXPECT_EQ(ledger.in_flight(), 0);  // the stay shares the count's word, not its task count
  EXPECT_EQ(ledger.submitters(), 1);
  std::atomic<bool> finished{false};
  std::thread destructor([&] {
    ledger.begin_shutdown(/*from_own_worker=*/false);
    ledger.wait_drained();
    ledger.wait_out_submitters();
    finished.store(true);
  });
  // A negative check: a broken wait lets the thread finish at once, a working one never does
  // while the stay lasts. The pause only gives a broken wait the time to show itself.
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(finished.load()) << "the destructor finished while a submitter was inside submit()";
  stay.reset();  // the submitter leaves submit()
  destructor.join();
  EXPECT_TRUE(finished.load());
  EXPECT_EQ(ledger.submitters(), 0);
}

// A refused submission ends its stay itself (nothing is returned to end it).
TEST(TaskLedger, ARefusedSubmissionLeavesNoStayBehind) {
  wslab::TaskLedger ledger;
  ledger.begin_shutdown(false);
  EXPECT_THROW((void)ledger.admit_external("test"), std::logic_error);
  EXPECT_EQ(ledger.submitters(), 0);
  EXPECT_EQ(ledger.in_flight(), 0);
}

}  // namespace
