// join on stage 5's scheduler as an object, from outside: the guest seat. join, TaskGroup, futures
// and the help-while-waiting policy on every registered pool are
// tests/algorithms/fork_join_test.cpp.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <type_traits>
#include <utility>

#include "stage5_parallel_algos/fork_join/join.hpp"
#include "stage5_parallel_algos/scheduler/scheduler.hpp"
#include "stage5_parallel_algos/tests/blocked_task.hpp"
#include "stage5_parallel_algos/tests/fork_rounds.hpp"
#include "stage5_parallel_algos/tests/seat_guest.hpp"
#include "tests/test_scale.hpp"

namespace wslab {
namespace {

struct Failure {
  char which;
};

// The scheduler's guest seat: an outside join runs its first branch on the calling thread (seated
// as a guest), and the seat is free again afterwards; a second outside caller meanwhile hands its
// join to the workers. Both give the same results.
TEST(SchedulerGuestJoin, OutsideJoinRunsItsFirstBranchOnTheCaller) {
  Scheduler pool(2);
  const std::thread::id caller = std::this_thread::get_id();
  for (int round = 0; round < 100; ++round) {
    test::wait_until_a_worker_sleeps(pool);  // the seat is lent only in a sleeper's place
    auto [a_here, b_sum] = join(
        pool, [&] { return std::this_thread::get_id() == caller && pool.owns_current_thread(); },
        [] {
          int sum = 0;
          for (int i = 1; i <= 100; ++i)
            sum += i;
          return sum;
        });
    ASSERT_TRUE(a_here);
    ASSERT_EQ(b_sum, 5050);
    ASSERT_FALSE(pool.owns_current_thread());
  }
  // While this thread holds the seat, another outside caller's join is handed to the workers.
  // The caller takes it back only if no worker has started it within a millisecond (join.hpp),
  // which a loaded machine may do to any one round: 20 rounds, then more until a worker has run
  // one.
  Scheduler::GuestSeat seat = test::seat_once_a_worker_sleeps(pool);
  ASSERT_TRUE(seat);
  int rounds = 0;
  int handed_over = 0;
  const bool one_handed_over = test::eventually([&] {
    std::thread([&] {
      const std::thread::id me = std::this_thread::get_id();
      auto [a_here, unused] =
          join(pool, [&] { return std::this_thread::get_id() == me; }, [] { return 0; });
      handed_over += a_here ? 0 : 1;
    }).join();
    return ++rounds >= 20 && handed_over > 0;
  });
  EXPECT_TRUE(one_handed_over) << handed_over << " of " << rounds
                               << " rounds were handed to a worker";
}

// join on a worker when a throws (join.hpp, join_on_worker()): b still runs, exactly once and
// before join returns, whether the worker takes it back (one worker: nobody can steal it) or a
// thief has it (a waits until b has started elsewhere); if both throw, a's exception wins. A join
// that skipped b once a threw, or returned while a thief still runs b, fails the counts (and the
// latter is a use after scope under ASan: b refers to this frame). b's job is built in the split
// deque's slot, and, step 'Frames in the slot' off, in the joining frame.
TEST(SchedulerJoinOnWorker, WhenAThrowsBRunsOnceBeforeJoinReturnsTakenBackOrStolen) {
  for (const auto& [workers, in_slots] :
       {std::pair{1u, true}, std::pair{2u, true}, std::pair{1u, false}, std::pair{2u, false}}) {
    SchedulerKnobs knobs;
    knobs.frames_in_slots = in_slots;
    Scheduler pool(workers, {}, knobs);
    const bool stolen = workers == 2;
    std::atomic<int> wrong{0};
    std::atomic<bool> done{false};
    pool.submit([&] {
      for (int round = 0; round < 200; ++round) {
        for (bool b_throws : {false, true}) {
          std::atomic<int> b_started{0};
          std::atomic<int> b_finished{0};
          const std::thread::id joiner = std::this_thread::get_id();
          bool b_elsewhere = false;
          try {
            join(
                pool,
                [&] {
                  // Stolen case: a outlasts b's start on the other worker.
                  if (stolen && !test::eventually([&] { return b_started.load() != 0; })) {
                    wrong += 1000;  // no thief in a minute: the test cannot say anything
                  }
                  throw Failure{'a'};
                },
                [&] {
                  b_started.fetch_add(1);
                  b_elsewhere = std::this_thread::get_id() != joiner;
                  b_finished.fetch_add(1);
                  if (b_throws) throw Failure{'b'};
                });
            ++wrong;  // join swallowed a's exception
          } catch (const Failure& e) {
            if (e.which != 'a') ++wrong;
          }
          if (b_started.load() != 1 || b_finished.load() != 1) ++wrong;
          if (b_elsewhere != stolen) ++wrong;
        }
      }
      done = true;
    });
    pool.wait_idle();
    EXPECT_TRUE(done.load()) << workers << " workers, frames in slots " << in_slots;
    EXPECT_EQ(wrong.load(), 0) << workers << " workers, frames in slots " << in_slots;
  }
}

// Runs round(pool, stolen) 100 times in a task of each of test::on_one_and_two_workers()'s
// schedulers; round returns how many of its checks failed.
template <class Round>
void joined_taken_back_and_stolen(Round round) {
  test::on_one_and_two_workers([&](Scheduler& pool, bool stolen) {
    int wrong = 0;
    bool done = false;
    pool.submit([&] {
      for (int i = 0; i < 100; ++i)
        wrong += round(pool, stolen);
      done = true;
    });
    pool.wait_idle();
    return wrong + (done ? 0 : 1);
  });
}

// An a that returns 1, or throws; when b is to be stolen, it first waits until b has started
// elsewhere.
auto a_after_b_started(bool stolen, bool throws, std::atomic<int>& b_runs, int& wrong) {
  return [=, &b_runs, &wrong] {
    if (stolen && !test::eventually([&] { return b_runs.load() != 0; })) wrong += 1000;
    if (throws) throw Failure{'a'};
    return 1;
  };
}

// join's b passed as a temporary is moved into the split deque's slot (README.md, step 'join's b
// in the slot'), a move-only capture too, and runs once, from there or by a thief, whether a
// returns or throws (join's rule: b always runs). Every copy of it is destroyed once: none left,
// none twice (a Tracked count, and ASan for the unique_ptr).
TEST(SchedulerJoinOnWorker, ATemporaryBIsMovedIntoTheSlotRunsOnceAndEveryCopyIsDestroyed) {
  joined_taken_back_and_stolen([](Scheduler& pool, bool stolen) {
    int wrong = 0;
    for (bool a_throws : {false, true}) {
      std::atomic<int> b_runs{0};
      auto b = [&b_runs, box = std::make_unique<int>(41), t = test::Tracked{}] {
        b_runs.fetch_add(1);
        return *box + 1;
      };
      static_assert(detail::joins_in_slot<decltype(b), detail::SlotJoinFrame<decltype(b), int>>);
      try {
        auto [x, y] = join(pool, a_after_b_started(stolen, a_throws, b_runs, wrong), std::move(b));
        if (a_throws || x + y != 43) ++wrong;
      } catch (const Failure& e) {
        if (!a_throws || e.which != 'a') ++wrong;
      }
      if (b_runs.load() != 1) ++wrong;
      if (test::Tracked::live.load() != 1) ++wrong;  // b's own, moved from
    }
    return wrong;
  });
  EXPECT_EQ(test::Tracked::live.load(), 0);
}

// A b passed as an lvalue stays the caller's: join calls it where it is, in place or through a
// thief, never a copy, even one that copies as bytes and fits a slot (a copy's call would leave
// this b's count at zero).
TEST(SchedulerJoinOnWorker, AnLvalueBIsCalledInPlaceNeverCopied) {
  struct Counter {
    std::atomic<int>* runs;
    int calls = 0;
    int operator()() {
      runs->fetch_add(1);
      return ++calls;
    }
  };
  static_assert(std::is_trivially_copyable_v<Counter>);
  static_assert(detail::joins_in_slot<Counter, detail::SlotJoinFrame<Counter, int>>);
  static_assert(!detail::joins_in_slot<Counter&, detail::SlotJoinFrame<Counter, int>>);
  joined_taken_back_and_stolen([](Scheduler& pool, bool stolen) {
    int wrong = 0;
    std::atomic<int> b_runs{0};
    Counter b{&b_runs};
    auto [x, y] = join(pool, a_after_b_started(stolen, false, b_runs, wrong), b);
    if (x != 1 || y != 1 || b.calls != 1) ++wrong;
    b_runs = 0;
    auto [p, q] = join(pool, a_after_b_started(stolen, false, b_runs, wrong), b);
    if (q != 2 || b.calls != 2) ++wrong;
    return wrong;
  });
}

// What a join's a may not do (docs/reference.md, join): wait for its own b other than by returning.
// A worker shares its forks only when none it shared before is still queued (README.md, steps
// 'Split deque' and 'Private forks'), so a b forked while an older fork of the same worker is still
// queued stays with that worker until a returns, even while another worker has nothing to do.
// Here the outer join's y is queued (shared) when the inner join forks b; a then lets the other
// worker go, waits until it has stolen and run y, and gives it 50 ms more with nothing else
// queued anywhere but b. b must not start meanwhile, and runs on the joining thread once a
// returns. With the split deque switched off, every fork is a task on the Chase-Lev deque, within
// reach of every worker: the other worker takes b while a waits, and the same checks say so. A
// design that shares such a b fails the check that b did not start while a waited, and the
// reference must then say so.
TEST(SchedulerJoinOnWorker, AForkMadeWhileAnOlderOneIsQueuedStaysWithItsWorkerUntilAReturns) {
  for (const bool split_deque : {true, false}) {
    SchedulerKnobs knobs;
    if (!split_deque) knobs.split_deque = 0;
    Scheduler pool(2, {}, knobs);
    test::BlockedTask other(pool);  // the other worker, out of the way until a starts
    std::atomic<bool> y_done{false};
    std::atomic<int> b_runs{0};
    bool b_started_during_a = false;
    bool y_elsewhere = false;
    bool b_on_joiner = false;
    bool y_stolen_in_time = true;
    pool.submit([&] {
      const std::thread::id joiner = std::this_thread::get_id();
      join(
          pool,
          [&] {
            join(
                pool,
                [&] {
                  other.release();
                  y_stolen_in_time = test::eventually([&] { return y_done.load(); });
                  // Without the split deque, b is the thief's next steal: waited for as long as
                  // anything in these tests, so that a slow machine does not fail the control.
                  b_started_during_a = test::eventually(
                      [&] { return b_runs.load() != 0; },
                      split_deque ? std::chrono::milliseconds(50) : test::kPatience);
                },
                [&] {
                  b_runs.fetch_add(1);
                  b_on_joiner = std::this_thread::get_id() == joiner;
                });
          },
          [&] {
            y_elsewhere = std::this_thread::get_id() != joiner;
            y_done.store(true);
          });
    });
    pool.wait_idle();
    ASSERT_TRUE(y_stolen_in_time) << "split deque " << split_deque;
    EXPECT_TRUE(y_elsewhere) << "split deque " << split_deque;
    EXPECT_EQ(b_runs.load(), 1) << "split deque " << split_deque;
    EXPECT_EQ(b_started_during_a, !split_deque) << "split deque " << split_deque;
    EXPECT_EQ(b_on_joiner, split_deque) << "split deque " << split_deque;
  }
}

}  // namespace
}  // namespace wslab
