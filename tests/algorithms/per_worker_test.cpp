// this_worker_index() and PerWorker<T> on every registered pool, the five stages and the lab
// variants: distinct indices in range on the workers and none elsewhere (the stage-5 guest seat
// and an orphaned worker included); exact per-thread counts combined, slots that no two threads
// ever share, the calling thread's own slot, initializers, clear(), and a PerWorker outliving its
// pool. ThreadPool's own indices and slots, and a caller seated on the scheduler's guest seat,
// are stage5_parallel_algos/tests/per_worker_test.cpp.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/config.hpp"
#include "registry/pools.hpp"
#include "stage5_parallel_algos/algorithms/parallel_for.hpp"
#include "stage5_parallel_algos/algorithms/per_worker.hpp"
#include "stage5_parallel_algos/scheduler/scheduler.hpp"
#include "stage5_parallel_algos/tests/algos_test_util.hpp"
#include "stage5_parallel_algos/tests/per_worker_checks.hpp"
#include "stage5_parallel_algos/tests/seat_guest.hpp"
#include "tests/on_every_pool.hpp"

namespace wslab {
namespace {

using test::check_the_callers_slot;
using test::eventually;
using test::once_on_every_worker;
using test::Owned;
using test::Report;
using test::report_here;
using test::scaled;
using test::TestFailure;

std::vector<std::string> every_registered_pool() {
  return test::all_pool_and_variant_names();
}

std::string test_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string s = info.param;
  for (char& c : s)
    if (c == ':') c = '_';  // not allowed in a test name
  return s;
}

class OnEveryRegisteredPool : public ::testing::TestWithParam<std::string> {
 protected:
  std::unique_ptr<IThreadPool> make(std::size_t threads) const {
    return make_pool(GetParam(), threads);
  }
};
class ThisWorkerIndex : public OnEveryRegisteredPool {};
class PerWorkerSlots : public OnEveryRegisteredPool {};

// ---- this_worker_index() ----

TEST_P(ThisWorkerIndex, EachWorkerReportsADistinctIndexInRange) {
  for (std::size_t threads : {1u, 2u, 4u}) {
    auto pool = make(threads);
    std::vector<Report> reports(threads);
    once_on_every_worker(*pool, [&](std::size_t t) { reports[t] = report_here(*pool); });
    std::set<std::size_t> indices;
    std::set<std::thread::id> workers;
    for (const Report& r : reports) {
      ASSERT_TRUE(r.index.has_value()) << threads << " threads";
      EXPECT_LT(*r.index, threads);
      EXPECT_EQ(r.any_index, r.index);
      EXPECT_TRUE(r.owns);
      indices.insert(*r.index);
      workers.insert(r.thread);
    }
    EXPECT_EQ(workers.size(), threads);
    EXPECT_EQ(indices.size(), threads) << "two workers reported the same index";
  }
}

// Pieces of parallel_for called from outside run on the workers and on the calling thread (as a
// stage-5 guest, on the guest seat): a worker always reports the same index, only the caller
// reports none. Called from inside a task, every piece runs on a worker.
TEST_P(ThisWorkerIndex, TasksReportOnlyValidIndicesAndTheCallerNone) {
  constexpr std::size_t kThreads = 3;
  auto pool = make(kThreads);
  const std::size_t n = scaled(20'000, 2'000);
  for (bool from_a_task : {false, true}) {
    std::vector<Report> reports(n);
    std::thread::id caller;
    auto loop = [&] {
      caller = std::this_thread::get_id();
      parallel_for(
          *pool, std::size_t{0}, n, [&](std::size_t i) { reports[i] = report_here(*pool); }, 1);
    };
    if (from_a_task) {
      pool->submit(loop);
      pool->wait_idle();
    } else {
      loop();
    }
    std::map<std::size_t, std::thread::id> thread_of_index;
    std::map<std::thread::id, std::size_t> index_of_thread;
    for (std::size_t i = 0; i < n; ++i) {
      const Report& r = reports[i];
      ASSERT_EQ(r.index, r.any_index) << "at " << i;
      if (!r.index) {
        ASSERT_FALSE(from_a_task) << "a piece ran off the workers, at " << i;
        ASSERT_EQ(r.thread, caller) << "a thread other than the caller reports no index, at " << i;
        continue;
      }
      ASSERT_LT(*r.index, kThreads) << "at " << i;
      ASSERT_TRUE(r.owns) << "at " << i;
      const auto [t, new_index] = thread_of_index.emplace(*r.index, r.thread);
      ASSERT_EQ(t->second, r.thread) << "index " << *r.index << " reported by two threads";
      const auto [x, new_thread] = index_of_thread.emplace(r.thread, *r.index);
      ASSERT_EQ(x->second, *r.index) << "a thread reported two indices";
      if (!from_a_task) {
        ASSERT_NE(r.thread, caller) << "the caller reported an index, at " << i;
      }
    }
  }
}

TEST_P(ThisWorkerIndex, NonWorkersAndWorkersOfAnotherPoolGetNone) {
  auto pool = make(2);
  auto other = make(2);
  EXPECT_FALSE(this_worker_index());
  EXPECT_FALSE(this_worker_index(*pool));
  std::optional<std::size_t> on_a_thread = 0, on_a_thread_any = 0;
  std::thread([&] {
    on_a_thread = this_worker_index(*pool);
    on_a_thread_any = this_worker_index();
  }).join();
  EXPECT_FALSE(on_a_thread);
  EXPECT_FALSE(on_a_thread_any);
  // A worker of `other` is a worker, but not one of `pool`'s.
  std::vector<Report> seen(2);
  std::vector<std::optional<std::size_t>> as_pools(2, 0);
  once_on_every_worker(*other, [&](std::size_t t) {
    seen[t] = report_here(*other);
    as_pools[t] = this_worker_index(*pool);
  });
  for (std::size_t t = 0; t < 2; ++t) {
    EXPECT_FALSE(as_pools[t]);
    ASSERT_TRUE(seen[t].any_index);
    EXPECT_EQ(seen[t].any_index, seen[t].index);
  }
}

// A worker whose pool is destroyed by its own task belongs to no pool from then on.
TEST_P(ThisWorkerIndex, AWorkerWhoseTaskDestroysItsPoolReportsNoneAfterwards) {
  ::testing::internal::CaptureStderr();  // the pool's diagnostic about how it was destroyed
  IThreadPool* pool = make(2).release();
  struct Seen {
    std::optional<std::size_t> before, before_any, after_any;
    std::atomic<bool> submitted{false}, done{false};
    bool waited = false;
  };
  auto seen = std::make_shared<Seen>();
  pool->submit([pool, seen] {
    seen->before = this_worker_index(*pool);
    seen->before_any = this_worker_index();
    // submit() may still be touching the pool on the test thread: let it return first.
    seen->waited = eventually([&] { return seen->submitted.load(); });
    delete pool;  // this worker is detached and orphaned
    seen->after_any = this_worker_index();
    seen->done.store(true, std::memory_order_release);
  });
  seen->submitted = true;
  const bool finished = eventually([&] { return seen->done.load(std::memory_order_acquire); });
  ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(finished);
  ASSERT_TRUE(seen->waited);
  ASSERT_TRUE(seen->before.has_value());
  EXPECT_EQ(seen->before_any, seen->before);
  EXPECT_FALSE(seen->after_any);
}

// A thread seated on the stage-5 guest seat counts as one of the pool's workers but has no
// index; a worker of another pool seated there gets its own index back when it leaves.
TEST(ThisWorkerIndexGuest, ASeatedGuestReportsNoIndexAndGetsItsOwnBack) {
  Scheduler pool(2);
  {
    Scheduler::GuestSeat seat = test::seat_once_a_worker_sleeps(pool);
    ASSERT_TRUE(seat);
    EXPECT_TRUE(pool.owns_current_thread());
    EXPECT_FALSE(this_worker_index(pool));
    EXPECT_FALSE(this_worker_index());
  }
  EXPECT_FALSE(pool.owns_current_thread());
  for (const std::string& name : every_registered_pool()) {
    auto other = make_pool(name, 2);
    std::vector<Report> before(2), seated(2), after(2);
    std::vector<char> got_seat(2, 0);
    std::atomic<int> seats_in_use{0};
    std::atomic<bool> overlap{false};
    test::wait_until_a_worker_sleeps(pool);  // the seat is lent only in a sleeper's place
    once_on_every_worker(*other, [&](std::size_t t) {
      before[t] = report_here(*other);
      // Two workers may race for the one seat: the loser just keeps its role.
      if (Scheduler::GuestSeat seat = Scheduler::ForkJoinHandle(pool).try_seat_guest()) {
        if (seats_in_use.fetch_add(1) != 0) overlap = true;
        got_seat[t] = 1;
        seated[t] = report_here(pool);
        seats_in_use.fetch_sub(1);
      }
      after[t] = report_here(*other);
    });
    EXPECT_FALSE(overlap.load()) << name;
    int seated_count = 0;
    for (std::size_t t = 0; t < 2; ++t) {
      ASSERT_TRUE(before[t].index) << name;
      EXPECT_EQ(after[t].index, before[t].index) << name;
      EXPECT_EQ(after[t].any_index, before[t].index) << name;
      if (!got_seat[t]) continue;
      ++seated_count;
      EXPECT_TRUE(seated[t].owns) << name;
      EXPECT_FALSE(seated[t].index) << name;
      EXPECT_FALSE(seated[t].any_index) << name;
    }
    EXPECT_GE(seated_count, 1) << name << ": the seat was free, so somebody must have taken it";
  }
}

// ---- PerWorker<T> ----

TEST_P(PerWorkerSlots, LocalIncrementsCombineToExactlyN) {
  const std::size_t n = scaled(200'000, 20'000);
  for (std::size_t threads : {1u, 3u}) {
    auto pool = make(threads);
    for (std::size_t grain : {0u, 1u, 100u}) {
      PerWorker<std::uint64_t> count(*pool);
      parallel_for(*pool, std::size_t{0}, n, [&](std::size_t) { count.local() += 1; }, grain);
      EXPECT_EQ(count.combine(std::plus<>{}), n) << threads << " threads, grain " << grain;
      // The same from inside a task: a worker calls parallel_for.
      PerWorker<std::uint64_t> nested(*pool);
      pool->submit([&] {
        parallel_for(*pool, std::size_t{0}, n, [&](std::size_t) { nested.local() += 1; }, grain);
      });
      pool->wait_idle();
      EXPECT_EQ(nested.combine(std::plus<>{}), n) << threads << " threads, grain " << grain;
    }
  }
}

// Uses a slot as its owner would, counting what shows that another thread has it too.
struct SlotChecks {
  std::atomic<std::size_t> overlaps{0};  // two threads in one slot at once
  std::atomic<std::size_t> foreign{0};   // a slot used by a second thread, at any time

