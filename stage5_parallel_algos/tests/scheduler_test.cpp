// The production scheduler beyond the conformance suite: the worker's own queue as fork-join
// uses it (through the scheduler's fork-join handle, with a stack job), the guest seat, and its
// knobs.
#include "stage5_parallel_algos/scheduler/scheduler.hpp"

#include "stage5_parallel_algos/coro/co_join.hpp"
#include "stage5_parallel_algos/coro/co_task.hpp"
#include "stage5_parallel_algos/coro/sync_wait.hpp"
#include "stage5_parallel_algos/fork_join/join.hpp"
#include "stage5_parallel_algos/fork_join/task_group.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

#include "common/config.hpp"
#include "stage5_parallel_algos/tests/idle_pool.hpp"
#include "stage5_parallel_algos/tests/seat_guest.hpp"

namespace {

using wslab::Scheduler;
using wslab::SchedulerKnobs;
using wslab::test::wait_for_parks;

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

// ---- the worker's own queue, as fork-join uses it ----

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

// The calling worker's own queue, as fork-join reaches it: through the scheduler's handle. Empty
// on a thread that does not work for the pool.
std::optional<Scheduler::LocalQueue> local_queue(Scheduler& pool) {
  return Scheduler::ForkJoinHandle(pool).with_worker_queue(
      [](Scheduler::LocalQueue queue) { return std::optional<Scheduler::LocalQueue>(queue); },
      [] { return std::optional<Scheduler::LocalQueue>(); });
}

// join(a, b) as stage 5 writes it: push b, run a, then pop b back or wait for its thief.
void join_like(Scheduler& pool, std::atomic<int>& a_count, std::atomic<int>& b_count,
               int& inline_runs) {
  std::optional<Scheduler::LocalQueue> local = local_queue(pool);
  ASSERT_TRUE(local);
  FlagJob b(&b_count);
  const auto place = local->push(b);
  a_count.fetch_add(1);
  for (;;) {
    wslab::Job* popped = local->pop(place, b);
    if (popped == &b) {
      b.execute();
      ++inline_runs;
      return;
    }
    if (popped == nullptr) break;  // b was stolen
    local->run(popped);            // something pushed after b (none here, but that is the rule)
  }
  while (!b.done.load(std::memory_order_acquire)) {
    if (!pool.try_run_one()) std::this_thread::yield();
  }
  local->release_stolen(place);
}

// On the split deque (the default), and on the Chase-Lev deque (the step switched off).
class SchedulerLocalQueueBoth : public testing::TestWithParam<std::uint32_t> {};
INSTANTIATE_TEST_SUITE_P(SplitDequeSlots, SchedulerLocalQueueBoth, testing::Values(8192u, 0u));

TEST_P(SchedulerLocalQueueBoth, StackJobsRunExactlyOnceInlineOrStolen) {
  Scheduler pool(2, {}, wslab::SchedulerKnobs{.split_deque = GetParam()});
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

TEST(SchedulerLocalQueue, OffPoolThreadsGetNoQueue) {
  Scheduler pool(1);
  EXPECT_FALSE(local_queue(pool));
  std::atomic<int> on_worker{0};
  pool.submit([&] { on_worker = local_queue(pool) ? 1 : 0; });
  pool.wait_idle();
  EXPECT_EQ(on_worker.load(), 1);
}

// On the pool's only worker: pushes a fork's job, checks it went to `expected`, submits a task,
// then hands the queue, the job and its place to `take_back`, which must pop the job (and may run
// what comes out first) and says whether the order was right. Both the job and the task run once.
template <class TakeBack>
void fork_then_submit(Scheduler& pool, Scheduler::LocalQueue::Place expected, TakeBack take_back) {
  std::atomic<int> task_ran{0};
  std::atomic<int> job_ran{0};
  std::atomic<bool> ok{false};
  pool.submit([&] {
    Scheduler::LocalQueue local = *local_queue(pool);
    FlagJob job(&job_ran);
    const auto place = local.push(job);
    if (place != expected) return;
    pool.submit([&] { task_ran.fetch_add(1); });
    ok.store(take_back(local, job, place, task_ran));
  });
  pool.wait_idle();
  EXPECT_TRUE(ok.load());
  EXPECT_EQ(task_ran.load(), 1);
  EXPECT_EQ(job_ran.load(), 1);
}

TEST(SchedulerLocalQueue, ChaseLevPopReturnsTasksSubmittedAfterTheJob) {
  Scheduler pool(1, {}, wslab::SchedulerKnobs{.split_deque = 0});
  fork_then_submit(pool, Scheduler::LocalQueue::Place::chase_lev,
                   [](Scheduler::LocalQueue& local, FlagJob& job, auto place, auto&) {
                     wslab::Job* first = local.pop(place, job);
                     if (first == nullptr || first == &job) return false;  // the task first (LIFO)
                     local.run(first);
                     if (local.pop(place, job) != &job) return false;
                     job.execute();
                     return true;
                   });
}

// Forks and tasks on separate deques: a task submitted after a fork does not cover it, and runs
// after the task that forked.
TEST(SchedulerLocalQueue, SplitDequePopIgnoresTasksSubmittedAfterTheJob) {
  Scheduler pool(1);
  fork_then_submit(
      pool, Scheduler::LocalQueue::Place::split_deque,
      [](Scheduler::LocalQueue& local, FlagJob& job, auto place, std::atomic<int>& task_ran) {
        if (local.pop(place, job) != &job) return false;
        job.execute();
        return task_ran.load() == 0;
      });
}

// thief_waiting() is what stage 5's running leaves ask before they split: "somebody searches and
// my deque has nothing to give". With one worker nobody else can search, so the task plays the
// searcher itself and every answer is determined.
TEST(SchedulerLocalQueue, ThiefWaitingMeansASearcherAndAnEmptyDeque) {
  Scheduler pool(1);
  std::vector<int> answers;
  std::atomic<int> job_ran{0};
  pool.submit([&] {
    Scheduler::LocalQueue local = *local_queue(pool);
    answers.push_back(local.thief_waiting());  // nobody searches
    local.begin_search();
    answers.push_back(local.thief_waiting());  // a searcher, an empty deque
    FlagJob job(&job_ran);
    const auto place = local.push(job);
    answers.push_back(local.thief_waiting());  // a searcher, but a job it can steal
    if (local.pop(place, job) == &job) job.execute();
    answers.push_back(local.thief_waiting());
    local.end_search();
    answers.push_back(local.thief_waiting());
  });
  pool.wait_idle();
  EXPECT_EQ(answers, (std::vector<int>{0, 1, 0, 1, 0}));
  EXPECT_EQ(job_ran.load(), 1);
}

// ---- The guest seat (README.md, step 'Guest seat') ----

TEST(SchedulerGuest, OneGuestAtATimeAndOnlyFromOutside) {
  Scheduler pool(2);
  EXPECT_FALSE(pool.owns_current_thread());
  {
    Scheduler::GuestSeat seat = wslab::test::seat_once_a_worker_sleeps(pool);
    ASSERT_TRUE(seat);
    EXPECT_TRUE(pool.owns_current_thread());  // seated, the caller counts as a worker
    EXPECT_TRUE(local_queue(pool));
    bool other_got_it = true;
    std::thread([&] {
      other_got_it = static_cast<bool>(Scheduler::ForkJoinHandle(pool).try_seat_guest());
    }).join();
    EXPECT_FALSE(other_got_it);
    EXPECT_FALSE(
        Scheduler::ForkJoinHandle(pool).try_seat_guest());  // not twice on one thread either
  }
  EXPECT_FALSE(pool.owns_current_thread());
  EXPECT_FALSE(local_queue(pool));
  // From a worker: no seat (it already has one).
  std::atomic<int> seated_from_worker{-1};
  pool.submit([&] {
    seated_from_worker =
        static_cast<bool>(Scheduler::ForkJoinHandle(pool).try_seat_guest()) ? 1 : 0;
  });
  pool.wait_idle();
  EXPECT_EQ(seated_from_worker.load(), 0);
  EXPECT_TRUE(wslab::test::seat_once_a_worker_sleeps(pool));  // free again
}

TEST(SchedulerGuest, TasksSpawnedOnTheSeatAllRunAndAreCounted) {
  Scheduler pool(2);
  constexpr int kTasks = 10'000;
  std::atomic<int> ran{0};
  const std::uint64_t before = pool.stats().tasks_executed();
  {
    Scheduler::GuestSeat seat = wslab::test::seat_once_a_worker_sleeps(pool);
    ASSERT_TRUE(seat);
    for (int i = 0; i < kTasks; ++i)
      pool.spawn([&] { ran.fetch_add(1); });  // onto the seat's deque; workers steal some
  }  // leaving runs what is left on the seat's deque
  pool.wait_idle();
  EXPECT_EQ(ran.load(), kTasks);
  EXPECT_EQ(pool.stats().tasks_executed() - before, static_cast<std::uint64_t>(kTasks));
}

TEST(SchedulerGuest, AWorkerStillInItsRescanLeavesTheGuestsWorkToTheGuest) {
  // One worker. A guest sits down as soon as the worker counts as a sleeper, which it does from
  // announce() on, before its re-scan (behind a membarrier): the guest's first push can lie in
  // the re-scan's way. The lent worker must leave it to the guest, or it computes beside the
  // guest (two CPUs for one worker), call after call. Each round wakes the worker with a task and
  // seats the guest the moment the worker announces; the guest's task then runs on the guest,
  // when it leaves. Without the re-scan's check (Scheduler::rescan_skips_guest()) the worker
  // takes the task in most rounds that seat the guest before the worker parks.
  Scheduler pool(1);
  const int rounds = wslab::kSanitized ? 50 : 300;
  const std::thread::id guest = std::this_thread::get_id();
  int taken = 0;      // rounds whose task the worker ran
  int in_window = 0;  // rounds that seated the guest before the worker parked
  for (int r = 0; r < rounds; ++r) {
    const std::uint64_t parks = pool.stats().total().parks;
    std::atomic<bool> woke{false};
    pool.submit([&] { woke.store(true); });
    while (!woke.load())
      std::this_thread::yield();
    std::atomic<bool> ran{false}, ran_elsewhere{false};
    {
      Scheduler::GuestSeat seat = wslab::test::seat_once_a_worker_sleeps(pool);
      ASSERT_TRUE(seat);
      pool.spawn([&] {
        ran_elsewhere.store(std::this_thread::get_id() != guest);
        ran.store(true);
      });
      if (pool.stats().total().parks == parks) ++in_window;
      // The worker's re-scan decides: it parks (and bumps its count first), or takes the task.
      while (!ran.load() && pool.stats().total().parks == parks)
        std::this_thread::yield();
    }  // leaving runs the task if it is still on the seat's deque
    ASSERT_TRUE(ran.load());
    if (ran_elsewhere.load()) ++taken;
  }
  EXPECT_EQ(taken, 0) << "the lent worker took the guest's task in " << taken << " of " << in_window
                      << " rounds that seated the guest during its re-scan";
}

TEST(SchedulerGuest, AWakeUpSkippedForTheLoanIsPaidWhenTheGuestLeaves) {
  // One worker, parked; the guest borrows it. A submission from a third thread then finds nobody
  // to wake (the only sleeper is lent) and leaves a note. When the guest leaves, it must see the
  // note and the queued task and wake the worker; otherwise wait_idle() hangs (ctest timeout).
  SchedulerKnobs knobs;
  knobs.spin_rounds = 0;
  Scheduler pool(1, {}, knobs);
  const int rounds = wslab::kSanitized ? 50 : 300;
  for (int r = 0; r < rounds; ++r) {
    wait_for_parks(pool, static_cast<std::uint64_t>(r) + 1);
    std::atomic<bool> ran{false};
    {
      Scheduler::GuestSeat seat = Scheduler::ForkJoinHandle(pool).try_seat_guest();
      ASSERT_TRUE(seat);
      std::thread([&] { pool.submit([&] { ran.store(true); }); }).join();
    }
    pool.wait_idle();
    ASSERT_TRUE(ran.load());
  }
}

TEST(SchedulerGuest, ABlockedTaskGetsItsPartnerWhenTheGuestLeaves) {
  // Two workers, both parked; the guest borrows one. Task A (submitted from outside, run by the
  // other worker) pushes B onto its own deque and spins until B has run: only the lent worker
  // can run B once the guest has left, and B's push skipped its wake-up because of the loan.
  SchedulerKnobs knobs;
  knobs.spin_rounds = 0;
  Scheduler pool(2, {}, knobs);
  const int rounds = wslab::kSanitized ? 30 : 200;
  for (int r = 0; r < rounds; ++r) {
    wait_for_parks(pool, 2 * (static_cast<std::uint64_t>(r) + 1));
    std::atomic<bool> a_started{false};
    std::atomic<bool> b_ran{false};
    {
      Scheduler::GuestSeat seat = Scheduler::ForkJoinHandle(pool).try_seat_guest();
      ASSERT_TRUE(seat);
      std::thread([&] {
        pool.submit([&] {
          a_started.store(true);
          pool.submit([&] { b_ran.store(true, std::memory_order_release); });
          while (!b_ran.load(std::memory_order_acquire))
            std::this_thread::yield();
        });
      }).join();
      while (!a_started.load())
        std::this_thread::yield();
    }
    pool.wait_idle();
    ASSERT_TRUE(b_ran.load());
  }
}

TEST(SchedulerGuest, AWorkerOfAnotherPoolIsSeatedAndGetsItsIdentityBack) {
  Scheduler outer(1);
  Scheduler inner(2);
  std::atomic<int> checks{0};
  outer.submit([&] {
    {
      Scheduler::GuestSeat seat = wslab::test::seat_once_a_worker_sleeps(inner);
      if (seat && inner.owns_current_thread() && !outer.owns_current_thread()) checks.fetch_add(1);
    }
    if (outer.owns_current_thread() && !inner.owns_current_thread()) checks.fetch_add(1);
  });
  outer.wait_idle();
  EXPECT_EQ(checks.load(), 2);
}

TEST(SchedulerGuest, StampedeOfGuestsAndSubmittersWhileWorkersParkLosesNothing) {
  // Three outside threads take the seat when they can (spawning onto it) and submit through the
  // injector when they cannot; a fourth only submits. With no spin budget the workers park
  // whenever they run dry, so loans are taken (from a sleeper, or refused when none sleeps),
  // revoked by a cancelled park, left pending, claimed and returned in every order. Invariant:
  // every task ran exactly once (the counter and the pool's own count agree), and the pool goes
  // idle (a lost wake-up would hang wait_idle()).
  for (std::uint32_t spin : {0u, 2u}) {
    SchedulerKnobs knobs;
    knobs.spin_rounds = spin;
    Scheduler pool(2, {}, knobs);
    const int rounds = wslab::kSanitized ? 100 : 1000;
    constexpr int kBurst = 8;
    std::atomic<std::int64_t> ran{0};
    std::atomic<int> seated_rounds{0};
    const std::uint64_t before = pool.stats().tasks_executed();
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&, t] {
        for (int r = 0; r < rounds; ++r) {
          // Thread 0's first round waits for a sleeper (the others' rounds end, the workers
          // park), so at least one round is seated however the threads are scheduled.
          const auto take_seat = [&] {
            if (t == 0 && r == 0) return wslab::test::seat_once_a_worker_sleeps(pool);
            if (t < 3) return Scheduler::ForkJoinHandle(pool).try_seat_guest();
            return Scheduler::GuestSeat{};
          };
          Scheduler::GuestSeat seat = take_seat();
          if (seat) seated_rounds.fetch_add(1);
          for (int i = 0; i < kBurst; ++i)
            pool.spawn([&ran] { ran.fetch_add(1); });
        }
      });
    }
    for (std::thread& th : threads)
      th.join();
    pool.wait_idle();
    const std::int64_t expected = 4LL * rounds * kBurst;
    EXPECT_EQ(ran.load(), expected);
    EXPECT_EQ(pool.stats().tasks_executed() - before, static_cast<std::uint64_t>(expected));
    EXPECT_GT(seated_rounds.load(), 0);
  }
}

