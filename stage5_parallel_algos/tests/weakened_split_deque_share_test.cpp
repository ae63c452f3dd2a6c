// Built only under ThreadSanitizer and registered with WILL_FAIL: a split deque whose
// share_pushed() publishes with a relaxed store must make TSan report a data race (a thief reads a
// frame the owner built in the slot with no happens-before edge). The test passes, ctest-wise, when
// TSan aborts.
#include <gtest/gtest.h>

#include "stage5_parallel_algos/tests/split_deque_frames.hpp"

namespace {

TEST(WeakenedSplitDequeShare, ThreadSanitizerCatchesARelaxedShare) {
  using Relaxed = wslab::sched::BasicSplitDeque<wslab::sched::SplitDequeReclaim::cas, true,
                                                wslab::sched::SplitDequeShare::relaxed>;
  const wslab::test::FramesOutcome outcome =
      wslab::test::nested_frames_against_a_thief<Relaxed>(200, 8, 0);
  EXPECT_EQ(outcome.not_once, 0u);
  EXPECT_EQ(outcome.torn, 0u);
}

}  // namespace
