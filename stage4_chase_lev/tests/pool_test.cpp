// ChaseLevPool beyond the conformance suite: parking and waking thousands of times, every knob
// in both positions, and the stage-5 fast path (push_local / pop_local with a stack job).
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

// ---- the stage-5 fast path ----

// The shape stage 5's join gives a job that lives on the stack: it runs a function once and
// says so with a flag the joining thread waits on.
struct FlagJob final : wslab::Job {
  explicit FlagJob(std::atomic<int>* count)
      : Job([](Job& self) noexcept {
          auto& me = static_cast<FlagJob&>(self);
          me.counter->fetch_add(1);
          me.done.store(true, std::memory_order_release);
        }),
        counter(count) {}
  std::atomic<int>* counter;
  std::atomic<bool> done{false};
};

// join(a, b) as stage 5 writes it: push b, run a, then pop b back or wait for its thief.
void join_like(ChaseLevPool& pool, std::atomic<int>& a_count, std::atomic<int>& b_count,
               int& inline_runs) {
  FlagJob b(&b_count);
  pool.push_local(b);
  a_count.fetch_add(1);
  for (;;) {
    wslab::Job* popped = pool.pop_local();
    if (popped == &b) {
      b.execute();
      ++inline_runs;
      return;
    }
    if (popped == nullptr) break;  // b was stolen
    pool.run_popped(popped);       // something pushed after b (none here, but that is the rule)
  }
  while (!b.done.load(std::memory_order_acquire)) {
    if (!pool.try_run_one()) std::this_thread::yield();
  }
}

TEST(ChaseLevStage5Api, StackJobsRunExactlyOnceInlineOrStolen) {
  ChaseLevPool pool(2);
  std::atomic<int> a{0};
  std::atomic<int> b{0};
  std::atomic<int> inline_total{0};
  const int tasks = wslab::kSanitized ? 2000 : 50000;
  for (int i = 0; i < tasks; ++i) {
    pool.submit([&] {
      int inline_runs = 0;
      join_like(pool, a, b, inline_runs);
      inline_total.fetch_add(inline_runs);
    });
  }
  pool.wait_idle();
  EXPECT_EQ(a.load(), tasks);
  EXPECT_EQ(b.load(), tasks);
  EXPECT_GT(inline_total.load(), 0);
}

TEST(ChaseLevStage5Api, LocalQueueHandleJoinsExactlyOnce) {
  ChaseLevPool pool(2);
  std::atomic<int> a{0};
  std::atomic<int> b{0};
  const int tasks = wslab::kSanitized ? 2000 : 50000;
  for (int i = 0; i < tasks; ++i) {
    pool.submit([&] {
      ChaseLevPool::LocalQueue local = pool.local_queue();
      if (!local) return;
      FlagJob job(&b);
      local.push(job);
      a.fetch_add(1);
      wslab::Job* popped = local.pop();
      if (popped == &job) {
        job.execute();
        return;
      }
      while (!job.done.load(std::memory_order_acquire)) {
        if (!pool.try_run_one()) std::this_thread::yield();
      }
    });
  }
  pool.wait_idle();
  EXPECT_EQ(a.load(), tasks);
  EXPECT_EQ(b.load(), tasks);
}

TEST(ChaseLevStage5Api, OffPoolThreadsAreRefused) {
  ChaseLevPool pool(1);
  std::atomic<int> c{0};
  FlagJob job(&c);
  EXPECT_THROW(pool.push_local(job), std::logic_error);
  EXPECT_EQ(pool.pop_local(), nullptr);
  EXPECT_FALSE(pool.local_queue());
}

TEST(ChaseLevStage5Api, PopLocalReturnsTasksSubmittedAfterTheJob) {
  ChaseLevPool pool(1);
  std::atomic<int> task_ran{0};
  std::atomic<int> job_ran{0};
  std::atomic<bool> ok{false};
  pool.submit([&] {
    FlagJob job(&job_ran);
    pool.push_local(job);
    pool.submit([&] { task_ran.fetch_add(1); });
    wslab::Job* first = pool.pop_local();
    if (first == nullptr || first == &job) return;  // the task must come out first (LIFO)
    pool.run_popped(first);
    if (pool.pop_local() != &job) return;
    job.execute();
    ok.store(true);
  });
  pool.wait_idle();
  EXPECT_TRUE(ok.load());
  EXPECT_EQ(task_ran.load(), 1);
  EXPECT_EQ(job_ran.load(), 1);
}

}  // namespace
