// this_worker_index() and PerWorker<T> on stage 5's own pools: ThreadPool's workers report the
// indices their start hook was given, a caller seated on the scheduler's guest seat keeps its own
// slot, and a PerWorker built from a ThreadPool (with a move-only initializer, and a T that is not
// movable). The same calls on every registered pool, the five stages and the lab variants, are
// tests/algorithms/per_worker_test.cpp.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <type_traits>
#include <vector>

#include "stage5_parallel_algos/algorithms/per_worker.hpp"
#include "stage5_parallel_algos/scheduler/scheduler.hpp"
#include "stage5_parallel_algos/tests/algos_test_util.hpp"
#include "stage5_parallel_algos/tests/per_worker_checks.hpp"
#include "stage5_parallel_algos/tests/seat_guest.hpp"
#include "stage5_parallel_algos/threadpool.hpp"

namespace wslab {
namespace {

using test::CallerRan;
using test::check_the_callers_slot;
using test::once_on_every_worker;
using test::Owned;
using test::Report;
using test::report_here;
using test::scaled;

// Slots are handed out by address.
static_assert(!std::is_copy_constructible_v<PerWorker<int>>);
static_assert(!std::is_move_constructible_v<PerWorker<int>>);

// ---- this_worker_index() ----

// ThreadPool: the index a worker reports is the one its start hook was given.
TEST(ThisWorkerIndexThreadPool, MatchesTheStartHooksIndex) {
  constexpr std::size_t kThreads = 3;
  std::vector<std::optional<std::size_t>> in_hook(kThreads);
  PoolOptions options;
  options.on_worker_start = [&](std::size_t i) { in_hook[i] = this_worker_index(); };
  ThreadPool pool(kThreads, options);
  EXPECT_FALSE(pool.this_worker_index());
  std::vector<Report> reports(kThreads);
  std::vector<std::optional<std::size_t>> members(kThreads);
  once_on_every_worker(pool.scheduler(), [&](std::size_t t) {
    reports[t] = report_here(pool.scheduler());
    members[t] = pool.this_worker_index();
  });
  for (std::size_t i = 0; i < kThreads; ++i)
    EXPECT_EQ(in_hook[i], std::optional<std::size_t>(i));
  for (std::size_t t = 0; t < kThreads; ++t) {
    ASSERT_TRUE(reports[t].index);
    EXPECT_EQ(members[t], reports[t].index);
    EXPECT_EQ(reports[t].any_index, reports[t].index);
  }
}

// ---- PerWorker<T> ----

// On the scheduler with its guest seat, the caller of parallel_for runs its first half seated: it
// counts as a worker then, but keeps its own slot rather than taking a worker's or the seat's.
TEST(PerWorkerGuest, ASeatedCallerKeepsItsOwnSlot) {
  Scheduler pool(3);
  for (int round = 0; round < 3; ++round) {
    test::wait_until_a_worker_sleeps(pool);  // the seat is lent only in a sleeper's place
    const CallerRan ran = check_the_callers_slot(pool);
    EXPECT_GT(ran.seated, 0u) << "the caller never ran a piece on the guest seat";
  }
}

// ---- ThreadPool and the types PerWorker accepts ----

TEST(PerWorkerThreadPool, ConstructsFromAThreadPool) {
  ThreadPool pool(3);
  const std::size_t n = scaled(50'000, 5'000);
  PerWorker<std::uint64_t> count(pool);
  // A move-only initializer, and a T that is not movable.
  PerWorker<std::vector<int>> lists(pool, [p = std::make_unique<int>(2)] {
    return std::vector<int>(static_cast<std::size_t>(*p), 0);
  });
  PerWorker<Owned> owned(pool);
  pool.parallel_for(std::size_t{0}, n, [&](std::size_t i) {
    count.local() += 1;
    lists.local()[i % 2] += 1;
    owned.local().uses += 1;
  });
  EXPECT_EQ(count.combine(std::plus<>{}), n);
  const std::vector<int> both = lists.combine([](std::vector<int> a, const std::vector<int>& b) {
    a[0] += b[0];
    a[1] += b[1];
    return a;
  });
  EXPECT_EQ(static_cast<std::size_t>(both[0] + both[1]), n);
  EXPECT_EQ(static_cast<std::size_t>(both[0]), (n + 1) / 2);
  std::uint64_t uses = 0;
  owned.for_each([&](const Owned& o) { uses += o.uses; });
  EXPECT_EQ(uses, n);
}

}  // namespace
}  // namespace wslab