// ---- the thread's context (README.md, step 'A context for every thread') ----

// this_thread_worker is never null: kNoWorker off the workers, so that a lookup compares the pool
// without testing the pointer. Every way a thread stops working for a pool must put kNoWorker
// back, not nullptr (a later lookup would read through it): leaving the guest seat, and a worker
// that destroyed its pool from its own task, which lives on, detached, until the task returns.
TEST(SchedulerWorkerContext, EveryThreadHasOneAndOnlyItsOwnPoolMatches) {
  using wslab::sched::kNoWorker;
  using wslab::sched::this_thread_worker;
  using wslab::sched::worker_context_of;
  Scheduler pool(1);
  Scheduler other(1);
  EXPECT_EQ(this_thread_worker, &kNoWorker);
  EXPECT_EQ(worker_context_of(pool), nullptr);
  EXPECT_FALSE(wslab::sched::on_some_worker());
  std::thread([&] {
    EXPECT_EQ(this_thread_worker, &kNoWorker);
    EXPECT_EQ(worker_context_of(pool), nullptr);
  }).join();

  std::atomic<int> checks{0};
  pool.submit([&] {
    if (worker_context_of(pool) == this_thread_worker && worker_context_of(other) == nullptr &&
        wslab::sched::on_some_worker()) {
      checks.fetch_add(1);
    }
  });
  pool.wait_idle();
  EXPECT_EQ(checks.load(), 1);

  {
    Scheduler::GuestSeat seat = wslab::test::seat_once_a_worker_sleeps(pool);
    ASSERT_TRUE(seat);
    EXPECT_NE(worker_context_of(pool), nullptr);
  }
  EXPECT_EQ(this_thread_worker, &kNoWorker);

  // A worker that destroys its pool: afterwards its thread works for no pool, and a join on
  // another pool from there takes the general path.
  auto* doomed = new Scheduler(1);
  std::atomic<bool> kept_no_worker{false};
  std::atomic<long> joined{0};
  std::atomic<bool> done{false};
  doomed->submit([&, doomed] {
    delete doomed;
    kept_no_worker = this_thread_worker == &kNoWorker && worker_context_of(other) == nullptr;
    auto [a, b] = wslab::join(other, [] { return 20L; }, [] { return 22L; });
    joined = a + b;
    done = true;
  });
  while (!done.load())
    std::this_thread::yield();
  EXPECT_TRUE(kept_no_worker.load());
  EXPECT_EQ(joined.load(), 42);
}

