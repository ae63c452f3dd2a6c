// The algorithms' wider API through wslab::ThreadPool's members, each against the sequential std::
// algorithm. The same calls on every registered pool are tests/algorithms/algorithms_api_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "stage5_parallel_algos/tests/algos_test_util.hpp"
#include "stage5_parallel_algos/threadpool.hpp"

namespace wslab {
namespace {

using test::scan_input;

using test::VisitCounts;

// ---- Which overloads ThreadPool's members take (compile time) ----

struct TakesIndex {
  void operator()(std::size_t) const {}
};

static_assert(requires(ThreadPool& pool, std::vector<int>& v, TakesIndex f) {
  pool.parallel_for(0, v.size(), f);
  pool.parallel_reduce(v, 0L, std::plus<>{}, std::size_t{16});
  pool.parallel_inclusive_scan(v, v.begin());
  pool.parallel_exclusive_scan(v.begin(), v.end(), v.begin(), 0);
  pool.parallel_inclusive_scan(v, v.begin(), std::plus<>{}, ScanGrain{16});
  pool.parallel_exclusive_scan(v, v.begin(), 0, std::plus<>{}, std::size_t{16});
});

// ---- The same calls through ThreadPool's members ----

// Every algorithm is instantiated once per argument types. So the inputs below are const vectors
// throughout, and both index loops take one functor.
struct MarkVisit {
  VisitCounts* counts;  // none: nothing to mark
  void operator()(std::size_t i) const {
    if (counts != nullptr) counts->mark(i);
  }
};

TEST(ThreadPoolAlgorithms, EveryMemberAgainstStd) {
  ThreadPool pool(2);
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{3}, 3 * kMinScanBlock + 5,
                        std::size_t{100'003}}) {
    const std::vector<std::int64_t> v = scan_input(n);
    SCOPED_TRACE("n=" + std::to_string(n));

    VisitCounts counts(n);
    pool.parallel_for(0, v.size(), MarkVisit{&counts});
    counts.expect_each_once();
    std::vector<std::int64_t> doubled = v;
    pool.parallel_for(doubled, [](std::int64_t& x) { x *= 2; }, 5);
    for (std::size_t i = 0; i < n; ++i)
      ASSERT_EQ(doubled[i], 2 * v[i]);

    const std::int64_t sum = std::reduce(v.begin(), v.end(), std::int64_t{1});
    EXPECT_EQ(pool.parallel_reduce(v.begin(), v.end(), std::int64_t{1}), sum);
    EXPECT_EQ(pool.parallel_reduce(v, std::int64_t{1}, std::plus<>{}, 64), sum);
    auto square = [](std::int64_t x) { return x * x; };
    const std::int64_t squares =
        std::transform_reduce(v.begin(), v.end(), std::int64_t{0}, std::plus<>{}, square);
    EXPECT_EQ(pool.parallel_transform_reduce(v.begin(), v.end(), std::int64_t{0}, std::plus<>{},
                                             square, 100),
              squares);
    EXPECT_EQ(pool.parallel_transform_reduce(v, std::int64_t{0}, std::plus<>{}, square), squares);

    std::vector<std::int64_t> expected(n), out(n);
    std::inclusive_scan(v.begin(), v.end(), expected.begin());
    EXPECT_EQ(pool.parallel_inclusive_scan(v.begin(), v.end(), out.begin()), out.end());
    EXPECT_EQ(out, expected);
    std::fill(out.begin(), out.end(), 0);
    pool.parallel_inclusive_scan(v, out.begin());
    EXPECT_EQ(out, expected);
    std::inclusive_scan(v.begin(), v.end(), expected.begin(), std::plus<>{}, std::int64_t{9});
    pool.parallel_inclusive_scan(v.begin(), v.end(), out.begin(), std::plus<>{}, std::int64_t{9});
    EXPECT_EQ(out, expected);
    pool.parallel_inclusive_scan(v, out.begin(), std::plus<>{}, std::int64_t{9});
    EXPECT_EQ(out, expected);
    std::exclusive_scan(v.begin(), v.end(), expected.begin(), std::int64_t{-4});
    EXPECT_EQ(pool.parallel_exclusive_scan(v.begin(), v.end(), out.begin(), std::int64_t{-4}),
              out.end());
    EXPECT_EQ(out, expected);
    std::fill(out.begin(), out.end(), 0);
    pool.parallel_exclusive_scan(v, out.begin(), std::int64_t{-4}, std::plus<>{});
    EXPECT_EQ(out, expected);

    std::vector<std::int64_t> sorted = v;
    std::sort(sorted.begin(), sorted.end());
    std::vector<std::int64_t> w = v;
    pool.parallel_sort(w);
    EXPECT_EQ(w, sorted);
    w = v;
    pool.parallel_stable_sort(w, std::less<>{});
    EXPECT_EQ(w, sorted);
  }
  EXPECT_THROW(pool.parallel_for(-1, std::size_t{5}, MarkVisit{nullptr}), std::out_of_range);
}

// Every scan member with a grain, against std: after op without init the grain is a ScanGrain
// (an integer there is init, as in std::inclusive_scan); after init it is a plain integer.
TEST(ThreadPoolAlgorithms, ScanMembersWithAGrainAgainstStd) {
  ThreadPool pool(2);
  const std::vector<std::int64_t> v = scan_input(1000);
  std::vector<std::int64_t> expected(v.size()), out(v.size());
  std::inclusive_scan(v.begin(), v.end(), expected.begin());
  pool.parallel_inclusive_scan(v.begin(), v.end(), out.begin(), std::plus<>{}, ScanGrain{100});
  EXPECT_EQ(out, expected);
  std::fill(out.begin(), out.end(), 0);
  pool.parallel_inclusive_scan(v, out.begin(), std::plus<>{}, ScanGrain{7});
  EXPECT_EQ(out, expected);
  std::inclusive_scan(v.begin(), v.end(), expected.begin(), std::plus<>{}, std::int64_t{9});
  pool.parallel_inclusive_scan(v.begin(), v.end(), out.begin(), std::plus<>{}, std::int64_t{9},
                               100);
  EXPECT_EQ(out, expected);
  pool.parallel_inclusive_scan(v, out.begin(), std::plus<>{}, std::int64_t{9}, 7);
  EXPECT_EQ(out, expected);
  // std::int64_t like every scan here (after op an integer of any type is init): each value type
  // instantiates the whole scan again.
  const std::vector<std::int64_t> ones(v.size(), 1);
  std::vector<std::int64_t> sums(v.size());
  pool.parallel_inclusive_scan(ones, sums.begin(), std::plus<>{}, std::int64_t{100});  // init
  EXPECT_EQ(sums.front(), 101);
  EXPECT_EQ(sums.back(), static_cast<std::int64_t>(100 + ones.size()));
  std::exclusive_scan(v.begin(), v.end(), expected.begin(), std::int64_t{-4});
  pool.parallel_exclusive_scan(v.begin(), v.end(), out.begin(), std::int64_t{-4}, std::plus<>{},
                               100);
  EXPECT_EQ(out, expected);
  std::fill(out.begin(), out.end(), 0);
  pool.parallel_exclusive_scan(v, out.begin(), std::int64_t{-4}, std::plus<>{}, 7);
  EXPECT_EQ(out, expected);
}

}  // namespace
}  // namespace wslab
