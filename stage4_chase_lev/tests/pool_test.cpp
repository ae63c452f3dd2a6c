// ChaseLevPool beyond the conformance suite: parking and waking thousands of times, and every
// knob in both positions.
#include "stage4_chase_lev/chase_lev_pool.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

#include "common/config.hpp"

namespace {

using wslab::BasicChaseLevPool;
using wslab::ChaseLevKnobs;
using wslab::ChaseLevLayout;
using wslab::ChaseLevPool;

// Each external task spawns `children` recursive ones. Invariant: the counter equals the number
// of tasks, and so does the pool's own count of executed tasks.
template <class Pool>
void recursive_grid(Pool& pool, int externals, int children) {
  std::atomic<std::int64_t> ran{0};
  const std::uint64_t before = pool.stats().tasks_executed();
  for (int e = 0; e < externals; ++e) {
    pool.submit([&pool, &ran, children] {
      for (int c = 0; c < children; ++c)
        pool.submit([&ran] { ran.fetch_add(1); });
      ran.fetch_add(1);
    });
  }
  pool.wait_idle();
  const std::int64_t expected = static_cast<std::int64_t>(externals) * (children + 1);
  EXPECT_EQ(ran.load(), expected);
  EXPECT_EQ(pool.stats().tasks_executed() - before, static_cast<std::uint64_t>(expected));
}

TEST(ChaseLevParking, IdleAndWakeThousandsOfTimesWithoutAStall) {
  // spin_rounds = 0: workers park as soon as they run dry, so every round really goes through
  // announce / re-scan / futex sleep and back. A lost wake-up would hang a round (ctest timeout).
  ChaseLevKnobs knobs;
  knobs.spin_rounds = 0;
  ChaseLevPool pool(2, {}, knobs);
  const int rounds = wslab::kSanitized ? 500 : 5000;
  std::atomic<int> ran{0};
  for (int r = 0; r < rounds; ++r) {
    pool.submit([&] { ran.fetch_add(1); });
    pool.wait_idle();
    ASSERT_EQ(ran.load(), r + 1);
  }
  EXPECT_GT(pool.stats().total().parks, 0u);
}

TEST(ChaseLevParking, ABlockedTaskGetsItsPartnerRunByAParkedWorker) {
  // The task A waits for B, which A itself pushes onto its own deque: only the other (parked)
  // worker can run B, so the push must wake it. Repeated to hit both orders of the race.
  ChaseLevKnobs knobs;
  knobs.spin_rounds = 0;
  ChaseLevPool pool(2, {}, knobs);
  const int rounds = wslab::kSanitized ? 200 : 2000;
  for (int r = 0; r < rounds; ++r) {
    std::atomic<bool> b_ran{false};
    pool.submit([&] {
      pool.submit([&] { b_ran.store(true, std::memory_order_release); });
      while (!b_ran.load(std::memory_order_acquire))
        std::this_thread::yield();
    });
    pool.wait_idle();
    ASSERT_TRUE(b_ran.load());
  }
}

TEST(ChaseLevParking, BurstAfterIdleWakesWorkersAndCompletes) {
  ChaseLevKnobs knobs;
  knobs.spin_rounds = 2;
  ChaseLevPool pool(4, {}, knobs);
  for (int r = 0; r < (wslab::kSanitized ? 20 : 200); ++r)
    recursive_grid(pool, 8, 50);
}

// Every knob in both (or all) positions: the result must not depend on it.
TEST(ChaseLevKnobsTest, OwnerFifo) {
  ChaseLevKnobs knobs;
  knobs.owner_order = ChaseLevKnobs::OwnerOrder::fifo;
  ChaseLevPool pool(2, {}, knobs);
  recursive_grid(pool, 1000, 50);
}

TEST(ChaseLevKnobsTest, InjectorFirst) {
  ChaseLevKnobs knobs;
  knobs.injector = ChaseLevKnobs::Injector::first;
  ChaseLevPool pool(2, {}, knobs);
  recursive_grid(pool, 1000, 50);
}

TEST(ChaseLevKnobsTest, InjectorLast) {
  ChaseLevKnobs knobs;
  knobs.injector = ChaseLevKnobs::Injector::last;
  ChaseLevPool pool(3, {}, knobs);
  recursive_grid(pool, 1000, 50);
}

TEST(ChaseLevKnobsTest, NoSpinningAndTinyDequesAndNoNodeCache) {
  ChaseLevKnobs knobs;
  knobs.spin_rounds = 0;
  knobs.deque_capacity = 2;
  knobs.task_node_cache = 0;
  ChaseLevPool pool(2, {}, knobs);
  recursive_grid(pool, 200, 500);
}

TEST(ChaseLevKnobsTest, UnpaddedLayout) {
  BasicChaseLevPool<ChaseLevLayout{.padded = false}> pool(3);
  recursive_grid(pool, 1000, 50);
}

TEST(ChaseLevKnobsTest, DefaultsAreTheIssueDesign) {
  ChaseLevPool pool(2);
  EXPECT_EQ(pool.knobs().owner_order, ChaseLevKnobs::OwnerOrder::lifo);
  EXPECT_EQ(pool.knobs().injector, ChaseLevKnobs::Injector::after_local);
  EXPECT_GT(pool.knobs().spin_rounds, 0u);
  recursive_grid(pool, 1000, 50);
}

}  // namespace