TEST(SchedulerGuestDeathTest, DestroyingThePoolFromATaskTheGuestRunsAbortsWithAMessage) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        SchedulerKnobs knobs;
        knobs.spin_rounds = 0;
        auto* pool = new Scheduler(1, {}, knobs);
        wait_for_parks(*pool, 1);  // the only worker sleeps: the seat borrows it
        Scheduler::GuestSeat seat = Scheduler::ForkJoinHandle(*pool).try_seat_guest();
        pool->spawn([pool] { delete pool; });  // nobody to wake: it waits on the seat's deque
      },                                       // leaving the seat runs it here
      "destroyed from a task run by a guest");
}

// ---- the pool's counters ----

// A worker's local pops are derived (what it ran, less what it took from the injector or stole).
// A thief's batch counts every job it takes; when the waiting owner steals some of them back, the
// thief has counted steals it never ran. Two workers fighting over task groups of empty callables
// do this thousands of times; each worker's local pops must still lie within what it ran, and the
// pool's total must still add up.
TEST(SchedulerStats, LocalPopsStayWithinTheTasksEachWorkerRan) {
  constexpr int kRounds = 300;
  constexpr int kCallables = 1000;
  Scheduler pool(2);
  std::atomic<std::int64_t> ran{0};
  pool.submit([&] {
    for (int r = 0; r < kRounds; ++r) {
      wslab::TaskGroup group(pool);
      for (int i = 0; i < kCallables; ++i)
        group.run([&ran] { ran.fetch_add(1, std::memory_order_relaxed); });
      group.wait();
    }
  });
  pool.wait_idle();
  ASSERT_EQ(ran.load(), std::int64_t{kRounds} * kCallables);
  const wslab::PoolStats stats = pool.stats();
  for (const wslab::WorkerStats& w : stats.workers) {
    EXPECT_LE(w.local_pops, w.tasks_executed);
  }
  EXPECT_EQ(stats.tasks_executed(), std::uint64_t{kRounds} * kCallables + 1);
}

