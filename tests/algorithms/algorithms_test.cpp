// parallel_for, parallel_reduce and parallel_sort on every registered pool: edge-sized ranges,
// grains, exceptions, nesting, and results equal to the sequential algorithms'. The pieces that
// need no pool (the sequential sort, a leaf's steps, the timed leaves' bound) are
// stage5_parallel_algos/tests/algorithms_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <numeric>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "stage5_parallel_algos/algorithms/parallel_for.hpp"
#include "stage5_parallel_algos/algorithms/parallel_reduce.hpp"
#include "stage5_parallel_algos/algorithms/parallel_sort.hpp"
#include "stage5_parallel_algos/algorithms/parallel_stable_sort.hpp"
#include "stage5_parallel_algos/fork_join/task_group.hpp"
#include "stage5_parallel_algos/tests/algos_test_util.hpp"
#include "tests/algorithms/shared_callables.hpp"
#include "tests/on_every_pool.hpp"

namespace wslab {
namespace {

using test::pattern;

// The callables of every test that is not about its callable's type: one instantiation of each
// algorithm per signature, since the compile time of this file is in those instantiations.
using test::AlwaysHungry;
using test::BinaryOp;
using test::ChunkFn;
using test::ElementFn;
using test::FoldFn;
using test::IndexFn;
using test::IntIndexFn;

using test::OnEveryPool;
using test::scaled;
using test::Tagged;
using test::TestFailure;
using test::VisitCounts;

class ParallelFor : public OnEveryPool {};
class ParallelReduce : public OnEveryPool {};
class ParallelSort : public OnEveryPool {};

TEST_P(ParallelFor, EveryIndexExactlyOnceForEverySizeAndGrain) {
  auto pool = make(2);
  for (std::size_t n : {0u, 1u, 2u, 3u, 17u, 1000u, 65'537u}) {
    for (std::size_t grain : {0u, 1u, 7u, 1'000'000u}) {
      VisitCounts counts(n);
      parallel_for(*pool, std::size_t{0}, n, IndexFn([&](std::size_t i) { counts.mark(i); }),
                   grain);
      counts.expect_each_once();
    }
  }
}

TEST_P(ParallelFor, SignedAndOffsetIndexRanges) {
  auto pool = make(2);
  VisitCounts counts(200);
  parallel_for(*pool, -100, 100,
               IntIndexFn([&](int i) { counts.mark(static_cast<std::size_t>(i + 100)); }));
  counts.expect_each_once();
  std::atomic<int> calls{0};
  const IntIndexFn count = [&](int) { calls++; };
  parallel_for(*pool, 5, 5, count);
  parallel_for(*pool, 5, -5, count);  // an empty (reversed) range does nothing
  EXPECT_EQ(calls.load(), 0);
}

TEST_P(ParallelFor, IteratorFormVisitsElementsLikeForEach) {
  auto pool = make(2);
  const std::size_t n = scaled(1'000'000, 50'000);
  std::vector<std::uint64_t> v(n);
  std::iota(v.begin(), v.end(), 0);
  parallel_for(*pool, v.begin(), v.end(),
               ElementFn<std::uint64_t>([](std::uint64_t& x) { x = x * x; }));
  for (std::size_t i = 0; i < n; ++i)
    ASSERT_EQ(v[i], std::uint64_t{i} * i) << "at " << i;
  // The element type of v: one instantiation of the iterator form for the whole test.
  std::vector<std::uint64_t> empty;
  parallel_for(*pool, empty.begin(), empty.end(),
               ElementFn<std::uint64_t>([](std::uint64_t&) { FAIL(); }));
  std::vector<std::uint64_t> one{41};
  parallel_for(*pool, one.begin(), one.end(),
               ElementFn<std::uint64_t>([](std::uint64_t& x) { ++x; }), 1);
  EXPECT_EQ(one[0], 42u);
}

TEST_P(ParallelFor, ExceptionFromTheBodyPropagatesAndThePoolStaysUsable) {
  auto pool = make(2);
  const IntIndexFn throw_at_7777 = [](int i) {
    if (i == 7777) throw TestFailure("7777");
  };
  for (std::size_t grain : {0u, 1u, 100u}) {
    EXPECT_THROW(parallel_for(*pool, 0, 10'000, throw_at_7777, grain), TestFailure);
  }
  VisitCounts counts(1000);
  parallel_for(*pool, std::size_t{0}, std::size_t{1000},
               IndexFn([&](std::size_t i) { counts.mark(i); }));
  counts.expect_each_once();
  pool->wait_idle();
}

TEST_P(ParallelFor, NestedInsideParallelForInsideATaskGroup) {
  for (std::size_t threads : {1u, 2u}) {
    auto pool = make(threads);
    const std::size_t groups = 4, outer = 30, inner = 50;
    VisitCounts counts(groups * outer * inner);
    pool->submit([&] {
      TaskGroup group(*pool);
      for (std::size_t g = 0; g < groups; ++g) {
        group.run([&, g] {
          parallel_for(*pool, std::size_t{0}, outer, IndexFn([&, g](std::size_t o) {
            parallel_for(
                *pool, std::size_t{0}, inner,
                IndexFn([&, g, o](std::size_t i) { counts.mark((g * outer + o) * inner + i); }), 3);
          }));
        });
      }
      group.wait();
    });
    pool->wait_idle();
    counts.expect_each_once();
  }
}

TEST_P(ParallelFor, UnbalancedWorkIsStillCompleteFromOutside) {
  auto pool = make(2);
  const std::size_t n = scaled(4'000, 400);
  std::vector<std::uint64_t> out(n);
  // Work grows with the index: the adaptive splitter must cut the heavy end finer.
  parallel_for(*pool, std::size_t{0}, n, IndexFn([&](std::size_t i) {
    std::uint64_t acc = 0;
    for (std::size_t k = 0; k < i; ++k)
      acc += k;
    out[i] = acc;
  }));
  for (std::size_t i = 0; i < n; ++i) {
    ASSERT_EQ(out[i], i == 0 ? 0 : std::uint64_t{i} * (i - 1) / 2) << "at " << i;
  }
}

TEST_P(ParallelReduce, EqualsSequentialReduceForEverySizeAndGrain) {
  auto pool = make(2);
  for (std::size_t n : {0u, 1u, 2u, 3u, 1000u, 100'003u}) {
    std::vector<std::int64_t> v(n);
    std::iota(v.begin(), v.end(), -50);
    const std::int64_t expected = std::reduce(v.begin(), v.end(), std::int64_t{5});
    for (std::size_t grain : {0u, 1u, 64u, 10'000'000u}) {
      EXPECT_EQ(parallel_reduce(*pool, v.begin(), v.end(), std::int64_t{5}, std::plus<>{}, grain),
                expected)
          << "n=" << n << " grain=" << grain;
    }
  }
}

// Every element goes through map exactly once, whatever the leaf length: leaves shorter than the
// fold's four lanes, leaves with a tail after the last group of four, and the automatic grain.
TEST_P(ParallelReduce, MapRunsOnceOnEveryElementForEveryGrain) {
  auto pool = make(2);
  for (std::size_t n :
       {std::size_t{1}, std::size_t{7}, std::size_t{8}, std::size_t{9}, std::size_t{12},
        std::size_t{13}, std::size_t{1000}, scaled(100'003, 20'003)}) {
    std::vector<std::size_t> indices(n);
    std::iota(indices.begin(), indices.end(), 0);
    for (std::size_t grain : {0u, 1u, 5u, 9u, 64u, 10'000'000u}) {
      VisitCounts counts(n);
      const std::size_t mapped = parallel_transform_reduce(
          *pool, indices.begin(), indices.end(), std::size_t{0}, std::plus<>{},
          [&](std::size_t i) {
            counts.mark(i);
            return std::size_t{1};
          },
          grain);
      EXPECT_EQ(mapped, n) << "n=" << n << " grain=" << grain;
      counts.expect_each_once();
    }
  }
}

// A contiguous run of indices [first, last], and whether it was assembled left to right:
// combining is associative but not commutative, so a fold that reorders pieces shows.
struct IndexRun {
  std::size_t first, last, count;
  bool in_order;
};
IndexRun combine_runs(const IndexRun& a, const IndexRun& b) {
  return {a.first, b.last, a.count + b.count, a.in_order && b.in_order && a.last + 1 == b.first};
}

// The split path of a running reduce leaf, taken at every step (always hungry): every element is
// folded once, and the pieces are combined in order.
TEST_P(ParallelReduce, ALeafSplitAtEveryStepFoldsEveryElementOnceInOrder) {
  auto pool = make(2);
  for (std::size_t n : {1u, 2u, 7u, 64u, 1000u, 20'011u}) {
    for (std::size_t step : {1u, 3u, 16u}) {
      auto fold = [](std::size_t a, std::size_t b) { return IndexRun{a, b - 1, b - a, true}; };
      auto op = [](const IndexRun& a, const IndexRun& b) { return combine_runs(a, b); };
      std::atomic<bool> failed{false};
      const std::optional<IndexRun> r = with_fork_join_pool(*pool, [&](ForkJoinPool auto handle) {
        return detail::reduce_timed_leaf<IndexRun>(handle, 0, n, step, fold, op, AlwaysHungry{},
                                                   failed);
      });
      ASSERT_TRUE(r.has_value());
      EXPECT_EQ(r->first, 0u);
      EXPECT_EQ(r->last, n - 1);
      EXPECT_EQ(r->count, n);
      EXPECT_TRUE(r->in_order) << "n " << n << " step " << step;
    }
  }
}

TEST_P(ParallelReduce, AThrowInASplitLeafPropagatesAndThePoolStaysUsable) {
  auto pool = make(2);
  FoldFn<std::size_t> fold = [](std::size_t a, std::size_t b) {
    if (a <= 3'333 && 3'333 < b) throw TestFailure("3333");
    return b - a;
  };
  auto op = std::plus<>{};
  std::atomic<bool> failed{false};
  EXPECT_THROW((with_fork_join_pool(*pool,
                                    [&](ForkJoinPool auto handle) {
                                      return detail::reduce_timed_leaf<std::size_t>(
                                          handle, 0, 5'000, 10, fold, op, AlwaysHungry{}, failed);
                                    })),
               TestFailure);
  FoldFn<std::size_t> count = [](std::size_t a, std::size_t b) { return b - a; };
  std::atomic<bool> fresh{false};
  const std::optional<std::size_t> r = with_fork_join_pool(*pool, [&](ForkJoinPool auto handle) {
    return detail::reduce_timed_leaf<std::size_t>(handle, 0, 5'000, 10, count, op, AlwaysHungry{},
                                                  fresh);
  });
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(*r, 5'000u);
  pool->wait_idle();
}

TEST_P(ParallelReduce, MaxAndTransformReduce) {
  auto pool = make(2);
  std::mt19937 rng(7);
  std::vector<int> v(scaled(200'000, 20'000));
  for (int& x : v)
    x = static_cast<int>(rng() % 1'000'000);
  const int max = parallel_reduce(*pool, v.begin(), v.end(), -1,
                                  BinaryOp<int>([](int a, int b) { return std::max(a, b); }));
  EXPECT_EQ(max, *std::max_element(v.begin(), v.end()));
  const auto squares =
      parallel_transform_reduce(*pool, v.begin(), v.end(), std::uint64_t{0}, std::plus<>{},
                                [](int x) { return std::uint64_t(x) * std::uint64_t(x); });
  EXPECT_EQ(squares,
            std::transform_reduce(v.begin(), v.end(), std::uint64_t{0}, std::plus<>{},
                                  [](int x) { return std::uint64_t(x) * std::uint64_t(x); }));
}

TEST_P(ParallelReduce, ExceptionFromTheOperatorPropagates) {
  auto pool = make(2);
  std::vector<int> v(10'000, 1);
  v[4321] = -1;
  const BinaryOp<int> add_or_throw = [](int a, int b) {
    if (a < 0 || b < 0) throw TestFailure("negative");
    return a + b;
  };
  EXPECT_THROW(parallel_reduce(*pool, v.begin(), v.end(), 0, add_or_throw), TestFailure);
  pool->wait_idle();
}

TEST_P(ParallelReduce, NestedReduceInsideParallelFor) {
  auto pool = make(2);
  const std::size_t rows = 64, cols = 1000;
  std::vector<std::vector<int>> m(rows, std::vector<int>(cols));
  for (std::size_t r = 0; r < rows; ++r)
    std::iota(m[r].begin(), m[r].end(), static_cast<int>(r));
  std::vector<long> sums(rows);
  parallel_for(*pool, std::size_t{0}, rows, IndexFn([&](std::size_t r) {
    sums[r] = parallel_reduce(*pool, m[r].begin(), m[r].end(), 0L, std::plus<>{});
  }));
  for (std::size_t r = 0; r < rows; ++r) {
    EXPECT_EQ(sums[r], std::accumulate(m[r].begin(), m[r].end(), 0L));
  }
}

// The comparator of every int sort here that takes one: std::greater<>, or std::less<> that
// throws TestFailure on call number throw_on (counting in *calls). One type for all of them, so
// that they share one instantiation of parallel_sort (the compile time of this file is in the
// algorithms' instantiations).
struct IntCompare {
  bool greater = false;
  std::atomic<int>* calls = nullptr;
  int throw_on = 0;
  bool operator()(int a, int b) const {
    if (calls != nullptr && calls->fetch_add(1, std::memory_order_relaxed) == throw_on) {
      throw TestFailure("comparator");
    }
    return greater ? a > b : a < b;
  }
};

// Short strings with many repeats, for the sorts' non-trivial element type.
std::vector<std::string> random_words(unsigned seed) {
  std::vector<std::string> words;
  std::mt19937 rng(seed);
  for (int i = 0; i < 20'000; ++i)
    words.push_back(std::to_string(rng() % 5000) + "-word");
  return words;
}

TEST_P(ParallelSort, EqualsStdSortOnEveryPatternAndSize) {
  auto pool = make(2);
  for (const char* kind :
       {"random", "sorted", "reversed", "all_equal", "few_unique", "organ_pipe", "sawtooth"}) {
    for (std::size_t n :
         {std::size_t{0}, std::size_t{1}, std::size_t{2}, kParallelSortCutoff,
          kParallelSortCutoff + 1, scaled(100'000, 30'000), scaled(1'000'000, 100'000)}) {
      std::vector<int> v = pattern(kind, n);
      std::vector<int> expected = v;
      std::sort(expected.begin(), expected.end());
      parallel_sort(*pool, v.begin(), v.end());
      ASSERT_EQ(v, expected) << kind << " n=" << n;
    }
  }
}

TEST_P(ParallelSort, CustomComparatorAndNonTrivialElements) {
  auto pool = make(2);
  std::vector<int> v = pattern("random", 50'000);
  std::vector<int> expected = v;
  std::sort(expected.begin(), expected.end(), std::greater<>{});
  parallel_sort(*pool, v.begin(), v.end(), IntCompare{.greater = true});
  EXPECT_EQ(v, expected);

  std::vector<std::string> words = random_words(3);
  std::vector<std::string> sorted_words = words;
  std::sort(sorted_words.begin(), sorted_words.end());
  parallel_sort(*pool, words.begin(), words.end());
  EXPECT_EQ(words, sorted_words);
}

// What the range holds after a comparator threw is unspecified, as for std::sort (whose
// insertion step may leave a duplicate where the comparator threw); the exception must arrive,
// and the pool must be fine afterwards.
TEST_P(ParallelSort, ThrowingComparatorPropagatesAndThePoolStaysUsable) {
  auto pool = make(2);
  std::vector<int> v = pattern("random", 100'000);
  std::atomic<int> calls{0};
  EXPECT_THROW(
      parallel_sort(*pool, v.begin(), v.end(), IntCompare{.calls = &calls, .throw_on = 500'000}),
      TestFailure);
  EXPECT_EQ(v.size(), 100'000u);
  v = pattern("random", 100'000);
  std::vector<int> expected = v;
  std::sort(expected.begin(), expected.end());
  parallel_sort(*pool, v.begin(), v.end());
  EXPECT_EQ(v, expected);
  pool->wait_idle();
}

// Above kSplitPartitionAbove the first partitions run on two threads (partition_in_two): a
// comparator that throws there must arrive the same way, and no element may be lost.
TEST_P(ParallelSort, ThrowingComparatorInTheSplitPartitionLosesNoElement) {
  auto pool = make(2);
  const std::size_t n = 4 * detail::kSplitPartitionAbove;
  std::vector<int> v(n);
  std::iota(v.begin(), v.end(), 0);
  std::shuffle(v.begin(), v.end(), std::mt19937(11));
  std::atomic<int> calls{0};
  EXPECT_THROW(
      parallel_sort(*pool, v.begin(), v.end(), IntCompare{.calls = &calls, .throw_on = 1000}),
      TestFailure);
  // Call 1000 falls inside the first, split partition (it compares every element), which only
  // swaps; the failed flag then skips every side not yet started. So every element is still
  // there exactly once.
  std::sort(v.begin(), v.end());
  for (std::size_t i = 0; i < n; ++i)
    ASSERT_EQ(v[i], static_cast<int>(i));
}

TEST_P(ParallelSort, MoveOnlyElementsTakeTheSequentialPartition) {
  auto pool = make(2);
  const std::size_t n = 2 * detail::kSplitPartitionAbove;
  std::vector<std::unique_ptr<int>> v;
  std::mt19937 rng(5);
  for (std::size_t i = 0; i < n; ++i)
    v.push_back(std::make_unique<int>(static_cast<int>(rng() % 100'000)));
  parallel_sort(*pool, v.begin(), v.end(), [](const auto& a, const auto& b) { return *a < *b; });
  for (std::size_t i = 1; i < n; ++i)
    ASSERT_LE(*v[i - 1], *v[i]);
}

TEST_P(ParallelSort, SortsFromInsideATaskOnOneThread) {
  auto pool = make(1);
  std::vector<int> v = pattern("random", 100'000);
  std::vector<int> expected = v;
  std::sort(expected.begin(), expected.end());
  pool->submit([&] { parallel_sort(*pool, v.begin(), v.end()); });
  pool->wait_idle();
  EXPECT_EQ(v, expected);
}

// ---- parallel_stable_sort ----

using ParallelStableSort = OnEveryPool;

// Keys with many repeats, each tagged with its original position (test::Tagged); std::stable_sort
// is the oracle.

TEST_P(ParallelStableSort, EqualsStdStableSortOnEveryPatternAndSize) {
  auto pool = make(2);
  const auto by_key = [](const Tagged& a, const Tagged& b) { return a.key < b.key; };
  for (const char* kind : {"random", "sorted", "reversed", "all_equal", "few_unique", "sawtooth"}) {
    for (std::size_t n :
         {std::size_t{0}, std::size_t{1}, std::size_t{2}, kParallelSortCutoff,
          kParallelSortCutoff + 1, scaled(100'000, 30'000), scaled(1'000'000, 100'000)}) {
      const std::vector<int> keys = pattern(kind, n);
      std::vector<Tagged> v(n);
      for (std::size_t i = 0; i < n; ++i)
        v[i] = {keys[i] % 64, i};  // few distinct keys: most elements have equals
      std::vector<Tagged> expected = v;
      std::stable_sort(expected.begin(), expected.end(), by_key);
      parallel_stable_sort(*pool, v.begin(), v.end(), by_key);
      ASSERT_EQ(v, expected) << kind << " n=" << n;
    }
  }
}

TEST_P(ParallelStableSort, DefaultComparatorAndStrings) {
  auto pool = make(2);
  std::vector<std::string> words = random_words(7);
  std::vector<std::string> expected = words;
  std::stable_sort(expected.begin(), expected.end());
  parallel_stable_sort(*pool, words.begin(), words.end());
  EXPECT_EQ(words, expected);
}

// As for std::stable_sort, the range's contents are unspecified after the comparator threw; the
// exception must arrive and the pool must be fine afterwards.
TEST_P(ParallelStableSort, ThrowingComparatorPropagatesAndThePoolStaysUsable) {
  auto pool = make(2);
  std::vector<int> v = pattern("random", 100'000);
  std::atomic<int> calls{0};
  EXPECT_THROW(
      parallel_stable_sort(*pool, v.begin(), v.end(),
                           [&](int a, int b) {
                             if (calls.fetch_add(1, std::memory_order_relaxed) == 300'000) {
                               throw TestFailure("comparator");
                             }
                             return a < b;
                           }),
      TestFailure);
  v = pattern("random", 100'000);
  std::vector<int> expected = v;
  std::stable_sort(expected.begin(), expected.end());
  parallel_stable_sort(*pool, v.begin(), v.end());
  EXPECT_EQ(v, expected);
  pool->wait_idle();
}

// No default constructor: no buffer of such elements can be made, so the sort falls back to
// merging in place, and must be just as stable.
struct TaggedWithoutDefault {
  TaggedWithoutDefault(int k, std::size_t t) : key(k), tag(t) {}
  int key;
  std::size_t tag;
  bool operator==(const TaggedWithoutDefault&) const = default;
};

TEST_P(ParallelStableSort, ElementsWithoutADefaultConstructorSortInPlaceAndStably) {
  auto pool = make(2);
  const std::vector<int> keys = pattern("random", 100'000);
  std::vector<TaggedWithoutDefault> v;
  for (std::size_t i = 0; i < keys.size(); ++i)
    v.emplace_back(keys[i] % 64, i);
  std::vector<TaggedWithoutDefault> expected = v;
  const auto by_key = [](const auto& a, const auto& b) { return a.key < b.key; };
  std::stable_sort(expected.begin(), expected.end(), by_key);
  parallel_stable_sort(*pool, v.begin(), v.end(), by_key);
  EXPECT_EQ(v, expected);
}

// A comparator that takes its arguments by value copies them; a merge that compared through
// move_iterators would instead move the strings out and leave empty ones behind.
TEST_P(ParallelStableSort, AComparatorTakingValuesDoesNotEmptyTheElements) {
  auto pool = make(2);
  std::vector<std::string> words = random_words(7);
  std::vector<std::string> expected = words;
  const auto by_length = [](std::string a, std::string b) { return a.size() < b.size(); };
  std::stable_sort(expected.begin(), expected.end(), by_length);
  parallel_stable_sort(*pool, words.begin(), words.end(), by_length);
  EXPECT_EQ(words, expected);
}

// The parallel merge alone, on inputs of very different lengths (one empty, one short, both past
// the cut-off) and with many equal keys across the two inputs: the result must be std::merge's,
// which takes the left input's element first among equals.
TEST_P(ParallelStableSort, ParallelMergeOfUnevenInputsEqualsStdMerge) {
  auto pool = make(2);
  const auto by_key = [](const Tagged& a, const Tagged& b) { return a.key < b.key; };
  const auto by_key_then_tag = [](const Tagged& a, const Tagged& b) {
    return a.key != b.key ? a.key < b.key : a.tag < b.tag;
  };
  const std::size_t big = 4 * kParallelMergeCutoff + 3;
  std::mt19937 rng(7);
  for (auto [n1, n2] : {std::pair<std::size_t, std::size_t>{0, big},
                        {big, 0},
                        {1, big},
                        {big, 1},
                        {big, big / 3},
                        {big / 3, big},
                        {big, big}}) {
    std::vector<Tagged> left(n1), right(n2);
    for (std::size_t i = 0; i < n1; ++i)
      left[i] = {static_cast<int>(rng() % 32), i};
    for (std::size_t i = 0; i < n2; ++i)
      right[i] = {static_cast<int>(rng() % 32), n1 + i};
    std::sort(left.begin(), left.end(), by_key_then_tag);
    std::sort(right.begin(), right.end(), by_key_then_tag);
    std::vector<Tagged> expected(n1 + n2), merged(n1 + n2);
    std::merge(left.begin(), left.end(), right.begin(), right.end(), expected.begin(), by_key);
    auto comp = by_key;
    with_fork_join_pool(*pool, [&](ForkJoinPool auto handle) {
      return detail::parallel_merge(handle, left.begin(), left.end(), right.begin(), right.end(),
                                    merged.begin(), comp);
    });
    ASSERT_EQ(merged, expected) << "n1=" << n1 << " n2=" << n2;
  }
}

TEST_P(ParallelStableSort, SortsFromInsideATaskOnOneThread) {
  auto pool = make(1);
  std::vector<int> v = pattern("reversed", 50'000);
  std::vector<int> expected = v;
  std::stable_sort(expected.begin(), expected.end());
  pool->submit([&] { parallel_stable_sort(*pool, v.begin(), v.end()); });
  pool->wait_idle();
  EXPECT_EQ(v, expected);
}

// ---- Timed leaves (range_splitter.hpp) ----

// The split path on a real pool, taken at every step: always hungry, so the leaf becomes a tree
// of pieces one to two steps long, forked and stolen like any join.
TEST_P(ParallelFor, ALeafSplitAtEveryStepRunsEveryIndexOnce) {
  auto pool = make(2);
  for (std::size_t n : {1u, 2u, 7u, 64u, 1000u, 20'011u}) {
    for (std::size_t step : {1u, 3u, 16u}) {
      VisitCounts counts(n);
      std::atomic<std::size_t> calls{0}, longer_than_a_step{0};
      ChunkFn chunk = [&](std::size_t a, std::size_t b) {
        calls.fetch_add(1, std::memory_order_relaxed);
        if (b - a > step) longer_than_a_step.fetch_add(1, std::memory_order_relaxed);
        for (std::size_t i = a; i < b; ++i)
          counts.mark(i);
      };
      std::atomic<bool> failed{false};
      with_fork_join_pool(*pool, [&](ForkJoinPool auto handle) {
        return detail::run_timed_leaf(handle, 0, n, step, chunk, AlwaysHungry{}, failed);
      });
      counts.expect_each_once();
      EXPECT_EQ(longer_than_a_step.load(), 0u);
      // Every forked piece is at least a step long, so it makes at most two calls per step of
      // its length (halves of one-step pieces would make one call per element).
      EXPECT_LE(calls.load(), 2 * n / step + 1) << "a piece shorter than a step was forked";
    }
  }
}

TEST_P(ParallelFor, AThrowInASplitLeafPropagatesAndRunsNoIndexTwice) {
  auto pool = make(2);
  constexpr std::size_t n = 5'000;
  std::vector<std::atomic<int>> seen(n);
  ChunkFn chunk = [&](std::size_t a, std::size_t b) {
    for (std::size_t i = a; i < b; ++i) {
      seen[i].fetch_add(1, std::memory_order_relaxed);
      if (i == 3'333) throw TestFailure("3333");
    }
  };
  std::atomic<bool> failed{false};
  EXPECT_THROW(with_fork_join_pool(*pool,
                                   [&](ForkJoinPool auto handle) {
                                     return detail::run_timed_leaf(handle, 0, n, 10, chunk,
                                                                   AlwaysHungry{}, failed);
                                   }),
               TestFailure);
  EXPECT_EQ(seen[3'333].load(), 1);
  EXPECT_EQ(std::count_if(seen.begin(), seen.end(), [](const auto& c) { return c.load() > 1; }), 0);
  // The pool is still usable, and a fresh leaf covers everything.
  VisitCounts counts(n);
  ChunkFn mark = [&](std::size_t a, std::size_t b) {
    for (std::size_t i = a; i < b; ++i)
      counts.mark(i);
  };
  std::atomic<bool> fresh{false};
  with_fork_join_pool(*pool, [&](ForkJoinPool auto handle) {
    return detail::run_timed_leaf(handle, 0, n, 10, mark, AlwaysHungry{}, fresh);
  });
  counts.expect_each_once();
  pool->wait_idle();
}

WSLAB_INSTANTIATE_ON_EVERY_POOL(ParallelFor);
WSLAB_INSTANTIATE_ON_EVERY_POOL(ParallelReduce);
WSLAB_INSTANTIATE_ON_EVERY_POOL(ParallelSort);
WSLAB_INSTANTIATE_ON_EVERY_POOL(ParallelStableSort);

}  // namespace
}  // namespace wslab
