// Built only under ThreadSanitizer and registered with WILL_FAIL: the deque whose push() lacks
// its release fence must make TSan report a data race (the thief reads a payload the owner wrote
// with no happens-before edge between them). The test passes, ctest-wise, when TSan aborts.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "stage4_chase_lev/chase_lev_deque.hpp"

namespace {

struct Payload {
  int value = 0;  // plain, non-atomic: the data the deque's orderings must publish
};

TEST(WeakenedDeque, ThreadSanitizerCatchesPushWithoutRelease) {
  wslab::ChaseLevDeque<Payload*, wslab::NoPushRelease> d(1024);
  constexpr int kItems = 1000;
  static Payload payloads[kItems];
  std::atomic<int> seen{0};
  std::thread thief([&] {
    while (seen.load(std::memory_order_relaxed) < kItems / 2) {
      auto r = d.steal();
      if (r.outcome == wslab::StealOutcome::success) {
        EXPECT_EQ(r.item->value, 1);  // the racy read
        seen.fetch_add(1, std::memory_order_relaxed);
      }
    }
  });
  for (int i = 0; i < kItems; ++i) {
    payloads[i].value = 1;  // the racy write
    d.push(&payloads[i]);
  }
  thief.join();
  while (d.pop()) {
  }
}

}  // namespace