// Busy for `time` on the calling thread: a job that takes that long without sleeping.
void spin_for(std::chrono::steady_clock::duration time) {
  const auto until = std::chrono::steady_clock::now() + time;
  while (std::chrono::steady_clock::now() < until) {
  }
}

// Step 'Tiny steals' (README.md). Knobs under which every stolen job counts as tiny, so that a
// thief pauses after every few steals, for as long as `pause_us` while its victim keeps working.
SchedulerKnobs pausing_thieves(std::uint32_t pause_us) {
  SchedulerKnobs knobs;
  knobs.tiny_steal_ns = 1'000'000'000;
  knobs.tiny_steal_pause_us = pause_us;
  return knobs;
}

TEST(SchedulerTinySteals, ABlockedTasksTinyPartnersAllRunOnTheOtherWorker) {
  // A task queues tiny tasks on its worker's deque and blocks until every one has run: only the
  // other worker can run them, and each of its pauses (a minute long here) must end as soon as
  // the blocked victim's deque stands still. A pause that waited out its time (no check of the
  // victim) would not let this finish within the ctest timeout.
  Scheduler pool(2, {}, pausing_thieves(60'000'000));
  constexpr int kTasks = 2000;
  std::atomic<int> ran{0};
  pool.submit([&] {
    for (int i = 0; i < kTasks; ++i)
      pool.submit([&] { ran.fetch_add(1, std::memory_order_release); });
    while (ran.load(std::memory_order_acquire) < kTasks)
      std::this_thread::yield();
  });
  pool.wait_idle();
  EXPECT_EQ(ran.load(), kTasks);
}

