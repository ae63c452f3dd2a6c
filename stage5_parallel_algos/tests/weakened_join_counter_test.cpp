// Built only under ThreadSanitizer and registered with WILL_FAIL: a co_join counter whose
// arrival is relaxed must make TSan report a data race (the last child reads the other's result
// with no happens-before edge). The test passes, ctest-wise, when TSan aborts.
#include <gtest/gtest.h>

#include "stage5_parallel_algos/tests/join_counter_check.hpp"

namespace {

TEST(WeakenedJoinCounter, ThreadSanitizerCatchesARelaxedArrival) {
  using Relaxed = wslab::detail::BasicJoinCounter<std::memory_order_relaxed>;
  EXPECT_EQ(wslab::test::children_arrive_and_the_last_reads_both<Relaxed>(200), 200);
}

}  // namespace
