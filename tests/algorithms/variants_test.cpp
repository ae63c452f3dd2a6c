// Which path fork-join takes on every registered pool: every stage-5 variant the registry makes
// (the scheduler with each ablation knob) takes the fast path, every other pool the generic one.
// The scheduler as a plain object, and what each knob switches off, are
// stage5_parallel_algos/tests/variants_test.cpp.
#include <gtest/gtest.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "registry/pools.hpp"
#include "stage5_parallel_algos/algorithms/parallel_for.hpp"
#include "stage5_parallel_algos/algorithms/parallel_reduce.hpp"
#include "stage5_parallel_algos/algorithms/range_splitter.hpp"
#include "stage5_parallel_algos/fork_join/join.hpp"
#include "stage5_parallel_algos/scheduler/scheduler.hpp"
#include "stage5_parallel_algos/tests/algos_test_util.hpp"
#include "stage5_parallel_algos/tests/allocation_counter.hpp"
#include "stage5_parallel_algos/tests/seat_guest.hpp"
#include "tests/on_every_pool.hpp"
#include "tests/test_scale.hpp"

namespace wslab {
namespace {
using test::allocations_on_a_worker;

using test::fib_join;
using test::timed_leaves_for;

bool is_stage5(std::string_view name) {
  return name.starts_with(Scheduler::kName);
}

// Every registered name, the five stages and the lab variants.
std::vector<std::string> all_names() {
  return test::all_pool_and_variant_names();
}

std::vector<std::string> stage5_names() {
  std::vector<std::string> names;
  for (const std::string& n : all_names())
    if (is_stage5(n)) names.push_back(n);
  return names;
}

std::vector<std::string> other_names() {
  std::vector<std::string> names;
  for (const std::string& n : all_names())
    if (!is_stage5(n)) names.push_back(n);
  return names;
}

// Parameterised over a list of registered names; ':' is not allowed in a test name.
class Named : public ::testing::TestWithParam<std::string> {
 protected:
  std::unique_ptr<IThreadPool> make(std::size_t threads) const {
    return make_pool(GetParam(), threads);
  }
};
std::string test_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string s = info.param;
  for (char& c : s)
    if (c == ':') c = '_';
  return s;
}

// ---- Every stage-5 variant takes the fast path. ----

class Stage5Variant : public Named {};

// On a worker, join pushes its forked half, which lives in the joining frame, onto the worker's
// own deque: no allocation, whether or not another worker steals some of the forks.
TEST_P(Stage5Variant, JoinOnAWorkerDoesNotAllocate) {
  for (std::size_t threads : {1u, 2u}) {
    auto pool = make(threads);
    std::uint64_t result = 0;
    const std::size_t allocations =
        allocations_on_a_worker(*pool, [&] { result = fib_join(*pool, 18); });
    EXPECT_EQ(result, 2584u);
    EXPECT_EQ(allocations, 0u) << threads << " threads";
  }
}

// parallel_for and parallel_reduce fork by join: with the automatic grain (timed leaves or
// splitting on demand, per the variant) and with a fixed one, nothing is allocated.
TEST_P(Stage5Variant, ParallelForAndReduceOnAWorkerDoNotAllocate) {
  auto pool = make(2);
  std::vector<int> v(100'000, 1);
  for (std::size_t grain : {std::size_t{0}, std::size_t{500}}) {
    long sum = 0;
    const std::size_t allocations = allocations_on_a_worker(*pool, [&] {
      parallel_for(*pool, v.begin(), v.end(), [](int& x) { x += 1; }, grain);
      sum = parallel_reduce(*pool, v.begin(), v.end(), 0L, std::plus<>{}, grain);
    });
    EXPECT_EQ(allocations, 0u) << "grain " << grain;
    EXPECT_EQ(sum, static_cast<long>(v.size()) * v.front());
  }
}

// From outside, join takes the guest seat and runs its first branch on the caller, unless the
// seat is switched off: then the whole join is one task, run by a worker. The seat is lent only in
// a sleeping worker's place, so each round first waits for one to park. The caller takes it
// back only if no worker has started it within a millisecond (join.hpp), which a loaded machine
// may do to any one round: without the seat, the rounds go on past 20 until a worker has run one.
TEST_P(Stage5Variant, OutsideJoinRunsOnTheCallerUnlessTheSeatIsOff) {
  auto pool = make(2);
  const bool seat = GetParam().find("no_guest_seat") == std::string::npos;
  const std::thread::id caller = std::this_thread::get_id();
  int rounds = 0;
  int on_a_worker = 0;
  ASSERT_NE(sched::fork_join_host(*pool), nullptr);
  auto one_round = [&] {
    if (seat) test::wait_until_a_worker_sleeps(static_cast<Scheduler&>(*pool));
    auto [a_here, b_sum] = join(
        *pool, [&] { return std::this_thread::get_id() == caller; },
        [] {
          int sum = 0;
          for (int i = 1; i <= 100; ++i)
            sum += i;
          return sum;
        });
    if (seat) {
      ASSERT_TRUE(a_here);
    }
    on_a_worker += a_here ? 0 : 1;
    ASSERT_EQ(b_sum, 5050);
    ASSERT_FALSE(pool->owns_current_thread());
  };
  const bool finished = test::eventually([&] {
    one_round();
    if (::testing::Test::HasFatalFailure()) return true;
    return ++rounds >= 20 && (seat || on_a_worker > 0);
  });
  if (::testing::Test::HasFatalFailure()) return;
  EXPECT_TRUE(finished) << on_a_worker << " of " << rounds << " rounds were handed to a worker";
}

// Timed leaves on every stage-5 variant but no_timed_leaves, from outside and from a worker;
// never with a fixed grain or a single thread.
TEST_P(Stage5Variant, TimedLeavesUnlessSwitchedOff) {
  const bool timed = GetParam().find("no_timed_leaves") == std::string::npos;
  auto pool = make(2);
  EXPECT_EQ(timed_leaves_for(*pool, 0), timed);
  EXPECT_FALSE(timed_leaves_for(*pool, 64));
  std::atomic<int> on_worker{-1};
  pool->submit([&] { on_worker = timed_leaves_for(*pool, 0) ? 1 : 0; });
  pool->wait_idle();
  EXPECT_EQ(on_worker.load(), timed ? 1 : 0);
  EXPECT_FALSE(timed_leaves_for(*make(1), 0));
}

INSTANTIATE_TEST_SUITE_P(Registered, Stage5Variant, ::testing::ValuesIn(stage5_names()), test_name);

// ---- Every other pool takes the generic path, and still works. ----

class OtherPool : public Named {};

// The generic path boxes each forked half on the heap. One worker, so that every fork is made
// on the thread that counts (with two, a thief makes the forks of what it steals).
TEST_P(OtherPool, JoinOnAWorkerTakesTheGenericPath) {
  auto pool = make(1);
  std::uint64_t result = 0;
  const std::size_t allocations =
      allocations_on_a_worker(*pool, [&] { result = fib_join(*pool, 12); });
  EXPECT_EQ(result, 144u);
  EXPECT_GE(allocations, 232u);  // fib(12) makes 232 forks, one heap job each
  EXPECT_FALSE(timed_leaves_for(*make(2), 0));
}

INSTANTIATE_TEST_SUITE_P(Registered, OtherPool, ::testing::ValuesIn(other_names()), test_name);

}  // namespace
}  // namespace wslab
