// InjectorQueue: FIFO across many segments, and the many-producer many-consumer stress test whose
// invariants are "every item exactly once" and "FIFO per producer" (tests/injector_stress.hpp).
#include "stage4_chase_lev/injector_queue.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <optional>

#include "common/config.hpp"
#include "tests/injector_stress.hpp"

namespace {

using wslab::chase_lev::InjectorQueue;
using wslab::test::check_mpmc_exactly_once_fifo_per_producer;

TEST(InjectorSmoke, EmptyQueueGivesNothing) {
  InjectorQueue<std::uintptr_t> q;
  EXPECT_TRUE(q.empty());
  EXPECT_FALSE(q.pop().has_value());
}

TEST(InjectorSmoke, FifoAcrossManySegments) {
  InjectorQueue<std::uintptr_t, 4> q;  // small segments: many switches
  for (std::uintptr_t round = 0; round < 3; ++round) {
    for (std::uintptr_t i = 0; i < 1000; ++i)
      q.push(i);
    EXPECT_FALSE(q.empty());
    for (std::uintptr_t i = 0; i < 1000; ++i)
      ASSERT_EQ(*q.pop(), i);
    EXPECT_FALSE(q.pop().has_value());
  }
}

TEST(InjectorSmoke, MoveOnlyItemsAreMovedOutAndLeftoversDestroyed) {
  // ASan's leak checker backs the last assertion: the destructor must destroy queued items.
  InjectorQueue<std::unique_ptr<int>, 4> q;
  for (int i = 0; i < 25; ++i)
    q.push(std::make_unique<int>(i));
  for (int i = 0; i < 10; ++i) {
    std::optional<std::unique_ptr<int>> got = q.pop();
    ASSERT_TRUE(got.has_value());
    ASSERT_EQ(**got, i);
  }
  std::unique_ptr<int> out;
  ASSERT_TRUE(q.try_pop(out));
  EXPECT_EQ(*out, 10);
}

TEST(InjectorSmoke, DestructorFreesQueuedSegments) {
  // ASan's leak checker is the assertion here.
  InjectorQueue<std::uintptr_t, 4> q;
  for (std::uintptr_t i = 0; i < 101; ++i)
    q.push(i);
  for (std::uintptr_t i = 0; i < 50; ++i)
    ASSERT_EQ(*q.pop(), i);
}

constexpr std::uint64_t kPerProducer = wslab::kSanitized ? 50'000 : 1'000'000;

TEST(InjectorStress, FourProducersFourConsumersExactlyOnceFifoPerProducer) {
  check_mpmc_exactly_once_fifo_per_producer<InjectorQueue<std::uint64_t, 32>>(4, 4, kPerProducer);
}

TEST(InjectorStress, TinySegmentsStressTheSwitchAndTheFreeing) {
  check_mpmc_exactly_once_fifo_per_producer<InjectorQueue<std::uint64_t, 2>>(3, 3,
                                                                             kPerProducer / 2);
}

TEST(InjectorStress, Spsc) {
  check_mpmc_exactly_once_fifo_per_producer<InjectorQueue<std::uint64_t, 32>>(1, 1, kPerProducer);
}

}  // namespace