TEST(SchedulerTinySteals, WaitIdleDoesNotWaitForAPausingThief) {
  // Pauses that last a minute even once the victim's deque stands still: a thief that paused
  // still owing the ledger the tasks it ran would keep wait_idle() waiting for its pause (with
  // the pause's settle_retirements() removed, this does not finish within the ctest timeout).
  SchedulerKnobs knobs = pausing_thieves(60'000'000);
  knobs.tiny_steal_still_us = 60'000'000;
  Scheduler pool(2, {}, knobs);
  std::atomic<int> ran{0};
  for (int round = 0; round < 20; ++round) {
    pool.submit([&] {
      for (int i = 0; i < 2000; ++i)
        pool.submit([&] { ran.fetch_add(1); });
    });
    pool.wait_idle();
    ASSERT_EQ(ran.load(), (round + 1) * 2000);
  }
}

TEST(SchedulerTinySteals, APauseThatDoubledForLongStillEndsWhenTheVictimBlocks) {
  // Step 'Doubling pauses': a victim runs rounds of tiny tasks for a while, so that the thief's
  // pauses run their whole length and double (from 100 us, with no limit on the doublings: the
  // last pause is about as long as the phase so far), then queues tiny tasks and blocks until
  // they have run. Whatever the pause has grown to, it must end once the blocked victim's deque
  // stands still. Exactly once: every task of both phases.
  SchedulerKnobs knobs = pausing_thieves(100);
  knobs.tiny_steal_doublings = 30;
  Scheduler pool(2, {}, knobs);
  constexpr int kTasks = 2000;
  std::atomic<int> tiny_ran{0};
  std::atomic<int> partners_ran{0};
  int rounds = 0;
  pool.submit([&] {
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(100);
    while (std::chrono::steady_clock::now() < until) {
      wslab::TaskGroup group(pool);
      for (int i = 0; i < kTasks; ++i)
        group.run([&] { tiny_ran.fetch_add(1, std::memory_order_relaxed); });
      group.wait();
      ++rounds;
    }
    for (int i = 0; i < kTasks; ++i)
      pool.submit([&] { partners_ran.fetch_add(1, std::memory_order_release); });
    while (partners_ran.load(std::memory_order_acquire) < kTasks)
      std::this_thread::yield();
  });
  pool.wait_idle();
  EXPECT_EQ(tiny_ran.load(), rounds * kTasks);
  EXPECT_EQ(partners_ran.load(), kTasks);
}

