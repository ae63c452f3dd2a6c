// The algorithms' wider API on every registered pool, each against the sequential std::
// algorithm: parallel_for with bounds of different integer types, the range overloads,
// parallel_transform_reduce and parallel_reduce with a grain, the inclusive and exclusive scans.
// The same calls through wslab::ThreadPool's members are
// stage5_parallel_algos/tests/algorithms_api_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <mutex>
#include <numeric>
#include <random>
#include <set>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "stage5_parallel_algos/algorithms/parallel_for.hpp"
#include "stage5_parallel_algos/algorithms/parallel_reduce.hpp"
#include "stage5_parallel_algos/algorithms/parallel_scan.hpp"
#include "stage5_parallel_algos/algorithms/parallel_sort.hpp"
#include "stage5_parallel_algos/algorithms/parallel_stable_sort.hpp"
#include "stage5_parallel_algos/tests/algos_test_util.hpp"
#include "tests/algorithms/shared_callables.hpp"
#include "tests/on_every_pool.hpp"

namespace wslab {
namespace {

using test::scan_input;

using test::OnEveryPool;
using test::scaled;
using test::Tagged;
using test::TestFailure;
using test::VisitCounts;

// ---- Which overload a call picks (compile time) ----

static_assert(std::is_same_v<index_t<int, std::size_t>, std::size_t>);
static_assert(std::is_same_v<index_t<short, long>, long>);
static_assert(std::is_same_v<index_t<int, unsigned>, unsigned>);
static_assert(std::is_same_v<index_t<std::int8_t, std::int8_t>, std::int8_t>);

struct TakesIndex {
  void operator()(std::size_t) const {}
};
struct TakesInt {
  void operator()(int&) const {}
};
using Less = std::less<>;

template <class... Args>
concept ForCompiles = requires(IThreadPool& pool, Args... args) { parallel_for(pool, args...); };
template <class... Args>
concept SortCompiles = requires(IThreadPool& pool, Args... args) { parallel_sort(pool, args...); };

// Mixed bounds are the index form; a range and a function are the range form.
static_assert(ForCompiles<int, std::size_t, TakesIndex>);
static_assert(ForCompiles<std::vector<int>&, TakesInt>);
static_assert(ForCompiles<std::span<int>, TakesInt>);
static_assert(ForCompiles<std::vector<int>::iterator, std::vector<int>::iterator, TakesInt>);
static_assert(!ForCompiles<bool, bool, TakesIndex>);  // bool is no index
static_assert(SortCompiles<std::vector<int>&>);
static_assert(SortCompiles<std::array<int, 3>&, Less>);
static_assert(SortCompiles<std::vector<int>::iterator, std::vector<int>::iterator, Less>);
static_assert(!SortCompiles<const std::vector<int>&>);  // nothing to sort in a const range

// ---- parallel_for: index bounds of different types, and ranges ----

class ParallelForApi : public OnEveryPool {};

// Shared by the tests below wherever only the bounds or the range differ, so that each kind of
// bounds or range instantiates parallel_for once rather than once per lambda.
struct CountCalls {
  std::atomic<int>* calls;
  template <class I>
  void operator()(I) const {
    calls->fetch_add(1);
  }
};
struct MulAdd {  // x = mul * x + add
  int mul, add;
  void operator()(int& x) const { x = mul * x + add; }
};

TEST_P(ParallelForApi, MixedBoundsVisitEveryIndexOnceAsTheCommonType) {
  auto pool = make(2);
  for (std::size_t n : {0u, 1u, 2u, 3u, 17u, 1000u, 65'537u}) {
    std::vector<char> v(n);
    for (std::size_t grain : {0u, 1u, 7u, 1'000'000u}) {
      VisitCounts counts(n);
      parallel_for(
          *pool, 0, v.size(),
          [&](auto i) {
            static_assert(std::is_same_v<decltype(i), std::size_t>);
            counts.mark(i);
          },
          grain);
      counts.expect_each_once();
    }
  }
  // A signed common type takes negative bounds.
  VisitCounts counts(15);
  parallel_for(*pool, short{-5}, 10L, [&](auto i) {
    static_assert(std::is_same_v<decltype(i), long>);
    counts.mark(static_cast<std::size_t>(i + 5));
  });
  counts.expect_each_once();
}

TEST_P(ParallelForApi, EmptyAndReversedMixedBoundsDoNothing) {
  auto pool = make(2);
  std::atomic<int> calls{0};
  const CountCalls count{&calls};
  parallel_for(*pool, std::size_t{5}, -1, count);  // 5 > -1 as numbers, however -1 converts
  parallel_for(*pool, 10u, 5, count);
  parallel_for(*pool, 7, std::size_t{7}, count);
  parallel_for(*pool, std::size_t{0}, -1L, count);
  EXPECT_EQ(calls.load(), 0);
}

TEST_P(ParallelForApi, ANegativeBoundWithAnUnsignedIndexThrowsBeforeAnyCall) {
  auto pool = make(2);
  std::vector<int> v(10);
  std::atomic<int> calls{0};
  const CountCalls count{&calls};
  EXPECT_THROW(parallel_for(*pool, -1, v.size(), count), std::out_of_range);
  EXPECT_THROW(parallel_for(*pool, -3, 0u, count), std::out_of_range);
  EXPECT_EQ(calls.load(), 0);
  pool->wait_idle();
}

TEST_P(ParallelForApi, BoundsAtTheEndsOfTheirTypes) {
  auto pool = make(2);
  std::mutex m;
  std::vector<long long> seen;
  auto record = [&](auto i) {
    std::lock_guard lock(m);
    seen.push_back(static_cast<long long>(i));
  };
  auto expect_seen = [&](std::vector<long long> expected) {
    std::sort(seen.begin(), seen.end());
    EXPECT_EQ(seen, expected);
    seen.clear();
  };
  parallel_for(*pool, INT_MAX - 3, INT_MAX, record);
  expect_seen({INT_MAX - 3, INT_MAX - 2, INT_MAX - 1});
  parallel_for(*pool, INT_MIN, INT_MIN + 3, record);
  expect_seen({INT_MIN, INT_MIN + 1LL, INT_MIN + 2LL});
  constexpr auto kMin64 = std::numeric_limits<std::int64_t>::min();
  parallel_for(*pool, kMin64, kMin64 + 2, record);
  expect_seen({kMin64, kMin64 + 1});
  // Every std::int8_t but the last: the index type is std::int8_t itself.
  VisitCounts counts(255);
  parallel_for(*pool, std::int8_t{-128}, std::int8_t{127}, [&](auto i) {
    static_assert(std::is_same_v<decltype(i), std::int8_t>);
    counts.mark(static_cast<std::size_t>(i + 128));
  });
  counts.expect_each_once();
  std::atomic<std::uint64_t> sum{0};
  constexpr auto kMaxU64 = std::numeric_limits<std::uint64_t>::max();
  parallel_for(*pool, kMaxU64 - 2, kMaxU64, [&](std::uint64_t i) { sum += kMaxU64 - i; });
  EXPECT_EQ(sum.load(), 2u + 1u);
}

TEST_P(ParallelForApi, RangesOfEveryKind) {
  auto pool = make(2);
  for (std::size_t n : {0u, 1u, 2u, 1000u, 100'003u}) {
    std::vector<std::int64_t> v(n);
    std::iota(v.begin(), v.end(), 0);
    parallel_for(*pool, v, [](std::int64_t& x) { x = 3 * x + 1; });
    for (std::size_t i = 0; i < n; ++i)
      ASSERT_EQ(v[i], 3 * static_cast<std::int64_t>(i) + 1) << "n " << n << " at " << i;
  }
  std::array<int, 5> a{1, 2, 3, 4, 5};
  parallel_for(*pool, a, MulAdd{10, 0}, 1);
  EXPECT_EQ(a, (std::array<int, 5>{10, 20, 30, 40, 50}));
  int c[7] = {0, 0, 0, 0, 0, 0, 0};
  parallel_for(*pool, c, MulAdd{0, 1});
  EXPECT_EQ(std::count(std::begin(c), std::end(c), 1), 7);
  // A span over the middle: the elements outside it stay as they were.
  std::vector<int> w(10'001, 0);
  parallel_for(*pool, std::span<int>(w).subspan(1, 9'999), MulAdd{0, 1});
  EXPECT_EQ(w.front(), 0);
  EXPECT_EQ(w.back(), 0);
  EXPECT_EQ(std::count(w.begin(), w.end(), 1), 9'999);
  // A const range: f gets const references.
  const std::vector<int>& cw = w;
  std::atomic<long> total{0};
  parallel_for(*pool, cw, [&](const int& x) { total += x; }, 100);
  EXPECT_EQ(total.load(), 9'999);
}

// ---- parallel_transform_reduce and parallel_reduce with a grain ----

class TransformReduceApi : public OnEveryPool {};

// The map of every transform-reduce of ints to a long here, and their init a long: the tests
// that are not about the types then share one instantiation of parallel_transform_reduce (the
// compile time of this file is in the algorithms' instantiations).
using MapInt = test::MapFn<long, int>;

std::vector<int> signed_values(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<int> v(n);
  for (int& x : v)
    x = static_cast<int>(rng() % 2'000'001) - 1'000'000;
  return v;
}

TEST_P(TransformReduceApi, EqualsStdTransformReduceForEverySizeAndGrain) {
  auto pool = make(2);
  const MapInt square = [](int x) { return static_cast<std::int64_t>(x) * x; };
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{2}, std::size_t{3},
                        std::size_t{1000}, scaled(100'003, 20'003)}) {
    const std::vector<int> v = signed_values(n, static_cast<unsigned>(n));
    const std::int64_t expected =
        std::transform_reduce(v.begin(), v.end(), std::int64_t{-7}, std::plus<>{}, square);
    for (std::size_t grain : {0u, 1u, 64u, 10'000'000u}) {
      EXPECT_EQ(parallel_transform_reduce(*pool, v.begin(), v.end(), std::int64_t{-7},
                                          std::plus<>{}, square, grain),
                expected)
          << "n=" << n << " grain=" << grain;
      EXPECT_EQ(parallel_transform_reduce(*pool, v, std::int64_t{-7}, std::plus<>{}, square, grain),
                expected)
          << "range form, n=" << n << " grain=" << grain;
    }
  }
}

TEST_P(TransformReduceApi, TheResultTypeIsInitsNotTheElements) {
  auto pool = make(2);
  std::vector<std::string> words;
  for (int i = 0; i < 5'003; ++i)
    words.push_back(std::string(static_cast<std::size_t>(i % 13), 'x'));
  const auto length = [](const std::string& s) { return s.size(); };
  const std::size_t expected =
      std::transform_reduce(words.begin(), words.end(), std::size_t{0}, std::plus<>{}, length);
  EXPECT_EQ(parallel_transform_reduce(*pool, words, std::size_t{0}, std::plus<>{}, length, 10),
            expected);
  const auto longest = [](std::size_t a, std::size_t b) { return std::max(a, b); };
  EXPECT_EQ(parallel_transform_reduce(*pool, words, std::size_t{0}, longest, length), 12u);
  std::vector<std::string> none;
  EXPECT_EQ(parallel_transform_reduce(*pool, none, std::size_t{99}, std::plus<>{}, length), 99u);
}

TEST_P(TransformReduceApi, ReduceRangeFormAndGrain) {
  auto pool = make(2);
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{5}, std::size_t{4'097},
                        scaled(100'003, 20'003)}) {
    const std::vector<int> v = signed_values(n, 3);
    const long expected = std::reduce(v.begin(), v.end(), 11L);
    for (std::size_t grain : {0u, 1u, 3u, 1'000u}) {
      EXPECT_EQ(parallel_reduce(*pool, v, 11L, std::plus<>{}, grain), expected) << "n=" << n;
      EXPECT_EQ(parallel_reduce(*pool, v.begin(), v.end(), 11L, std::plus<>{}, grain), expected);
    }
    EXPECT_EQ(parallel_reduce(*pool, v, 11L), expected);  // std::plus<> by default
  }
}

// A grain as long as the range leaves it whole: one piece, mapped on the calling thread.
TEST_P(TransformReduceApi, AGrainAsLongAsTheRangeKeepsItInOnePieceOnTheCaller) {
  auto pool = make(2);
  const std::vector<int> v = signed_values(10'000, 5);
  std::atomic<std::size_t> elsewhere{0};
  const std::thread::id caller = std::this_thread::get_id();
  const MapInt map = [&](int x) {
    if (std::this_thread::get_id() != caller) elsewhere++;
    return long{x};
  };
  const auto sum = parallel_transform_reduce(*pool, v, 0L, std::plus<>{}, map, v.size());
  EXPECT_EQ(sum, std::reduce(v.begin(), v.end(), 0L));
  EXPECT_EQ(elsewhere.load(), 0u);
}

// A grain shorter than the range splits it: the piece holding element 0 waits (boundedly) until
// another thread has mapped an element, which only a split range allows.
TEST_P(TransformReduceApi, AShortGrainSplitsTheRangeBetweenThreads) {
  auto pool = make(2);
  const std::vector<int> v(64, 1);
  std::mutex m;
  std::set<std::thread::id> mappers;
  auto mappers_seen = [&] {
    std::lock_guard lock(m);
    return mappers.size();
  };
  const MapInt map = [&](const int& x) {
    {
      std::lock_guard lock(m);
      mappers.insert(std::this_thread::get_id());
    }
    if (&x == v.data()) (void)test::eventually([&] { return mappers_seen() >= 2; });
    return x;
  };
  const auto sum = parallel_transform_reduce(*pool, v.begin(), v.end(), 0L, std::plus<>{}, map, 4);
  EXPECT_EQ(sum, 64);
  EXPECT_GE(mappers_seen(), 2u) << "no other thread mapped an element";
}

// ---- Scans ----

// Every scan instantiates the whole two-pass machinery once per value type, iterator types, form
// and op type. So the scans below share what they can: inputs are mutable vectors unless the
// test is about the types, every op but std::plus<> is ScanOp, whatever each test asks of it, and
// so is every op of a std::int64_t scan with init (ScanOp{} adds std::int64_t as std::plus<> does).

class ScanApi : public OnEveryPool {};

// The lengths that matter: empty, shorter than the parallel path, its threshold and around it,
// blocks that do not divide the range.
std::vector<std::size_t> scan_sizes() {
  return {0,
          1,
          2,
          3,
          7,
          2 * kMinScanBlock - 1,
          2 * kMinScanBlock,
          2 * kMinScanBlock + 1,
          3 * kMinScanBlock + 5,
          100'003,
          scaled(1'000'003, 200'003)};
}

// 2x2 matrices of integers mod 2^64: multiplication is associative and not commutative, and
// exact, so any regrouping is allowed and any reordering shows.
struct Mat {
  std::uint64_t a, b, c, d;
  bool operator==(const Mat&) const = default;
};
Mat mul(const Mat& x, const Mat& y) {
  return {x.a * y.a + x.b * y.c, x.a * y.b + x.b * y.d, x.c * y.a + x.d * y.c,
          x.c * y.b + x.d * y.d};
}

// n random matrices from rng.
std::vector<Mat> random_mats(std::mt19937_64& rng, std::size_t n) {
  std::vector<Mat> v(n);
  for (Mat& m : v)
    m = {rng(), rng(), rng(), rng()};
  return v;
}

// The threads that have called an op, and a wait (until a deadline) for a second one.
struct Meeting {
  std::chrono::steady_clock::time_point give_up;
  std::mutex m;
  std::set<std::thread::id> callers;

  std::size_t callers_seen() {
    std::lock_guard lock(m);
    return callers.size();
  }
  void arrive_and_wait_for_two() {
    {
      std::lock_guard lock(m);
      callers.insert(std::this_thread::get_id());
    }
    while (callers_seen() < 2 && std::chrono::steady_clock::now() < give_up)
      std::this_thread::yield();
  }
};

// The op of every scan here but those with std::plus<>. Over Mat it multiplies (not
// commutative); over std::int64_t it adds, and may throw TestFailure on a negative right operand
// or on any negative operand, or wait at `meeting` until two threads have called it. Over both it
// counts its calls in `calls`, if given. Out of line: the scans' loops call it, the tests are not
// about inlining it.
struct ScanOp {
  enum class Throws { never, on_negative_element, on_negative_operand };
  std::atomic<std::size_t>* calls = nullptr;
  Throws throws = Throws::never;
  Meeting* meeting = nullptr;

  [[gnu::noinline]] Mat operator()(const Mat& x, const Mat& y) const {
    if (calls != nullptr) calls->fetch_add(1, std::memory_order_relaxed);
    return mul(x, y);
  }
  [[gnu::noinline]] std::int64_t operator()(std::int64_t a, std::int64_t b) const {
    if (calls != nullptr) calls->fetch_add(1, std::memory_order_relaxed);
    if (throws == Throws::on_negative_element && b < 0) throw TestFailure("negative element");
    if (throws == Throws::on_negative_operand && (a < 0 || b < 0))
      throw TestFailure("negative operand");
    if (meeting != nullptr) meeting->arrive_and_wait_for_two();
    return a + b;
  }
};

TEST_P(ScanApi, InclusiveEqualsStdInclusiveScan) {
  auto pool = make(2);
  for (std::size_t n : scan_sizes()) {
    std::vector<std::int64_t> v = scan_input(n);
    std::vector<std::int64_t> expected(n), out(n, -1);
    std::inclusive_scan(v.begin(), v.end(), expected.begin());
    EXPECT_EQ(parallel_inclusive_scan(*pool, v.begin(), v.end(), out.begin()), out.end());
    ASSERT_EQ(out, expected) << "n=" << n;
    std::fill(out.begin(), out.end(), -1);
    EXPECT_EQ(parallel_inclusive_scan(*pool, v, out.begin(), std::plus<>{}), out.end());
    ASSERT_EQ(out, expected) << "range form, n=" << n;
    std::inclusive_scan(v.begin(), v.end(), expected.begin(), std::plus<>{}, std::int64_t{100});
    parallel_inclusive_scan(*pool, v, out.begin(), ScanOp{}, std::int64_t{100});
    ASSERT_EQ(out, expected) << "with init, n=" << n;
  }
}

TEST_P(ScanApi, ExclusiveEqualsStdExclusiveScanWithAWiderInit) {
  auto pool = make(2);
  for (std::size_t n : scan_sizes()) {
    const std::vector<std::int64_t> wide = scan_input(n);
    const std::vector<int> v(wide.begin(), wide.end());
    // int elements, a long long init: every partial result is a long long, as in the standard.
    const long long init = 1LL << 40;
    std::vector<long long> expected(n), out(n, -1);
    std::exclusive_scan(v.begin(), v.end(), expected.begin(), init);
    EXPECT_EQ(parallel_exclusive_scan(*pool, v.begin(), v.end(), out.begin(), init), out.end());
    ASSERT_EQ(out, expected) << "n=" << n;
    std::fill(out.begin(), out.end(), -1);
    EXPECT_EQ(parallel_exclusive_scan(*pool, v, out.begin(), init, std::plus<>{}), out.end());
    ASSERT_EQ(out, expected) << "range form, n=" << n;
  }
}

TEST_P(ScanApi, InPlace) {
  auto pool = make(2);
  for (std::size_t n : scan_sizes()) {
    std::vector<std::int64_t> v = scan_input(n);
    std::vector<std::int64_t> expected(n);
    std::inclusive_scan(v.begin(), v.end(), expected.begin());
    parallel_inclusive_scan(*pool, v.begin(), v.end(), v.begin());
    ASSERT_EQ(v, expected) << "inclusive, n=" << n;
    v = scan_input(n);
    std::exclusive_scan(v.begin(), v.end(), expected.begin(), std::int64_t{-3});
    parallel_exclusive_scan(*pool, v, v.begin(), std::int64_t{-3}, ScanOp{});
    ASSERT_EQ(v, expected) << "exclusive, n=" << n;
  }
}

TEST_P(ScanApi, ANonCommutativeOpKeepsTheOrder) {
  auto pool = make(2);
  const ScanOp op;
  for (std::size_t n : scan_sizes()) {
    std::mt19937_64 rng(n);
    std::vector<Mat> v = random_mats(rng, n);
    std::vector<Mat> expected(n), out(n);
    std::inclusive_scan(v.begin(), v.end(), expected.begin(), op);
    parallel_inclusive_scan(*pool, v.begin(), v.end(), out.begin(), op);
    ASSERT_EQ(out, expected) << "inclusive, n=" << n;
    const Mat init{rng(), rng(), rng(), rng()};
    std::exclusive_scan(v.begin(), v.end(), expected.begin(), init, op);
    parallel_exclusive_scan(*pool, v.begin(), v.end(), out.begin(), init, op);
    ASSERT_EQ(out, expected) << "exclusive, n=" << n;
    std::inclusive_scan(v.begin(), v.end(), expected.begin(), op, init);
    parallel_inclusive_scan(*pool, v.begin(), v.end(), out.begin(), op, init);
    ASSERT_EQ(out, expected) << "inclusive with init, n=" << n;
  }
}

TEST_P(ScanApi, StringsAreConcatenatedInOrder) {
  auto pool = make(2);
  const std::size_t n = 2 * kMinScanBlock + 3;  // the parallel path, with uneven quarters
  std::vector<std::string> v(n);
  for (std::size_t i = 0; i < n; ++i)
    v[i] = std::string(1, static_cast<char>('a' + i % 26));
  std::vector<std::string> expected(n), out(n);
  std::inclusive_scan(v.begin(), v.end(), expected.begin());
  parallel_inclusive_scan(*pool, v, out.begin());
  ASSERT_EQ(out, expected);
  std::exclusive_scan(v.begin(), v.end(), expected.begin(), std::string(">"));
  parallel_exclusive_scan(*pool, v, out.begin(), std::string(">"));
  ASSERT_EQ(out, expected);
}

TEST_P(ScanApi, AThrowingOpPropagatesAndThePoolStaysUsable) {
  auto pool = make(2);
  const std::size_t n = 10 * kMinScanBlock + 7;
  std::vector<std::int64_t> v(n, 1);
  std::vector<std::int64_t> out(n);
  const ScanOp op{.throws = ScanOp::Throws::on_negative_element};
  for (std::size_t bad : {std::size_t{0}, n / 2, n - 1}) {
    v[bad] = -1;
    EXPECT_THROW(parallel_exclusive_scan(*pool, v, out.begin(), std::int64_t{0}, op), TestFailure)
        << "bad element at " << bad;
    if (bad != 0) {  // the inclusive scan starts from element 0 without combining it
      EXPECT_THROW(parallel_inclusive_scan(*pool, v, out.begin(), op), TestFailure);
    }
    v[bad] = 1;
  }
  parallel_inclusive_scan(*pool, v, out.begin());
  for (std::size_t i = 0; i < n; ++i)
    ASSERT_EQ(out[i], static_cast<std::int64_t>(i + 1));
  pool->wait_idle();
}

TEST_P(ScanApi, FromInsideATaskAndOnOneThread) {
  for (std::size_t threads : {1u, 2u}) {
    auto pool = make(threads);
    std::vector<std::int64_t> v = scan_input(100'003);
    std::vector<std::int64_t> expected(v.size()), out(v.size());
    std::inclusive_scan(v.begin(), v.end(), expected.begin());
    pool->submit([&] { parallel_inclusive_scan(*pool, v, out.begin()); });
    pool->wait_idle();
    EXPECT_EQ(out, expected) << threads << " threads";
  }
}

// The op of the tests below: adds; the first time its right operand is kHold (element 2, in the
// first block's first quarter, which its fold reaches at once) it waits until some thread has
// added kLast (the last element, in the last block's fold) or `patience` runs out. So the
// first block's thread is blocked inside op until the blocks after it have all been folded.
struct HoldingOp {
  static constexpr std::int64_t kHold = std::int64_t{1} << 40;
  static constexpr std::int64_t kLast = std::int64_t{1} << 41;
  std::chrono::steady_clock::duration patience;
  std::atomic<bool>* held;
  std::atomic<bool>* last_added;
  bool* gave_up;
  std::int64_t operator()(std::int64_t a, std::int64_t b) const {
    if (b == kLast) last_added->store(true);
    if (b == kHold && !held->exchange(true)) {
      *gave_up = !test::eventually([&] { return last_added->load(); }, patience);
    }
    return a + b;
  }
};

// The scan of `v` by detail::blocked_scan() with blocks that wait for the block before them the
// way `Wait` says, its first block held by HoldingOp: whether the last block was folded while the
// first was held.
template <detail::ScanWait Wait>
bool folded_past_a_held_block(IThreadPool& pool, std::chrono::steady_clock::duration patience,
                              const std::vector<std::int64_t>& v, std::vector<std::int64_t>& out) {
  std::atomic<bool> held{false}, last_added{false};
  bool gave_up = false;
  HoldingOp op{patience, &held, &last_added, &gave_up};
  with_fork_join_pool(pool, [&](ForkJoinPool auto handle) {
    detail::blocked_scan<false, false, std::int64_t, Wait>(handle, v.begin(), v.end(), out.begin(),
                                                           std::nullopt, op, 0);
  });
  EXPECT_TRUE(held.load()) << "no thread reached the held element";
  return !gave_up;
}

std::vector<std::int64_t> holding_input() {
  // Eight blocks at the default block size (16,384 elements of 8 bytes).
  std::vector<std::int64_t> v(8 * std::max(kMinScanBlock, kScanBlockBytes / sizeof(std::int64_t)),
                              1);
  v[2] = HoldingOp::kHold;
  v.back() = HoldingOp::kLast;
  return v;
}

// A thread blocked inside op in one block (here until another thread has folded the last block:
// op may wait for anything, a nested parallel call of its own among others) holds up nothing:
// the blocks after it stop waiting for its prefix, are folded and deferred, and scanned once it
// is done. The result is the sequential scan's.
TEST_P(ScanApi, ABlockBlockedInsideOpDoesNotHoldUpTheBlocksAfterIt) {
  auto pool = make(2);
  const std::vector<std::int64_t> v = holding_input();
  std::vector<std::int64_t> expected(v.size()), out(v.size());
  std::inclusive_scan(v.begin(), v.end(), expected.begin());
  EXPECT_TRUE(folded_past_a_held_block<detail::ScanWait::bounded>(*pool, test::kPatience, v, out))
      << "the last block was not folded while the first was held";
  EXPECT_EQ(out, expected);
}

// The same with ScanWait::forever, the deliberately broken variant whose blocks wait for the
// block before them however long it takes: the second block's thread waits for the held first
// one, so no thread folds the last block until the hold gives up (after 300 ms here).
TEST_P(ScanApi, BlocksThatWaitForeverForTheBlockBeforeThemStallBehindAHeldOne) {
  auto pool = make(2);
  const std::vector<std::int64_t> v = holding_input();
  std::vector<std::int64_t> expected(v.size()), out(v.size());
  std::inclusive_scan(v.begin(), v.end(), expected.begin());
  EXPECT_FALSE(folded_past_a_held_block<detail::ScanWait::forever>(
      *pool, std::chrono::milliseconds(300), v, out));
  EXPECT_EQ(out, expected);  // once the hold gave up, the scan went on
}

// ---- Scans with a grain ----

static_assert(std::is_convertible_v<std::size_t, ScanGrain>);  // after init, a plain integer

// The grains tried on a range of n elements: blocks shorter than the scan's minimum of eight
// elements, a block per 100, and about the whole range (for n == 0, n - 1 is the largest grain).
std::vector<std::size_t> scan_grains(std::size_t n) {
  return {0, 1, 2, 3, 7, 100, n - 1, n, n + 1};
}

// Every form with a grain against the std:: scans, with an op that is not commutative, and the
// number of calls of op: one pass calls it once per element it combines (n, or n - 1 for the
// inclusive scan without init, whose first element is its own prefix), two passes call it
// exactly twice that. A grain shorter than the range takes two passes on two threads once the
// range holds two blocks of eight elements; a grain of 0 takes them from 8,192 elements on.
TEST_P(ScanApi, WithAGrainEqualsStdAndCallsOpOncePerElementAndPass) {
  auto pool = make(2);
  for (std::size_t n : {0u, 1u, 2u, 1000u, 10'000u}) {
    std::mt19937_64 rng(n + 1);
    std::vector<Mat> v = random_mats(rng, n);
    const Mat init{rng(), rng(), rng(), rng()};
    std::atomic<std::size_t> calls{0};
    const ScanOp op{.calls = &calls};
    std::vector<Mat> inclusive(n), inclusive_init(n), exclusive(n), out(n);
    std::inclusive_scan(v.begin(), v.end(), inclusive.begin(), op);
    std::inclusive_scan(v.begin(), v.end(), inclusive_init.begin(), op, init);
    std::exclusive_scan(v.begin(), v.end(), exclusive.begin(), init, op);
    for (std::size_t grain : scan_grains(n)) {
      SCOPED_TRACE("n=" + std::to_string(n) + " grain=" + std::to_string(grain));
      const bool two_passes = grain == 0 ? n >= 2 * kMinScanBlock : n >= 1000 && grain < n;
      const auto expect_calls = [&](std::size_t one_pass, const char* form) {
        EXPECT_EQ(calls.exchange(0), two_passes ? 2 * one_pass : one_pass) << form;
      };
      calls = 0;
      EXPECT_EQ(
          parallel_inclusive_scan(*pool, v.begin(), v.end(), out.begin(), op, ScanGrain{grain}),
          out.end());
      EXPECT_EQ(out, inclusive);
      expect_calls(n == 0 ? 0 : n - 1, "inclusive");
      parallel_inclusive_scan(*pool, v, out.begin(), op, ScanGrain{grain});
      EXPECT_EQ(out, inclusive);
      expect_calls(n == 0 ? 0 : n - 1, "inclusive, range form");
      EXPECT_EQ(parallel_inclusive_scan(*pool, v.begin(), v.end(), out.begin(), op, init, grain),
                out.end());
      EXPECT_EQ(out, inclusive_init);
      expect_calls(n, "inclusive with init");
      parallel_inclusive_scan(*pool, v, out.begin(), op, init, grain);
      EXPECT_EQ(out, inclusive_init);
      expect_calls(n, "inclusive with init, range form");
      EXPECT_EQ(parallel_exclusive_scan(*pool, v.begin(), v.end(), out.begin(), init, op, grain),
                out.end());
      EXPECT_EQ(out, exclusive);
      expect_calls(n, "exclusive");
      std::copy(v.begin(), v.end(), out.begin());
      parallel_exclusive_scan(*pool, out, out.begin(), init, op, grain);  // in place
      EXPECT_EQ(out, exclusive);
      expect_calls(n, "exclusive in place, range form");
    }
  }
}

// After op, an integer is init as in std::inclusive_scan, whatever its type; only a ScanGrain
// is a grain there. After init, an integer is a grain.
TEST_P(ScanApi, AnIntegerAfterOpIsInitAndAScanGrainIsAGrain) {
  auto pool = make(2);
  std::vector<std::size_t> v(1000);
  std::iota(v.begin(), v.end(), std::size_t{1});
  std::vector<std::size_t> without_init(v.size()), with_init(v.size()), out(v.size());
  std::inclusive_scan(v.begin(), v.end(), without_init.begin());
  std::inclusive_scan(v.begin(), v.end(), with_init.begin(), std::plus<>{}, std::size_t{100});
  parallel_inclusive_scan(*pool, v.begin(), v.end(), out.begin(), std::plus<>{}, std::size_t{100});
  EXPECT_EQ(out, with_init);
  parallel_inclusive_scan(*pool, v, out.begin(), std::plus<>{}, std::size_t{100});
  EXPECT_EQ(out, with_init);
  parallel_inclusive_scan(*pool, v.begin(), v.end(), out.begin(), std::plus<>{}, ScanGrain{100});
  EXPECT_EQ(out, without_init);
  parallel_inclusive_scan(*pool, v, out.begin(), std::plus<>{}, ScanGrain{100});
  EXPECT_EQ(out, without_init);
  parallel_inclusive_scan(*pool, v, out.begin(), std::plus<>{}, std::size_t{100}, 7);
  EXPECT_EQ(out, with_init);
  const std::vector<int> w(v.begin(), v.end());
  std::vector<int> int_out(w.size());
  parallel_inclusive_scan(*pool, w, int_out.begin(), std::plus<>{}, 100);  // an int init
  EXPECT_EQ(std::vector<std::size_t>(int_out.begin(), int_out.end()), with_init);
}

// A grain runs a range far shorter than 8,192 elements on both threads. The first thread to
// call op waits (until a deadline) until another thread has called op too, which only a block
// taken by another thread allows; without the grain the scan is one sequential pass and the
// test fails after the deadline.
TEST_P(ScanApi, AGrainRunsAShortRangeOnTwoThreads) {
  auto pool = make(2);
  std::vector<std::int64_t> v = scan_input(1000);
  for (bool exclusive : {false, true}) {
    SCOPED_TRACE(exclusive ? "exclusive" : "inclusive");
    Meeting meeting;
    meeting.give_up = std::chrono::steady_clock::now() + test::kPatience;
    const ScanOp op{.meeting = &meeting};
    std::vector<std::int64_t> expected(v.size()), out(v.size());
    if (exclusive) {
      std::exclusive_scan(v.begin(), v.end(), expected.begin(), std::int64_t{5});
      parallel_exclusive_scan(*pool, v, out.begin(), std::int64_t{5}, op, 100);
    } else {
      std::inclusive_scan(v.begin(), v.end(), expected.begin());
      parallel_inclusive_scan(*pool, v, out.begin(), op, ScanGrain{100});
    }
    EXPECT_EQ(out, expected);
    EXPECT_GE(meeting.callers_seen(), 2u) << "no other thread called op";
  }
}

TEST_P(ScanApi, AThrowingOpWithAGrainPropagatesAndThePoolStaysUsable) {
  auto pool = make(2);
  const std::size_t n = 1000;
  std::vector<std::int64_t> v(n, 1);
  std::vector<std::int64_t> out(n);
  const ScanOp op{.throws = ScanOp::Throws::on_negative_operand};
  for (std::size_t grain : {std::size_t{7}, std::size_t{100}}) {
    for (std::size_t bad : {std::size_t{0}, n / 2, n - 1}) {
      SCOPED_TRACE("grain=" + std::to_string(grain) + " bad element at " + std::to_string(bad));
      v[bad] = -1;
      EXPECT_THROW(parallel_exclusive_scan(*pool, v, out.begin(), std::int64_t{0}, op, grain),
                   TestFailure);
      EXPECT_THROW(parallel_inclusive_scan(*pool, v, out.begin(), op, std::int64_t{0}, grain),
                   TestFailure);
      EXPECT_THROW(parallel_inclusive_scan(*pool, v, out.begin(), op, ScanGrain{grain}),
                   TestFailure);
      v[bad] = 1;
    }
  }
  parallel_inclusive_scan(*pool, v, out.begin(), op, ScanGrain{100});
  for (std::size_t i = 0; i < n; ++i)
    ASSERT_EQ(out[i], static_cast<std::int64_t>(i + 1));
  pool->wait_idle();
}

// ---- The sorts' range overloads ----

class SortRangesApi : public OnEveryPool {};

TEST_P(SortRangesApi, EqualStdSortOnEveryKindOfRange) {
  auto pool = make(2);
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{2}, kParallelSortCutoff + 1,
                        std::size_t{100'003}}) {
    std::vector<int> v = signed_values(n, 9);
    std::vector<int> expected = v;
    std::sort(expected.begin(), expected.end());
    parallel_sort(*pool, v);
    ASSERT_EQ(v, expected) << "n=" << n;
    v = signed_values(n, 9);
    std::sort(expected.begin(), expected.end(), std::greater<>{});
    parallel_sort(*pool, v, std::greater<>{});
    ASSERT_EQ(v, expected) << "greater, n=" << n;
  }
  std::array<int, 6> a{5, -1, 3, 3, 0, 9};
  parallel_sort(*pool, a);
  EXPECT_EQ(a, (std::array<int, 6>{-1, 0, 3, 3, 5, 9}));
  int c[5] = {4, 2, 5, 1, 3};
  parallel_stable_sort(*pool, c);
  EXPECT_TRUE(std::is_sorted(std::begin(c), std::end(c)));
  // A span over the middle: the elements outside it stay where they were.
  std::vector<int> w = signed_values(50'001, 4);
  const std::vector<int> before = w;
  parallel_sort(*pool, std::span<int>(w).subspan(1, w.size() - 2));
  EXPECT_EQ(w.front(), before.front());
  EXPECT_EQ(w.back(), before.back());
  std::vector<int> middle(before.begin() + 1, before.end() - 1);
  std::sort(middle.begin(), middle.end());
  EXPECT_TRUE(std::equal(middle.begin(), middle.end(), w.begin() + 1));
}

TEST_P(SortRangesApi, StableSortOfARangeKeepsEqualKeysInOrder) {
  auto pool = make(2);
  const auto by_key = [](const Tagged& x, const Tagged& y) { return x.key < y.key; };
  for (std::size_t n :
       {std::size_t{0}, std::size_t{1}, kParallelSortCutoff + 1, std::size_t{100'003}}) {
    const std::vector<int> keys = signed_values(n, 6);
    std::vector<Tagged> v(n);
    for (std::size_t i = 0; i < n; ++i)
      v[i] = {keys[i] % 50, i};
    std::vector<Tagged> expected = v;
    std::stable_sort(expected.begin(), expected.end(), by_key);
    parallel_stable_sort(*pool, std::span<Tagged>(v), by_key);
    ASSERT_EQ(v, expected) << "n=" << n;
  }
}

WSLAB_INSTANTIATE_ON_EVERY_POOL(ParallelForApi);
WSLAB_INSTANTIATE_ON_EVERY_POOL(TransformReduceApi);
WSLAB_INSTANTIATE_ON_EVERY_POOL(ScanApi);
WSLAB_INSTANTIATE_ON_EVERY_POOL(SortRangesApi);

}  // namespace
}  // namespace wslab
