// The pieces of stage 5's algorithms that need no pool: the sequential sort's passes over many
// equal keys, a running leaf's steps and splits, and the bound on timed leaves. The algorithms on
// every registered pool are tests/algorithms/algorithms_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "stage5_parallel_algos/algorithms/parallel_sort.hpp"
#include "stage5_parallel_algos/algorithms/range_splitter.hpp"
#include "stage5_parallel_algos/tests/algos_test_util.hpp"

namespace wslab {
namespace {

using test::pattern;

// The branch-free partition sends keys equal to the pivot to one side; the pass that gathers them
// when the pivot is the range's minimum is what keeps many equal keys from costing a full
// partition per level (2*log2(n) of them before the std::sort fallback). Counted in comparisons.
TEST(SortSequentially, ManyEqualKeysCostLinearPasses) {
  for (const auto& [kind, passes] :
       {std::pair<const char*, std::size_t>{"all_equal", 4}, {"few_unique", 12}}) {
    std::vector<int> v = pattern(kind, 100'000);
    std::vector<int> expected = v;
    std::sort(expected.begin(), expected.end());
    std::size_t comparisons = 0;
    auto counting_less = [&](int a, int b) {
      ++comparisons;
      return a < b;
    };
    detail::sort_sequentially(v.begin(), v.end(), counting_less);
    EXPECT_EQ(v, expected) << kind;
    EXPECT_LE(comparisons, passes * v.size()) << kind;
  }
}

// ---- Timed leaves (range_splitter.hpp) ----

// Burns about `ns` nanoseconds of the calling thread (a busy loop on the clock, not a sleep).
void spin_for_ns(std::int64_t ns) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::nanoseconds(ns);
  while (std::chrono::steady_clock::now() < until) {
  }
}

// A running leaf hands the rest of itself to split() only between steps, and only when at least
// two steps remain (range_splitter.hpp, "Leaves that split while they run").
struct StepLog {
  std::vector<std::pair<std::size_t, std::size_t>> runs, splits;
  void run(std::size_t a, std::size_t b) { runs.emplace_back(a, b); }
};

TEST(RunInSteps, WithoutDemandRunsConsecutiveStepsAndNeverSplits) {
  StepLog log;
  auto run = [&](std::size_t a, std::size_t b) { log.run(a, b); };
  detail::run_in_steps(
      10, 33, 5, run, [] { return false; },
      [&](std::size_t a, std::size_t b) { log.splits.emplace_back(a, b); });
  const std::vector<std::pair<std::size_t, std::size_t>> expected = {
      {10, 15}, {15, 20}, {20, 25}, {25, 30}, {30, 33}};
  EXPECT_EQ(log.runs, expected);
  EXPECT_TRUE(log.splits.empty());
}

TEST(RunInSteps, OnDemandHandsTheRestToSplitAfterTheCurrentStep) {
  StepLog log;
  auto run = [&](std::size_t a, std::size_t b) { log.run(a, b); };
  int asked = 0;
  detail::run_in_steps(
      0, 40, 4, run, [&] { return ++asked == 3; },
      [&](std::size_t a, std::size_t b) { log.splits.emplace_back(a, b); });
  const std::vector<std::pair<std::size_t, std::size_t>> runs = {{0, 4}, {4, 8}, {8, 12}};
  const std::vector<std::pair<std::size_t, std::size_t>> splits = {{12, 40}};
  EXPECT_EQ(log.runs, runs);
  EXPECT_EQ(log.splits, splits);
}

TEST(RunInSteps, NeverSplitsWhenFewerThanTwoStepsRemain) {
  StepLog log;
  auto run = [&](std::size_t a, std::size_t b) { log.run(a, b); };
  // 11 elements in steps of 4: after the first step 7 remain (fewer than two steps: not asked);
  // 12 elements: 8 remain, asked once (and told no), then 4 remain, not asked.
  int asked = 0;
  auto split = [&](std::size_t a, std::size_t b) { log.splits.emplace_back(a, b); };
  detail::run_in_steps(0, 11, 4, run, [&] { return ++asked >= 1; }, split);
  EXPECT_EQ(asked, 0);
  detail::run_in_steps(0, 12, 4, run, [&] { return ++asked >= 2; }, split);
  EXPECT_EQ(asked, 1) << "asked again with fewer than two steps left";
  EXPECT_TRUE(log.splits.empty());
  const std::vector<std::pair<std::size_t, std::size_t>> runs = {{0, 4}, {4, 8}, {8, 11},
                                                                 {0, 4}, {4, 8}, {8, 12}};
  EXPECT_EQ(log.runs, runs);
}

TEST(TimedLeaves, ASlowProbeCannotCutALongRangePastTheLeafBound) {
  // Every probed element takes 50 us: the probe stops after the first and believes the rest are
  // as slow, which alone would ask for one-element leaves. The bound still holds.
  constexpr std::size_t kElements = 10'000'000;
  constexpr std::size_t kThreads = 2;
  std::size_t lo = 0;
  std::size_t probed = 0;
  const std::size_t grain =
      probe_leaf_grain(lo, kElements, kThreads, [&](std::size_t a, std::size_t b) {
        probed += b - a;
        spin_for_ns(50'000);
      });
  EXPECT_EQ(lo, probed);
  EXPECT_EQ(probed, 1u);
  const std::size_t leaves = (kElements - lo + grain - 1) / grain;
  EXPECT_LE(leaves, kMaxLeavesPerThread * kThreads);
}

}  // namespace
}  // namespace wslab
