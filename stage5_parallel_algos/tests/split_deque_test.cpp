// The split deque of join's forks (scheduler/split_deque.hpp): the owner alone, scenario by
// scenario; the owner's take-back against a thief's steal as a litmus test (litmus.hpp), with the
// broken take-back that skips the CAS caught; nested forks against two thieves, every job run
// exactly once, taken back by pop() and by take_back(); and the same with frames built in the
// slots, which thieves run in place (split_deque_frames.hpp).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "common/config.hpp"
#include "stage5_parallel_algos/scheduler/job.hpp"
#include "stage5_parallel_algos/scheduler/split_deque.hpp"
#include "stage5_parallel_algos/tests/litmus.hpp"
#include "stage5_parallel_algos/tests/split_deque_frames.hpp"

namespace {

using wslab::sched::BasicSplitDeque;
using wslab::sched::Job;
using wslab::sched::SplitDeque;
using wslab::sched::SplitDequeReclaim;
using Pushed = SplitDeque::Pushed;

// A job that counts its runs and says when it is done, as join's StackJob sets its flag.
struct CountedJob final : Job {
  CountedJob() noexcept : Job(&run) {}
  static void run(Job& self) noexcept {
    auto& job = static_cast<CountedJob&>(self);
    job.runs.fetch_add(1, std::memory_order_relaxed);
    job.done.store(true, std::memory_order_release);
  }
  std::atomic<int> runs{0};
  std::atomic<bool> done{false};
};

TEST(SplitDeque, OwnerAloneGetsEveryJobBackNewestFirst) {
  SplitDeque deque(16);
  std::vector<CountedJob> jobs(10);
  // The first push shares its job (nothing was shared); the rest stay private.
  EXPECT_EQ(deque.push(&jobs[0]), Pushed::shared);
  for (std::size_t i = 1; i < jobs.size(); ++i)
    EXPECT_EQ(deque.push(&jobs[i]), Pushed::kept);
  EXPECT_FALSE(deque.nothing_shared());
  // The last one comes back from the shared part, taken back by the owner's CAS.
  for (std::size_t i = jobs.size(); i-- > 0;)
    EXPECT_EQ(deque.pop(), &jobs[i]) << "job " << i;
  EXPECT_TRUE(deque.nothing_shared());
  // Empty again: the next push shares again.
  EXPECT_EQ(deque.push(&jobs[0]), Pushed::shared);
  EXPECT_EQ(deque.pop(), &jobs[0]);
}

TEST(SplitDeque, FullDequeRefusesThePushAndCapacityZeroRefusesEvery) {
  SplitDeque deque(3);
  CountedJob jobs[4];
  EXPECT_NE(deque.push(&jobs[0]), Pushed::full);
  EXPECT_NE(deque.push(&jobs[1]), Pushed::full);
  EXPECT_NE(deque.push(&jobs[2]), Pushed::full);
  EXPECT_EQ(deque.push(&jobs[3]), Pushed::full);
  EXPECT_EQ(deque.pop(), &jobs[2]);
  EXPECT_NE(deque.push(&jobs[3]), Pushed::full);  // the slot is free again

  SplitDeque off(0);
  EXPECT_EQ(off.push(&jobs[0]), Pushed::full);
  EXPECT_TRUE(off.nothing_shared());
  EXPECT_EQ(off.steal(), nullptr);
}

// The owner's ways to take its newest fork back: pop(), which returns the slot's job; take_back(),
// join's and co_join's, which answers from the indices alone; and `tripped`, the scheduler's two
// halves (take_back_private(), then untrip() and reclaim_newest() out of line) after a trip()
// (step 'Forks off the count'), which must change no answer. Same scenarios, same answers.
enum class TakeBack { pop, take_back, tripped };

// The scheduler's take-back after a trip(): the fast half fails, and the way out of line finds the
// trip and the job, private or shared.
template <class Deque>
bool tripped_take_back(Deque& deque, const Job& job) {
  deque.trip();
  if (deque.take_back_private(&job)) {
    ADD_FAILURE() << "a tripped take-back stayed on its fast path";
    return true;
  }
  EXPECT_TRUE(deque.untrip()) << "the trip was lost";
  return deque.reclaim_newest();
}

// `job`, the job the owner pushed last, back from the deque `how` the owner asks, or nullptr when
// a thief took it. A pop() that names another job counts in `wrong`, and that job comes back.
template <class Deque>
Job* back_from(Deque& deque, CountedJob& job, TakeBack how, std::atomic<std::uint64_t>& wrong) {
  if (how == TakeBack::take_back) return deque.take_back(&job) ? &job : nullptr;
  if (how == TakeBack::tripped) return tripped_take_back(deque, job) ? &job : nullptr;
  Job* popped = deque.pop();
  if (popped != nullptr && popped != &job) wrong.fetch_add(1, std::memory_order_relaxed);
  return popped;
}

class SplitDequeTakeBack : public testing::TestWithParam<TakeBack> {
 protected:
  void TearDown() override { EXPECT_EQ(wrong_.load(), 0u) << "pop() gave back another job"; }
  // Whether `job` came back to the owner.
  bool back(SplitDeque& deque, CountedJob& job) {
    return back_from(deque, job, GetParam(), wrong_) != nullptr;
  }
  std::atomic<std::uint64_t> wrong_{0};
};
INSTANTIATE_TEST_SUITE_P(Each, SplitDequeTakeBack,
                         testing::Values(TakeBack::pop, TakeBack::take_back, TakeBack::tripped),
                         [](const auto& instance) {
                           switch (instance.param) {
                             case TakeBack::pop:
                               return "Pop";
                             case TakeBack::take_back:
                               return "TakeBack";
                             default:
                               return "Tripped";
                           }
                         });

TEST_P(SplitDequeTakeBack, ThiefTakesTheOldestSharedJobAndTheOwnerSharesWhenItIsGone) {
  SplitDeque deque(16);
  CountedJob jobs[4];
  deque.push(&jobs[0]);  // shared
  deque.push(&jobs[1]);
  deque.push(&jobs[2]);
  EXPECT_EQ(deque.steal(), &jobs[0]);
  EXPECT_EQ(deque.steal(), nullptr) << "jobs 1 and 2 are private";
  // The shared part is empty: this push shares the older half of the private jobs (1 and 2 of
  // 1, 2, 3).
  EXPECT_EQ(deque.push(&jobs[3]), Pushed::shared);
  EXPECT_EQ(deque.steal(), &jobs[1]);
  EXPECT_TRUE(back(deque, jobs[3]));   // private
  EXPECT_TRUE(back(deque, jobs[2]));   // shared, taken back by the CAS
  EXPECT_FALSE(back(deque, jobs[1]));  // stolen
  deque.release_stolen();
  EXPECT_FALSE(back(deque, jobs[0]));  // stolen
  deque.release_stolen();
  EXPECT_TRUE(deque.nothing_shared());
  // Every slot free: the deque starts over from the bottom.
  EXPECT_EQ(deque.push(&jobs[0]), Pushed::shared);
  EXPECT_EQ(deque.steal(), &jobs[0]);
}

TEST(SplitDeque, ForksNestedAboveAStolenJobLeaveItsSlotAlone) {
  SplitDeque deque(16);
  CountedJob stolen, nested[3];
  deque.push(&stolen);
  EXPECT_EQ(deque.steal(), &stolen);
  EXPECT_EQ(deque.pop(), nullptr);
  // While its owner waits for the thief, it forks again (a job it helps with forks).
  for (CountedJob& job : nested)
    deque.push(&job);
  EXPECT_EQ(deque.steal(), &nested[0]);
  EXPECT_EQ(deque.pop(), &nested[2]);
  EXPECT_EQ(deque.pop(), &nested[1]);
  EXPECT_EQ(deque.pop(), nullptr);
  deque.release_stolen();
  deque.release_stolen();
  EXPECT_TRUE(deque.nothing_shared());
  EXPECT_EQ(deque.steal(), nullptr);
}

// ---- The owner's take-back against a steal ----
//
//   owner (A):  [prepared: one job pushed, shared, nothing private]  pop(): load the word, see the
//               tail at the job, move the split below it (CAS, or the broken plain store)
//   thief (B):  steal(): load the word, CAS the tail past the job
//
// Exactly one of them may get the job. The broken take-back loses when the thief's CAS falls
// between the owner's load and its store.

constexpr std::uint64_t kRounds = wslab::kSanitized ? 2'000 : 300'000;

struct TakeBackResult {
  wslab::test::LitmusRun run;
  std::uint64_t double_takes = 0;
  std::uint64_t lost = 0;
};

template <SplitDequeReclaim Reclaim>
TakeBackResult take_back_against_steal() {
  using Deque = BasicSplitDeque<Reclaim>;
  std::unique_ptr<Deque> deque;
  CountedJob job;
  Job* popped = nullptr;
  Job* stolen = nullptr;
  TakeBackResult result;
  result.run = wslab::test::run_litmus(
      wslab::test::LitmusShape{kRounds, -200, 200},
      [&](std::uint64_t) {
        deque = std::make_unique<Deque>(4);
        deque->push(&job);
      },
      [&](std::uint64_t) { popped = deque->pop(); },
      [&](std::uint64_t) { stolen = deque->steal(); },
      [&](std::uint64_t) {
        const int takes = (popped == &job) + (stolen == &job);
        if (takes > 1) ++result.double_takes;
        if (takes < 1) ++result.lost;
      });
  std::printf("[  litmus  ] %llu rounds (%llu aligned) in %.2f s: %llu double takes\n",
              static_cast<unsigned long long>(result.run.rounds),
              static_cast<unsigned long long>(result.run.aligned()), result.run.seconds,
              static_cast<unsigned long long>(result.double_takes));
  return result;
}

TEST(SplitDequeLitmus, TakeBackByCasNeverSharesAJobWithAThief) {
  const TakeBackResult result = take_back_against_steal<SplitDequeReclaim::cas>();
  EXPECT_EQ(result.double_takes, 0u);
  EXPECT_EQ(result.lost, 0u);
}

TEST(SplitDequeLitmus, TakeBackWithoutCasIsCaught) {
  // Under sanitizers the halves run too slowly for the rounds' alignment to hit the window often;
  // on one core the two never overlap.
  if (wslab::kSanitized) GTEST_SKIP() << "a sanitizer build";
  if (std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "one core";
  const TakeBackResult result = take_back_against_steal<SplitDequeReclaim::unchecked>();
  if (result.double_takes == 0 && result.run.aligned() < kRounds / 6) {
    GTEST_SKIP() << "machine too loaded: only " << result.run.aligned() << " of "
                 << result.run.rounds << " rounds started together";
  }
  EXPECT_GT(result.double_takes, 0u) << "the broken take-back was not caught";
  EXPECT_EQ(result.lost, 0u);
}

// ---- Nested forks against thieves ----
//
// The owner forks as join does: push a job, do the "a" half (which forks in turn, to a depth),
// pop, run the job if it came back, else wait until its thief has run it and release the slot.
// Every other tree takes its jobs back with take_back(), as join does, instead of pop(). Two
// thieves steal all the while. With `tripper`, a third thread trips the deque again and again
// (step 'Forks off the count'), and the trees that use take_back() use the scheduler's two halves
// instead: take_back_private(), then untrip() and reclaim_newest() out of line. Invariant: every
// job runs exactly once, and the owner never gets back a job other than the one it pushed last.
template <class Deque>
void nested_forks_against_thieves(std::uint64_t trees, int depth, bool tripper = false) {
  Deque deque(64);
  const std::size_t per_tree = (std::size_t{1} << depth) - 1;
  std::vector<CountedJob> jobs(trees * per_tree);
  std::size_t next = 0;
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> wrong_job{0};

  auto thief = [&] {
    while (!stop.load(std::memory_order_relaxed)) {
      if (Job* job = deque.steal()) job->execute();
    }
  };
  std::thread t1(thief), t2(thief);
  std::atomic<std::uint64_t> trips{0};
  std::thread t3([&] {
    while (tripper && !stop.load(std::memory_order_relaxed)) {
      deque.trip();
      trips.fetch_add(1, std::memory_order_relaxed);
      std::this_thread::yield();
    }
  });
  // The scheduler's take-back, in its two halves.
  auto halves = [&](CountedJob& job) -> Job* {
    if (deque.take_back_private(&job)) return &job;
    deque.untrip();
    return deque.reclaim_newest() ? &job : nullptr;
  };

  // Forks 2^d - 1 jobs under one call: this call's job, then both halves of the tree.
  TakeBack how = TakeBack::pop;
  auto fork = [&](auto& self, int d) -> void {
    if (d == 0) return;
    CountedJob& job = jobs[next++];
    const bool pushed = deque.push(&job) != Pushed::full;
    self(self, d - 1);  // a: forks its own subtree
    if (!pushed) {
      job.execute();
    } else if (Job* back = tripper && how == TakeBack::take_back
                               ? halves(job)
                               : back_from(deque, job, how, wrong_job)) {
      back->execute();
    } else {
      while (!job.done.load(std::memory_order_acquire))
        std::this_thread::yield();
      deque.release_stolen();
    }
    self(self, d - 1);  // more forks after the join, as b's own subtree would
  };
  // d levels: job + 2 subtrees of d - 1 levels each = 2^d - 1 jobs.
  for (std::uint64_t t = 0; t < trees; ++t) {
    how = t % 2 == 1 ? TakeBack::take_back : TakeBack::pop;
    fork(fork, depth);
  }
  stop.store(true, std::memory_order_relaxed);
  t1.join();
  t2.join();
  t3.join();

  ASSERT_EQ(next, jobs.size());
  if (tripper) {
    EXPECT_GT(trips.load(), 0u);
  }
  std::uint64_t bad = 0;
  for (const CountedJob& job : jobs) {
    if (job.runs.load() != 1) ++bad;
  }
  EXPECT_EQ(bad, 0u) << "jobs not run exactly once";
  EXPECT_EQ(wrong_job.load(), 0u) << "pop() gave back a job other than the newest";
  EXPECT_TRUE(deque.nothing_shared());
}

TEST(SplitDeque, NestedForksAgainstTwoThievesRunEachJobExactlyOnce) {
  nested_forks_against_thieves<SplitDeque>(wslab::kSanitized ? 200 : 4'000, 8);
}

// The same with a thread that trips the deque all the while: a trip sends take-backs out of line
// and changes no answer.
TEST(SplitDeque, NestedForksAgainstThievesAndTripsRunEachJobExactlyOnce) {
  nested_forks_against_thieves<SplitDeque>(wslab::kSanitized ? 200 : 4'000, 8, /*tripper=*/true);
}

// A trip is seen once: untrip() answers true after it and false otherwise, and a take-back after
// it finds the split where it was (the private job comes back without a CAS moving it).
TEST(SplitDeque, ATripIsSeenOnceAndLeavesTheSplitWhereItWas) {
  SplitDeque deque(16);
  CountedJob jobs[3];
  EXPECT_FALSE(deque.untrip()) << "untripped before any trip";
  deque.push(&jobs[0]);  // shared
  deque.push(&jobs[1]);  // private
  deque.push(&jobs[2]);  // private
  deque.trip();
  deque.trip();
  EXPECT_FALSE(deque.take_back_private(&jobs[2])) << "the trip did not send it out of line";
  EXPECT_TRUE(deque.untrip());
  EXPECT_FALSE(deque.untrip()) << "one trip seen twice";
  EXPECT_TRUE(deque.reclaim_newest());
  EXPECT_TRUE(deque.take_back_private(&jobs[1])) << "the split moved";
  EXPECT_FALSE(deque.nothing_shared()) << "job 0 is no longer shared";
  EXPECT_EQ(deque.steal(), &jobs[0]);
}

// ---- Frames built in the slots ----

// A job built in its slot is the job that pop() and steal() return (the slot's own address), as a
// pushed job's link is followed to the job itself; the two mix in one deque.
TEST(SplitDequeFrames, BuiltAndLinkedJobsComeBackAsThemselves) {
  SplitDeque deque(16);
  CountedJob linked[2];
  CountedJob* built[2];
  for (int i = 0; i < 2; ++i) {
    EXPECT_NE(deque.push(&linked[i]), Pushed::full);
    void* slot = deque.next_slot();
    ASSERT_NE(slot, nullptr);
    built[i] = ::new (slot) CountedJob;
    EXPECT_EQ(static_cast<void*>(built[i]), slot);
    EXPECT_NE(deque.push_built(slot), Pushed::full);
  }
  EXPECT_EQ(deque.steal(), &linked[0]);               // the first push shared itself
  EXPECT_EQ(deque.push(&linked[0]), Pushed::shared);  // shares the older half: built[0], linked[1]
  EXPECT_EQ(deque.steal(), built[0]);
  EXPECT_EQ(deque.pop(), &linked[0]);
  EXPECT_EQ(deque.pop(), built[1]);
  EXPECT_EQ(deque.pop(), &linked[1]);
  EXPECT_EQ(deque.pop(), nullptr);  // built[0], stolen
  deque.release_stolen();
  EXPECT_EQ(deque.pop(), nullptr);  // linked[0], stolen
  deque.release_stolen();
  EXPECT_TRUE(deque.nothing_shared());
}

// next_slot() answers nullptr when the deque is full, when it has no slots, and when building in
// slots is switched off; push() of a link still works in the last case.
TEST(SplitDequeFrames, NoSlotWhenFullOrSwitchedOff) {
  SplitDeque deque(2);
  CountedJob job;
  EXPECT_NE(deque.push(&job), Pushed::full);
  ASSERT_NE(deque.next_slot(), nullptr);
  void* slot = deque.next_slot();
  ::new (slot) CountedJob;
  EXPECT_NE(deque.push_built(slot), Pushed::full);
  EXPECT_EQ(deque.next_slot(), nullptr);
  EXPECT_EQ(SplitDeque(0).next_slot(), nullptr);
  SplitDeque links_only(4, /*built_in_slots=*/false);
  EXPECT_EQ(links_only.next_slot(), nullptr);
  EXPECT_NE(links_only.push(&job), Pushed::full);
  EXPECT_EQ(links_only.steal(), &job);
}

// next_private_slot() (step 'Private forks') answers nullptr while the shared part is empty, so
// that a fork that would have to share takes the way that does (next_slot(), push_built()); with
// something shared it gives the slot, and push_private() keeps the job there, private.
TEST(SplitDequeFrames, NoPrivateSlotWhileNothingIsShared) {
  SplitDeque deque(8);
  EXPECT_EQ(deque.next_private_slot(), nullptr) << "nothing is shared yet";
  void* first = deque.next_slot();
  ::new (first) CountedJob;
  EXPECT_EQ(deque.push_built(first), Pushed::shared);
  void* slot = deque.next_private_slot();
  ASSERT_NE(slot, nullptr);
  EXPECT_EQ(slot, deque.next_slot());
  auto* kept = ::new (slot) CountedJob;
  deque.push_private(slot);
  Job* shared = deque.steal();
  EXPECT_NE(shared, nullptr);
  EXPECT_NE(shared, kept);
  EXPECT_EQ(deque.steal(), nullptr) << "the private job was shared";
  EXPECT_EQ(deque.next_private_slot(), nullptr) << "a thief emptied the shared part";
  EXPECT_TRUE(deque.take_back_built(kept));
  EXPECT_FALSE(deque.take_back_built(shared));
  deque.release_stolen();
  EXPECT_EQ(SplitDeque(4, /*built_in_slots=*/false).next_private_slot(), nullptr);
}

// A push stores the address above the slot it is given (step 'Stored head'), so the slot must be
// the one next_slot() gives: with the internal checks on (WSLAB_ASSERTIONS: the sanitizer and
// Debug builds), a push given the slot just pushed, again, aborts; without them the test is
// skipped. Without the check, the second push would leave head_ where it was, and the job built
// there would be overwritten by the next fork while its frame is still in use.
TEST(SplitDequeDeathTest, APushGivenAnotherSlotThanTheNextFailsTheInternalCheck) {
  if (!WSLAB_ASSERTIONS) GTEST_SKIP() << "built without WSLAB_ASSERTIONS";
  EXPECT_DEATH(
      {
        SplitDeque deque(8);
        void* slot = deque.next_slot();
        ::new (slot) CountedJob;
        (void)deque.push_built(slot);
        (void)deque.push_built(slot);
      },
      "wslab: internal check failed");
}

// A thief runs frames in the owner's slots while it forks above the stolen ones: every frame runs
// once and intact, because the owner reuses a stolen frame's slot only after its thief is done,
// and a thief reads a frame only after the CAS that reads from the store that shared it. (The
// relaxed share is weakened_split_deque_share_test.cpp, for ThreadSanitizer.)
// A quick thief, and a few trees with a thief that takes a microsecond or so over each frame.
TEST(SplitDequeFrames, NestedFramesAgainstAThiefRunOnceIntact) {
  for (const auto& [trees, thief_work] : {std::pair{wslab::kSanitized ? 200 : 4'000, 0},
                                          std::pair{wslab::kSanitized ? 20 : 100, 1'000}}) {
    const wslab::test::FramesOutcome outcome =
        wslab::test::nested_frames_against_a_thief<SplitDeque>(trees, 8, thief_work);
    EXPECT_EQ(outcome.not_once, 0u) << "frames not run exactly once, thief work " << thief_work;
    EXPECT_EQ(outcome.torn, 0u) << "frames a thief found torn, thief work " << thief_work;
    EXPECT_FALSE(outcome.left_shared);
  }
}

// The same with an owner that frees a stolen frame's slot at once, without waiting for the thief:
// its next fork builds over the frame the thief is running (a slow thief, to widen the window),
// and the stress sees frames torn, run twice or never. Runs until it is caught, up to 100 runs of
// about 0.1 s: where the two threads share a core with other work (ctest -j2 on two cores) a run
// may pass without one steal inside the window, and five runs missed it in 4 to 7 of 24 tries
// with two copies of the test on two cores.
// (Not under the sanitizers, which would report the broken owner's race rather than let the test
// count it.)
TEST(SplitDequeFrames, AnOwnerThatFreesAStolenSlotAtOnceIsCaught) {
  if (wslab::kSanitized) GTEST_SKIP() << "a sanitizer build";
  if (std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "one core";
  std::uint64_t caught = 0;
  int runs = 0;
  for (; runs < 100 && caught == 0; ++runs) {
    const wslab::test::FramesOutcome outcome =
        wslab::test::nested_frames_against_a_thief<SplitDeque>(
            4'000, 8, 1'000, wslab::test::FreeStolenSlot::at_once);
    caught = outcome.not_once + outcome.torn;
  }
  EXPECT_GT(caught, 0u) << "the broken owner was not caught in " << runs << " runs";
}

}  // namespace
