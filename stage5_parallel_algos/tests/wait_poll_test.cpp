// Step 'Adaptive wait' (README.md): an outside thread in wait_idle() stops polling after its polls
// ran out twice in a row, probes one wait in eight, and polls again after a probe that saw the
// pool drain. The policy on its own, then on a pool whose waits are long by construction.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <thread>

#include "stage5_parallel_algos/scheduler/scheduler.hpp"
#include "stage5_parallel_algos/scheduler/wait_poll.hpp"
#include "stage5_parallel_algos/tests/blocked_task.hpp"

namespace wslab::sched {
namespace {

// Calls poll_first() `count` times, reporting each poll as having run out; returns how many polled.
std::uint32_t waits_that_poll(WaitPoll& policy, std::uint32_t count) {
  std::uint32_t polled = 0;
  for (std::uint32_t i = 0; i < count; ++i) {
    if (policy.poll_first()) {
      ++polled;
      policy.polled(false);
    }
  }
  return polled;
}

TEST(WaitPoll, TwoPollsThatRunOutMakeTheNextSevenWaitsSleepAtOnce) {
  WaitPoll policy(true);
  EXPECT_EQ(waits_that_poll(policy, WaitPoll::kSleepAfter), WaitPoll::kSleepAfter);
  for (std::uint32_t i = 0; i + 1 < WaitPoll::kProbeEvery; ++i)
    EXPECT_FALSE(policy.poll_first()) << "wait " << i << " after the streak";
  EXPECT_EQ(policy.slept_at_once(), WaitPoll::kProbeEvery - 1);
  EXPECT_EQ(policy.polls_run_out(), WaitPoll::kSleepAfter);
}

TEST(WaitPoll, OneWaitInEightProbesWhileTheWaitsStayLong) {
  WaitPoll policy(true);
  waits_that_poll(policy, WaitPoll::kSleepAfter);
  // Three probe periods: one poll in each, every one of them running out.
  EXPECT_EQ(waits_that_poll(policy, 3 * WaitPoll::kProbeEvery), 3u);
}

TEST(WaitPoll, AProbeThatSeesTheDrainEndsTheStreak) {
  WaitPoll policy(true);
  waits_that_poll(policy, WaitPoll::kSleepAfter);
  std::uint32_t before_probe = 0;
  while (!policy.poll_first())
    ++before_probe;
  EXPECT_EQ(before_probe, WaitPoll::kProbeEvery - 1);
  policy.polled(true);  // the waits are short again
  EXPECT_EQ(waits_that_poll(policy, WaitPoll::kSleepAfter), WaitPoll::kSleepAfter);
}

TEST(WaitPoll, SwitchedOffEveryWaitPolls) {
  WaitPoll policy(false);
  EXPECT_EQ(waits_that_poll(policy, 4 * WaitPoll::kProbeEvery), 4 * WaitPoll::kProbeEvery);
  EXPECT_EQ(policy.slept_at_once(), 0u);
}

// Four waits, each for a task the test releases only once the waiter has made its choice (and, if
// it polled, its poll has run out), so every wait outlasts its poll. With the step the last two
// sleep at once; without it all four poll.
TEST(Stage5Knobs, NoAdaptiveWaitPollsThroughEveryLongWait) {
  constexpr std::uint64_t kWaits = 4;
  for (bool adaptive : {true, false}) {
    Scheduler pool(1, {}, SchedulerKnobs{.adaptive_wait = adaptive});
    const WaitPoll& policy = pool.wait_poll();
    for (std::uint64_t wait = 1; wait <= kWaits; ++wait) {
      test::BlockedTask blocked(pool);
      std::thread releaser([&] {
        while (policy.polls_run_out() + policy.slept_at_once() < wait)
          std::this_thread::yield();
        blocked.release();
      });
      pool.wait_idle();
      releaser.join();
    }
    EXPECT_EQ(policy.polls_run_out(), adaptive ? WaitPoll::kSleepAfter : kWaits) << adaptive;
    EXPECT_EQ(policy.slept_at_once(), adaptive ? kWaits - WaitPoll::kSleepAfter : 0u) << adaptive;
  }
}

}  // namespace
}  // namespace wslab::sched