  void use(Owned& s, std::uint64_t salt) {
    const std::thread::id me = std::this_thread::get_id();
    if (s.inside.fetch_add(1, std::memory_order_acq_rel) != 0) overlaps.fetch_add(1);
    std::thread::id expected{};
    if (!s.owner.compare_exchange_strong(expected, me) && expected != me) foreign.fetch_add(1);
    ++s.uses;
    for (std::uint64_t k = 0; k < 16; ++k)
      s.scribble = s.scribble * 31 + salt + k;
    s.inside.fetch_sub(1, std::memory_order_acq_rel);
  }
  void expect_none() const {
    EXPECT_EQ(overlaps.load(), 0u) << "two threads were in one slot at once";
    EXPECT_EQ(foreign.load(), 0u) << "a slot was used by a second thread";
  }
};

// No two threads ever get the same slot: not at once (inside), not one after the other (owner).
// Every thread that ran a piece has exactly one slot, and the slots sit on distinct cache lines.
TEST_P(PerWorkerSlots, NoTwoThreadsEverShareASlot) {
  constexpr std::size_t kThreads = 3;
  auto pool = make(kThreads);
  const std::size_t n = scaled(100'000, 10'000);
  std::atomic<std::size_t> inits{0};
  PerWorker<Owned> slots(*pool, [&inits] {
    inits.fetch_add(1);
    return Owned{};
  });
  std::vector<std::thread::id> ran_on(n);
  SlotChecks checks;
  parallel_for(
      *pool, std::size_t{0}, n,
      [&](std::size_t i) {
        ran_on[i] = std::this_thread::get_id();
        checks.use(slots.local(), i);
      },
      1);
  checks.expect_none();
  const std::set<std::thread::id> threads_that_ran(ran_on.begin(), ran_on.end());
  std::set<std::thread::id> owners;
  std::set<std::uintptr_t> addresses;
  std::size_t visited = 0;
  std::uint64_t uses = 0;
  slots.for_each([&](Owned& s) {
    ++visited;
    uses += s.uses;
    owners.insert(s.owner.load());
    const auto address = reinterpret_cast<std::uintptr_t>(&s);
    EXPECT_EQ(address % kCacheLineSize, 0u) << "a slot that does not start a cache line";
    addresses.insert(address);
  });
  EXPECT_EQ(uses, n);
  EXPECT_EQ(visited, threads_that_ran.size()) << "one slot per thread that called local()";
  EXPECT_EQ(owners, threads_that_ran);
  EXPECT_EQ(addresses.size(), visited);
  EXPECT_EQ(inits.load(), visited) << "the initializer runs once per slot";
}

// Each worker's slot is its own: with one task on every worker at once, thread_count() slots.
TEST_P(PerWorkerSlots, EveryWorkerGetsItsOwnSlot) {
  constexpr std::size_t kThreads = 4;
  auto pool = make(kThreads);
  PerWorker<std::uint64_t> slots(*pool);
  std::vector<std::uint64_t*> got(kThreads);
  once_on_every_worker(*pool, [&](std::size_t t) {
    got[t] = &slots.local();
    *got[t] += t + 1;
    EXPECT_EQ(&slots.local(), got[t]) << "a thread's slot moved";
  });
  EXPECT_EQ(std::set<std::uint64_t*>(got.begin(), got.end()).size(), kThreads);
  std::size_t visited = 0;
  std::as_const(slots).for_each([&](const std::uint64_t&) { ++visited; });
  EXPECT_EQ(visited, kThreads);
  EXPECT_EQ(slots.combine(std::plus<>{}), kThreads * (kThreads + 1) / 2);
}

TEST_P(PerWorkerSlots, TheCallingThreadKeepsOneSlotThroughout) {
  auto pool = make(3);
  check_the_callers_slot(*pool);
}

// Threads that are not the pool's workers each get a slot of their own: every worker of another
// pool at once, plain threads all at once, and another pool's parallel_for.
TEST_P(PerWorkerSlots, OtherThreadsGetSlotsOfTheirOwn) {
  auto pool = make(2);
  auto other = make(3);
  PerWorker<Owned> slots(*pool);
  SlotChecks checks;
  std::vector<Owned*> got(3);
  once_on_every_worker(*other, [&](std::size_t t) {
    got[t] = &slots.local();
    checks.use(*got[t], t);
  });
  EXPECT_EQ(std::set<Owned*>(got.begin(), got.end()).size(), 3u);
  constexpr std::size_t kPlainThreads = 4;
  const std::size_t rounds = scaled(20'000, 2'000);
  std::atomic<std::size_t> ready{0};
  std::vector<std::thread> plain;
  for (std::size_t t = 0; t < kPlainThreads; ++t) {
    plain.emplace_back([&, t] {
      ready.fetch_add(1);
      while (ready.load() < kPlainThreads)  // start together, so their first calls race
        std::this_thread::yield();
      for (std::size_t r = 0; r < rounds; ++r)
        checks.use(slots.local(), t * rounds + r);
    });
  }
  for (std::thread& t : plain)
    t.join();
  checks.expect_none();
  std::size_t visited = 0;
  std::uint64_t uses = 0;
  slots.for_each([&](const Owned& s) {
    ++visited;
    uses += s.uses;
  });
  EXPECT_EQ(visited, 3 + kPlainThreads);
  EXPECT_EQ(uses, 3 + kPlainThreads * rounds);

  const std::size_t n = scaled(50'000, 5'000);
  PerWorker<std::uint64_t> count(*pool);
  std::vector<std::thread::id> ran_on(n);
  parallel_for(
      *other, std::size_t{0}, n,
      [&](std::size_t i) {
        ran_on[i] = std::this_thread::get_id();
        count.local() += 1;
      },
      1);
  visited = 0;
  count.for_each([&](std::uint64_t&) { ++visited; });
  EXPECT_EQ(visited, std::set<std::thread::id>(ran_on.begin(), ran_on.end()).size());
  EXPECT_EQ(count.combine(std::plus<>{}), n);
}

TEST_P(PerWorkerSlots, ClearEmptiesTheSlotsAndTheyStartAfresh) {
  auto pool = make(3);
  const std::size_t n = scaled(20'000, 2'000);
  std::atomic<std::size_t> inits{0};
  PerWorker<std::uint64_t> count(*pool, [&inits] {
    inits.fetch_add(1);
    return std::uint64_t{7};
  });
  EXPECT_EQ(count.combine(std::plus<>{}), 7u) << "no slot: what a first local() would make";
  inits = 0;
  for (int round = 0; round < 3; ++round) {
    parallel_for(*pool, std::size_t{0}, n, [&](std::size_t) { count.local() += 1; });
    std::size_t visited = 0;
    count.for_each([&](std::uint64_t&) { ++visited; });
    EXPECT_EQ(visited, inits.load());
    EXPECT_EQ(count.combine(std::plus<>{}), n + 7 * visited) << "round " << round;
    count.clear();
    visited = 0;
    count.for_each([&](std::uint64_t&) { ++visited; });
    EXPECT_EQ(visited, 0u);
    inits = 0;
  }
}

// A throwing initializer leaves the slot unused; the next local() tries again.
TEST_P(PerWorkerSlots, AThrowingInitializerLeavesTheSlotUnused) {
  auto pool = make(2);
  std::atomic<bool> fail{true};
  PerWorker<int> slots(*pool, [&fail] {
    if (fail.load()) throw TestFailure("initializer");
    return 5;
  });
  EXPECT_THROW(slots.local(), TestFailure);  // this thread's first call
  std::atomic<int> worker_throws{0};
  std::atomic<int> worker_value{0};
  pool->submit([&] {
    try {
      slots.local();
    } catch (const TestFailure&) {
      worker_throws.fetch_add(1);
    }
  });
  pool->wait_idle();
  EXPECT_EQ(worker_throws.load(), 1);
  std::size_t visited = 0;
  slots.for_each([&](int&) { ++visited; });
  EXPECT_EQ(visited, 0u);
  fail = false;
  EXPECT_EQ(slots.local(), 5);
  pool->submit([&] { worker_value = slots.local(); });
  pool->wait_idle();
  EXPECT_EQ(worker_value.load(), 5);
  slots.for_each([&](int&) { ++visited; });
  EXPECT_EQ(visited, 2u);
}

// PerWorker never touches the pool after construction: it may outlive it.
TEST_P(PerWorkerSlots, OutlivesItsPool) {
  const std::size_t n = scaled(20'000, 2'000);
  auto pool = make(2);
  auto count = std::make_unique<PerWorker<std::uint64_t>>(*pool);
  parallel_for(*pool, std::size_t{0}, n, [&](std::size_t) { count->local() += 1; });
  pool.reset();
  count->local() += 5;
  EXPECT_EQ(count->combine(std::plus<>{}), n + 5);
  // A new pool, possibly at the old one's address: its workers still get distinct slots.
  pool = make(2);
  std::vector<std::uint64_t*> got(2);
  once_on_every_worker(*pool, [&](std::size_t t) { got[t] = &count->local(); });
  EXPECT_NE(got[0], got[1]);
}

INSTANTIATE_TEST_SUITE_P(Registered, ThisWorkerIndex, ::testing::ValuesIn(every_registered_pool()),
                         test_name);
INSTANTIATE_TEST_SUITE_P(Registered, PerWorkerSlots, ::testing::ValuesIn(every_registered_pool()),
                         test_name);

}  // namespace
}  // namespace wslab