// The most full pauses any worker of `pool` remembers (step 'Remembered pauses').
std::uint32_t most_full_pauses(const Scheduler& pool) {
  std::uint32_t most = 0;
  for (std::size_t i = 0; i < pool.thread_count(); ++i)
    most = std::max(most, pool.remembered_full_pauses(i));
  return most;
}

// Step 'Remembered pauses' (README.md). Runs rounds of tiny task groups on `pool` until some
// thief holds a pause that ran its whole length, waits for the pool to go idle and then for every
// worker to fall asleep (the thief's park is behind it), and returns what the thieves remember.
// Each task runs once.
std::uint32_t full_pauses_after_a_park(Scheduler& pool) {
  const auto deadline = std::chrono::steady_clock::now() + wslab::test::kPatience;
  std::atomic<std::int64_t> ran{0};
  std::int64_t queued = 0;
  bool paused_in_full = false;
  pool.submit([&] {
    while (!paused_in_full && std::chrono::steady_clock::now() < deadline) {
      wslab::TaskGroup group(pool);
      for (int i = 0; i < 1000; ++i)
        group.run([&ran] { ran.fetch_add(1, std::memory_order_relaxed); });
      group.wait();
      queued += 1000;
      paused_in_full = most_full_pauses(pool) > 0;
    }
  });
  pool.wait_idle();
  EXPECT_EQ(ran.load(), queued);
  EXPECT_TRUE(paused_in_full) << "no pause ran its whole length within a minute";
  if (!wslab::test::eventually([&] { return pool.sleeping_workers() >= pool.thread_count(); })) {
    ADD_FAILURE() << "the idle pool's workers did not all fall asleep within a minute";
    return 0;
  }
  return most_full_pauses(pool);
}

// Pauses of 1 ms that may double four times; a stolen job counts as tiny under 2 ms.
SchedulerKnobs remembering_thieves(bool remembered) {
  SchedulerKnobs knobs;
  knobs.tiny_steal_ns = 2'000'000;
  knobs.tiny_steal_pause_us = 1000;
  knobs.remembered_pauses = remembered;
  return knobs;
}

TEST(SchedulerTinySteals, APauseLengthOutlivesAParkUntilAStolenJobIsNotTiny) {
  // A thief whose pause ran its whole length parks once the pool drains, and still holds that
  // length. Then the victim queues tiny tasks and blocks until they have run: the thief must end
  // its pause once the blocked victim's deque stands still, however long the pause (twice the
  // knob when the first phase's thief is this phase's too). Last, the victim queues one job of
  // 5 ms and blocks until it has run: the thief steals it (the only job queued, so no batch takes
  // it past the timing), and a job that is not tiny starts its pauses from the knob again. Which
  // worker is the thief in each phase is up to the pool, so the last check reads the worker that
  // ran the long job.
  Scheduler pool(2, {}, remembering_thieves(true));
  ASSERT_GE(full_pauses_after_a_park(pool), 1u);
  constexpr int kTasks = 2000;
  std::atomic<int> partners_ran{0};
  std::atomic<bool> long_job_ran{false};
  std::size_t thief = pool.thread_count();
  pool.submit([&] {
    for (int i = 0; i < kTasks; ++i)
      pool.submit([&] { partners_ran.fetch_add(1, std::memory_order_release); });
    while (partners_ran.load(std::memory_order_acquire) < kTasks)
      std::this_thread::yield();
    pool.submit([&] {
      spin_for(std::chrono::milliseconds(5));
      thief = pool.current_worker_index();
      long_job_ran.store(true, std::memory_order_release);
    });
    while (!long_job_ran.load(std::memory_order_acquire))
      std::this_thread::yield();
  });
  pool.wait_idle();
  EXPECT_EQ(partners_ran.load(), kTasks);
  ASSERT_LT(thief, pool.thread_count());
  // The thief clears its count after the job it timed returns, which may be after wait_idle().
  EXPECT_TRUE(wslab::test::eventually([&] { return pool.remembered_full_pauses(thief) == 0; }))
      << "worker " << thief << " still holds " << pool.remembered_full_pauses(thief)
      << " full pauses after stealing a job that is not tiny";
}

TEST(SchedulerTinySteals, WithoutRememberedPausesAParkForgetsThePauseLength) {
  // The check above, on the step's knob off: the same park leaves every thief starting from the
  // knob, so a build whose parks forgot the length would fail the test above.
  Scheduler pool(2, {}, remembering_thieves(false));
  EXPECT_EQ(full_pauses_after_a_park(pool), 0u);
}

