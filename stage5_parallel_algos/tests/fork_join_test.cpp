// join on stage 5's scheduler as an object, from outside: the guest seat. join, TaskGroup, futures
// and the help-while-waiting policy on every registered pool are
// tests/algorithms/fork_join_test.cpp.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <utility>

#include "stage5_parallel_algos/fork_join/join.hpp"
#include "stage5_parallel_algos/scheduler/scheduler.hpp"
#include "stage5_parallel_algos/tests/seat_guest.hpp"
#include "tests/test_scale.hpp"

namespace wslab {
namespace {

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
  struct Failure {
    char which;
  };
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

}  // namespace
}  // namespace wslab
