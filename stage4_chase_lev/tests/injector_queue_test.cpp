// InjectorQueue: FIFO across many segments, and a many-producer many-consumer stress test whose
// invariants are "every item exactly once" and "FIFO per producer".
#include "stage4_chase_lev/injector_queue.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "common/config.hpp"

namespace {

using wslab::chase_lev::InjectorQueue;

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

// Items encode (producer, sequence). Invariants: each item popped exactly once; each consumer
// sees every producer's items in increasing sequence order.
template <std::size_t Segment>
void mpmc(int producers, int consumers, std::uint64_t per_producer) {
  InjectorQueue<std::uint64_t, Segment> q;
  const std::uint64_t total = per_producer * static_cast<std::uint64_t>(producers);
  std::unique_ptr<std::atomic<std::uint8_t>[]> seen(new std::atomic<std::uint8_t>[total]);
  for (std::uint64_t i = 0; i < total; ++i)
    seen[i].store(0, std::memory_order_relaxed);
  std::atomic<std::uint64_t> popped{0};
  std::atomic<std::uint64_t> duplicates{0};
  std::atomic<std::uint64_t> out_of_order{0};

  std::vector<std::thread> threads;
  for (int p = 0; p < producers; ++p) {
    threads.emplace_back([&, p] {
      for (std::uint64_t s = 0; s < per_producer; ++s) {
        q.push((static_cast<std::uint64_t>(p) << 40) | s);
      }
    });
  }
  for (int c = 0; c < consumers; ++c) {
    threads.emplace_back([&] {
      std::vector<std::int64_t> last(static_cast<std::size_t>(producers), -1);
      while (popped.load(std::memory_order_relaxed) < total) {
        auto item = q.pop();
        if (!item) continue;
        const std::uint64_t p = *item >> 40;
        const std::uint64_t s = *item & ((std::uint64_t{1} << 40) - 1);
        if (static_cast<std::int64_t>(s) <= last[p]) out_of_order.fetch_add(1);
        last[p] = static_cast<std::int64_t>(s);
        if (seen[p * per_producer + s].fetch_add(1) != 0) duplicates.fetch_add(1);
        popped.fetch_add(1, std::memory_order_relaxed);
      }
    });
  }
  for (std::thread& t : threads)
    t.join();
  EXPECT_EQ(duplicates.load(), 0u);
  EXPECT_EQ(out_of_order.load(), 0u);
  std::uint64_t missing = 0;
  for (std::uint64_t i = 0; i < total; ++i)
    missing += seen[i].load() == 0 ? 1 : 0;
  EXPECT_EQ(missing, 0u);
  EXPECT_FALSE(q.pop().has_value());
}

constexpr std::uint64_t kPerProducer = wslab::kSanitized ? 50'000 : 1'000'000;

TEST(InjectorStress, FourProducersFourConsumersExactlyOnceFifoPerProducer) {
  mpmc<32>(4, 4, kPerProducer);
}

TEST(InjectorStress, TinySegmentsStressTheSwitchAndTheFreeing) {
  mpmc<2>(3, 3, kPerProducer / 2);
}

TEST(InjectorStress, Spsc) {
  mpmc<32>(1, 1, kPerProducer);
}

}  // namespace