// Step 'Idle gaps' (README.md). A task runs rounds of 5,000 callables of about a microsecond each
// in a task group, and between two rounds works alone for 30 ms with nothing queued: longer than
// a victim must stand still to end a pause (20 ms here, so that a victim descheduled in the middle
// of a round on a loaded machine rarely does). Every stolen job counts as tiny and a pause lasts a
// minute, so once the thief pauses, only an exit can bring it back. Returns in how many rounds the
// other worker ran a callable. Each callable runs once.
int rounds_stolen_from_across_idle_gaps(bool pause_through_idle) {
  SchedulerKnobs knobs = pausing_thieves(60'000'000);
  knobs.tiny_steal_still_us = 20'000;
  knobs.pause_through_idle = pause_through_idle;
  Scheduler pool(2, {}, knobs);
  constexpr int kRounds = 10;
  constexpr int kCallables = 5000;
  std::atomic<int> ran{0};
  int rounds_stolen_from = 0;
  pool.submit([&] {
    const std::size_t home = pool.current_worker_index();
    for (int round = 0; round < kRounds; ++round) {
      std::atomic<bool> stolen{false};
      wslab::TaskGroup group(pool);
      for (int i = 0; i < kCallables; ++i) {
        group.run([&] {
          spin_for(std::chrono::microseconds(1));
          ran.fetch_add(1, std::memory_order_relaxed);
          if (pool.current_worker_index() != home) stolen.store(true, std::memory_order_relaxed);
        });
      }
      group.wait();
      if (stolen.load(std::memory_order_relaxed)) ++rounds_stolen_from;
      spin_for(std::chrono::milliseconds(30));  // the idle gap
    }
  });
  pool.wait_idle();
  EXPECT_EQ(ran.load(), kRounds * kCallables);
  return rounds_stolen_from;
}

TEST(SchedulerTinySteals, APauseOutlastsItsVictimsIdleGaps) {
  // The thief steals in the first round or two, pauses, and stays paused through every gap: its
  // victim stands still there, but with nothing to take. A build whose pause ends at a still,
  // empty victim comes back in nearly every round (the test below). One more round is allowed for
  // a victim descheduled mid-round, which stands still with work and rightly ends the pause.
  const int stolen_from = rounds_stolen_from_across_idle_gaps(true);
  EXPECT_GE(stolen_from, 1) << "no thief ever stole: the test measured nothing";
  EXPECT_LE(stolen_from, 3) << "the thief came back in " << stolen_from << " of 10 rounds";
}

TEST(SchedulerTinySteals, WithoutTheIdleGapsStepEveryGapEndsThePause) {
  // The check above on the step's knob off, so that it can tell the two apart: each gap ends the
  // pause, the thief parks, and the next round's first push wakes it to steal again.
  EXPECT_GE(rounds_stolen_from_across_idle_gaps(false), 6);
}

// Step 'Tiny forks' (README.md). A child of about a microsecond that counts its run.
wslab::CoTask<void> tiny_child(std::atomic<int>* ran) {
  spin_for(std::chrono::microseconds(1));
  ran->fetch_add(1, std::memory_order_relaxed);
  co_return;
}

// A coroutine on a worker co_joins rounds of 100 tiny children, up to `rounds` of them, until some
// thief holds a pause that ran its whole length or test::kPatience has passed. Every stolen job
// counts as tiny, and a pause lasts 100 us and ends early only for work elsewhere or shutdown (a
// victim must stand still for a minute). Returns what the thieves remember (step 'Remembered
// pauses'): above zero once a pause ran in full. Each child runs once.
std::uint32_t full_pauses_over_co_joins(bool time_stolen_forks, int rounds) {
  SchedulerKnobs knobs = pausing_thieves(100);
  knobs.tiny_steal_still_us = 60'000'000;
  knobs.time_stolen_forks = time_stolen_forks;
  Scheduler pool(2, {}, knobs);
  constexpr int kChildren = 100;
  const auto deadline = std::chrono::steady_clock::now() + wslab::test::kPatience;
  std::atomic<int> ran{0};
  int joined = 0;
  auto parent = [&]() -> wslab::CoTask<void> {
    for (; joined < rounds; ++joined) {
      if (most_full_pauses(pool) > 0 || std::chrono::steady_clock::now() >= deadline) break;
      std::vector<wslab::CoTask<void>> children;
      for (int i = 0; i < kChildren; ++i)
        children.push_back(tiny_child(&ran));
      co_await wslab::co_join(pool, std::move(children));
    }
  };
  wslab::sync_wait(pool, parent());
  EXPECT_EQ(ran.load(), joined * kChildren);
  return most_full_pauses(pool);
}

