// Stage 2's own tests: both positions of each knob keep the pool correct, stealing really moves
// a busy worker's backlog (half at a time, or one at a time), and an outside thread can steal.
// The IThreadPool contract itself is checked by tests/conformance_test.cpp.
#include "stage2_per_thread_mutex/per_thread_mutex_pool.hpp"
#include "tests/test_scale.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

namespace wslab {
namespace {

using test::eventually;
using test::scaled;

struct KnobCase {
  bool steal_half;
  unsigned steal_sweeps;
};

// Shown by gtest when a test fails.
void PrintTo(const KnobCase& k, std::ostream* os) {
  *os << "{steal_half=" << k.steal_half << ", steal_sweeps=" << k.steal_sweeps << "}";
}

std::string knob_name(const ::testing::TestParamInfo<KnobCase>& info) {
  return std::string(info.param.steal_half ? "steal_half" : "steal_one") + "_sweeps" +
         std::to_string(info.param.steal_sweeps);
}

class Stage2Knobs : public ::testing::TestWithParam<KnobCase> {
 protected:
  PerThreadMutexKnobs knobs() const {
    PerThreadMutexKnobs k;
    k.steal_half = GetParam().steal_half;
    k.steal_sweeps = GetParam().steal_sweeps;
    return k;
  }
};

// Invariant: each of E * (1 + R) items runs exactly once, for grids from all-external to
// all-recursive.
TEST_P(Stage2Knobs, RecursiveGridsRunEveryItemOnce) {
  PerThreadMutexPool pool(2, {}, knobs());
  for (auto grid : {std::pair<std::size_t, std::size_t>{2'000, 0},
                    {200, 50},
                    {10, 2'000},
                    {1, scaled(50'000, 5'000)}}) {
    // Plain variables, not a structured binding: the task below captures `recursive`.
    const std::size_t external = grid.first;
    const std::size_t recursive = grid.second;
    SCOPED_TRACE(std::to_string(external) + " x " + std::to_string(recursive));
    std::vector<std::atomic<std::uint32_t>> runs(external * (1 + recursive));
    for (std::size_t e = 0; e < external; ++e) {
      pool.submit([&pool, &runs, e, recursive] {
        const std::size_t base = e * (1 + recursive);
        runs[base].fetch_add(1, std::memory_order_relaxed);
        for (std::size_t r = 1; r <= recursive; ++r) {
          pool.submit([&runs, i = base + r] { runs[i].fetch_add(1, std::memory_order_relaxed); });
        }
      });
    }
    pool.wait_idle();
    std::size_t wrong = 0;
    for (const auto& r : runs)
      wrong += r.load() != 1;
    EXPECT_EQ(wrong, 0u) << "items that did not run exactly once";
  }
}

// One task queues K children into its worker's deque and then waits for all of them without
// helping: every child must be stolen by the other worker. Invariants: all K run exactly once,
// the thieves took exactly K tasks (nothing is taken twice, nothing moves back), and the knob
// shows: stealing half leaves a batch in the thief's own deque (local pops), stealing one never
// does. A gate task occupies the other worker until the parent has queued every child, so the
// thief's first steal finds all K however the threads are scheduled (stealing half takes a batch
// only from a deque of four or more).
TEST_P(Stage2Knobs, StampedeOfChildrenIsStolenFromABusyWorker) {
  PerThreadMutexPool pool(2, {}, knobs());
  constexpr std::size_t kChildren = 1'000;
  std::vector<std::atomic<std::uint32_t>> runs(kChildren);
  std::atomic<std::size_t> done{0};
  std::atomic<bool> all_ran{false};
  std::atomic<bool> gate_running{false}, gate_open{false}, gate_opened{false};
  pool.submit([&] {
    gate_running = true;
    gate_opened = eventually([&] { return gate_open.load(); });
  });
  // The gate holds one worker, so the other one runs the parent below.
  const bool gate_ran = eventually([&] { return gate_running.load(); });
  if (!gate_ran) gate_open = true;
  ASSERT_TRUE(gate_ran) << "no worker ran the gate task";
  pool.submit([&] {
    for (std::size_t i = 0; i < kChildren; ++i) {
      pool.submit([&runs, &done, i] {
        runs[i].fetch_add(1, std::memory_order_relaxed);
        done.fetch_add(1, std::memory_order_release);
      });
    }
    gate_open = true;
    all_ran = eventually([&] { return done.load(std::memory_order_acquire) == kChildren; });
  });
  pool.wait_idle();
  ASSERT_TRUE(gate_opened.load()) << "the parent never opened the gate";
  ASSERT_TRUE(all_ran.load()) << "the idle worker did not steal the busy worker's children";
  for (std::size_t i = 0; i < kChildren; ++i)
    ASSERT_EQ(runs[i].load(), 1u) << "child " << i;

  const WorkerStats total = pool.stats().total();
  EXPECT_EQ(total.tasks_executed, kChildren + 2) << "the children, the parent and the gate";
  EXPECT_EQ(total.steals, kChildren) << "every child crossed from one deque to the other once";
  if (GetParam().steal_half) {
    EXPECT_GT(total.local_pops, 0u) << "a stolen half should land in the thief's own deque";
    EXPECT_LT(total.steal_ops, total.steals) << "one lock round trip should move several tasks";
  } else {
    EXPECT_EQ(total.local_pops, 0u) << "stealing one task at a time leaves nothing to pop";
    EXPECT_EQ(total.steal_ops, total.steals) << "one lock round trip per stolen task";
  }
}

// Work queued into a worker's own deque while the other worker is falling asleep must still be
// stolen: the parent waits for its child without helping, so only a woken thief can run it.
TEST_P(Stage2Knobs, NoLostWakeUpForALocalPush) {
  PerThreadMutexPool pool(2, {}, knobs());
  const std::size_t cycles = scaled(3'000, 300);
  for (std::size_t c = 0; c < cycles; ++c) {
    std::atomic<bool> child_ran{false};
    std::atomic<bool> ok{false};
    pool.submit([&] {
      pool.submit([&child_ran] { child_ran.store(true, std::memory_order_release); });
      ok = eventually([&] { return child_ran.load(std::memory_order_acquire); });
      if (!ok) pool.try_run_one();  // fail the test rather than hang it
    });
    pool.wait_idle();
    ASSERT_TRUE(ok.load()) << "cycle " << c << ": the sleeping worker was never woken";
  }
}

// steal_sweeps = 0 sends an idle worker to sleep right after one failed sweep, which is what
// makes the lost-wake-up window wide: with that setting, a worker that skipped the re-check after
// announcing fails NoLostWakeUpForALocalPush at once.
INSTANTIATE_TEST_SUITE_P(Knobs, Stage2Knobs,
                         ::testing::Values(KnobCase{true, 8}, KnobCase{false, 8}, KnobCase{true, 0},
                                           KnobCase{false, 0}),
                         knob_name);

// try_run_one() from a thread outside the pool steals from a worker's deque when the global queue
// is empty. Invariant: the child, reachable only by stealing, runs on the outside thread.
TEST(PerThreadMutexPool, OutsideThreadStealsWithTryRunOne) {
  PerThreadMutexPool pool(1);
  std::atomic<bool> child_queued{false}, release_parent{false};
  std::atomic<std::thread::id> child_ran_on{};
  pool.submit([&] {
    pool.submit([&] { child_ran_on = std::this_thread::get_id(); });
    child_queued = true;
    // Hold the only worker so that nobody but the outside thread can run the child.
    EXPECT_TRUE(eventually([&] { return release_parent.load(); }));
  });
  ASSERT_TRUE(eventually([&] { return child_queued.load(); }));
  // try_lock may fail spuriously, so retry; the deadline only turns a bug into a failure.
  EXPECT_TRUE(eventually([&] { return pool.try_run_one(); }));
  EXPECT_EQ(child_ran_on.load(), std::this_thread::get_id());
  release_parent = true;
  pool.wait_idle();
  EXPECT_EQ(pool.stats().tasks_run_outside, 1u);
}

// Many external submitters plus recursive work, under both knob positions, checked by a sum: a
// task run twice or lost changes it.
TEST(PerThreadMutexPool, ExternalSubmittersAndRecursionSumExactly) {
  for (bool half : {true, false}) {
    PerThreadMutexKnobs k;
    k.steal_half = half;
    PerThreadMutexPool pool(3, {}, k);
    std::atomic<std::uint64_t> sum{0};
    const std::uint64_t per_thread = scaled(20'000, 2'000);
    std::vector<std::thread> submitters;
    for (int t = 0; t < 4; ++t) {
      submitters.emplace_back([&] {
        for (std::uint64_t i = 1; i <= per_thread; ++i) {
          pool.submit([&sum, &pool, i] {
            sum.fetch_add(i, std::memory_order_relaxed);
            pool.submit([&sum] { sum.fetch_add(1, std::memory_order_relaxed); });
          });
        }
      });
    }
    for (auto& t : submitters)
      t.join();
    pool.wait_idle();
    EXPECT_EQ(sum.load(), 4 * (per_thread * (per_thread + 1) / 2 + per_thread)) << "half=" << half;
  }
}

}  // namespace
}  // namespace wslab