TEST(SchedulerTinySteals, AThiefPausesOnACoJoinsTinyChildren) {
  // The only jobs a thief can steal here are co_join's children, forks on the split deque: the
  // thief times them, finds them tiny and pauses, and a pause runs its whole length. A build that
  // does not time stolen forks never pauses, and this runs into the deadline.
  EXPECT_GT(full_pauses_over_co_joins(true, std::numeric_limits<int>::max()), 0u)
      << "no pause ran its whole length within a minute";
}

TEST(SchedulerTinySteals, WithoutTheTinyForksStepNoPauseStartsOnForks) {
  // The check above on the step's knob off: stolen children are not timed, so however many a
  // thief steals, no pause starts, which a build that timed them would fail.
  EXPECT_EQ(full_pauses_over_co_joins(false, 300), 0u);
}

TEST(SchedulerTinySteals, EveryTaskRunsOnceWhileThievesPause) {
  // Rounds of task groups of tiny callables, each adding a tiny spawn, with thieves that pause
  // after every few steals: each callable and each spawn runs exactly once.
  Scheduler pool(2, {}, pausing_thieves(50));
  const int rounds = wslab::kSanitized ? 20 : 200;
  constexpr int kCallables = 500;
  std::vector<std::atomic<int>> ran(static_cast<std::size_t>(rounds) * kCallables * 2);
  pool.submit([&] {
    for (int r = 0; r < rounds; ++r) {
      wslab::TaskGroup group(pool);
      for (int i = 0; i < kCallables; ++i) {
        const std::size_t at = (static_cast<std::size_t>(r) * kCallables + i) * 2;
        group.run([&pool, &ran, at] {
          ran[at].fetch_add(1);
          pool.submit([&ran, at] { ran[at + 1].fetch_add(1); });
        });
      }
      group.wait();
    }
  });
  pool.wait_idle();
  std::size_t wrong = 0;
  for (const auto& count : ran)
    wrong += count.load() != 1 ? 1 : 0;
  EXPECT_EQ(wrong, 0u) << "jobs run other than exactly once, of " << ran.size();
}

// Step 'Growing owners' (README.md).
// Calls `body` with a two-worker pool whose deques start at two slots (and whose forks go on them:
// no split deque), waits for the pool to be idle, then checks that the deques grew at least
// `growths` times and that a push announced each growth to pausing thieves (push_own()): one that
// bypassed it would read as a blocked owner.
template <class Body>
void expect_announced_growths(std::size_t growths, Body body) {
  SchedulerKnobs knobs;
  knobs.deque_capacity = 2;
  knobs.split_deque = 0;
  Scheduler pool(2, {}, knobs);
  body(pool);
  pool.wait_idle();
  EXPECT_GE(pool.deque_growths(), growths);
  EXPECT_EQ(pool.announced_growths(), pool.deque_growths());
}

wslab::CoTask<long> fib_by_co_join(int n) {
  if (n < 2) co_return n;
  auto [a, b] = co_await wslab::co_join(fib_by_co_join(n - 1), fib_by_co_join(n - 2));
  co_return a + b;
}

long fib_by_join(Scheduler& pool, int n) {
  if (n < 2) return n;
  auto [a, b] = wslab::join(
      pool, [&] { return fib_by_join(pool, n - 1); }, [&] { return fib_by_join(pool, n - 2); });
  return a + b;
}

TEST(SchedulerGrowingOwners, EveryGrowthOfADequeIsAnnouncedToThieves) {
  // Each kind of push a worker makes onto its own Chase-Lev deque that can grow it, alone on a
  // fresh pool: spawns from a worker, a task group's callables, join's forks, a coroutine's
  // co_join. (A thief's batched steals take no more than its deque has room for.) Switching any of
  // them to a plain push makes its case fail.
  const int tasks = wslab::kSanitized ? 2000 : 20000;
  std::atomic<int> ran{0};
  expect_announced_growths(8, [&](Scheduler& pool) {
    pool.submit([&] {
      for (int i = 0; i < tasks; ++i)
        pool.submit([&] { ran.fetch_add(1, std::memory_order_relaxed); });
    });
  });
  EXPECT_EQ(ran.load(), tasks);
  expect_announced_growths(8, [&](Scheduler& pool) {
    pool.submit([&] {
      wslab::TaskGroup group(pool);
      for (int i = 0; i < tasks; ++i)
        group.run([&] { ran.fetch_add(1, std::memory_order_relaxed); });
      group.wait();
    });
  });
  EXPECT_EQ(ran.load(), 2 * tasks);
  // Recursions 16 deep: at most 16 forks queued, from two slots to 16 or 32.
  long fib = 0;
  expect_announced_growths(
      3, [&](Scheduler& pool) { pool.submit([&] { fib = fib_by_join(pool, 16); }); });
  EXPECT_EQ(fib, 987);
  expect_announced_growths(
      3, [&](Scheduler& pool) { fib = wslab::sync_wait(pool, fib_by_co_join(16)); });
  EXPECT_EQ(fib, 987);
}

}  // namespace
