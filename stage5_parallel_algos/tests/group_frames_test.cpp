// Group frames (README.md, step 'Group frames'; scheduler/group_frame.hpp): a task group's small
// callables written into the home worker's frame deque. group_jobs_test.cpp's shapes run on
// frames too (their callables fit one); these are the frames' own: a callable whose run() writes
// a frame into the very slot it was popped from, callables past the frame deque's cap, callables
// that fit no frame beside ones that do, and the step switched off; a group's rounds after one
// that reached the cap, and frames written while the group is cancelled; and the wake-ups a
// frame's push owes a sleeping worker, which is the only one that can run it while its owner
// blocks. And the frame deques given back once the pool is idle, by a worker and by a guest
// leaving the seat, and kept with that step off.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "stage5_parallel_algos/tests/blocked_task.hpp"
#include "stage5_parallel_algos/tests/idle_pool.hpp"
#include "stage5_parallel_algos/tests/seat_guest.hpp"
#include "stage5_parallel_algos/threadpool.hpp"
#include "tests/exactly_once.hpp"
#include "tests/test_scale.hpp"

namespace wslab {
namespace {

// Runs body as a task of `pool` and waits for it from outside.
template <class Pool, class Body>
void run_inside(Pool& pool, Body body) {
  pool.spawn(body);
  pool.wait_idle();
}

// The home's wait runs a frame in its slot, and the frame's first act pushes a child frame, which
// lands in that same slot (the pop left the deque's bottom there). The callable reads its
// captures only after the push: they are intact only if the frame's run function copied the
// callable out before calling it. `out` comes first, in the word the child's capture overwrites.
TEST(GroupFrames, ACallableThatAddsToItsGroupKeepsItsCaptures) {
  for (std::size_t threads : {1, 2}) {
    Scheduler pool(threads);
    constexpr int kCallables = 2000;
    std::vector<std::atomic<int>> outs(kCallables);  // zeros
    std::atomic<int> children{0};
    run_inside(pool, [&] {
      TaskGroup g(pool);
      for (int i = 0; i < kCallables; ++i) {
        g.run([out = &outs[static_cast<std::size_t>(i)], i, &g, &children] {
          g.run([&children] { children.fetch_add(1); });
          out->fetch_add(i + 1);
        });
      }
      g.wait();
    });
    int wrong = 0;
    for (int i = 0; i < kCallables; ++i)
      wrong += outs[static_cast<std::size_t>(i)].load() != i + 1 ? 1 : 0;
    EXPECT_EQ(wrong, 0) << threads << " worker(s): callables that lost their captures";
    EXPECT_EQ(children.load(), kCallables) << threads << " worker(s)";
  }
}

// A frame deque of at most 8 frames, starting at 2: the first callables of a round are frames
// (the deque grows twice), the rest group jobs, and a thief takes from both. Each runs once,
// round after round.
TEST(GroupFrames, CallablesPastTheFrameDequesCapRunEachOnce) {
  for (std::size_t threads : {1, 2}) {
    SchedulerKnobs knobs;
    knobs.deque_capacity = 2;
    knobs.group_frames_capacity = 8;
    Scheduler pool(threads, {}, knobs);
    constexpr std::size_t kCallables = 5000;
    for (int round = 0; round < 3; ++round) {
      test::ExactlyOnce ran(kCallables);
      run_inside(pool, [&] {
        TaskGroup g(pool);
        for (std::size_t i = 0; i < kCallables; ++i)
          g.run([&ran, i] { ran.mark(i); });
        g.wait();
      });
      SCOPED_TRACE(testing::Message() << threads << " worker(s), round " << round);
      ran.expect_each_once();
    }
  }
}

// A callable that tells where it runs: in a frame, the run function calls a copy of it made on
// the running thread's stack (a frame is read out of its slot first); as a group job, it is
// called where it was built, in a block of the heap. Plain bytes of 16, so it fits a frame.
struct WhereItRuns {
  std::atomic<int>* on_stack;
  std::atomic<int>* elsewhere;
  void operator()() const {
    const int local = 0;
    const auto self = reinterpret_cast<std::uintptr_t>(this);
    const auto here = reinterpret_cast<std::uintptr_t>(&local);
    const std::uintptr_t distance = self > here ? self - here : here - self;
    (distance < 4096 ? on_stack : elsewhere)->fetch_add(1);
  }
};

// A round that reaches the frame deque's cap sends the rest of its callables another way, for that
// round only (step 'One look per push': the mark's frame home is cleared, and wait() restores it):
// the same group's next round writes frames again. A wait that does not restore the frame home
// sends every later round of the group to group jobs (checked on such a build).
TEST(GroupFrames, AGroupsNextRoundAfterTheCapUsesFramesAgain) {
  SchedulerKnobs knobs;
  knobs.deque_capacity = 2;
  knobs.group_frames_capacity = 8;
  Scheduler pool(1, {}, knobs);
  std::atomic<int> first_frames{0}, first_jobs{0}, next_frames{0}, next_jobs{0};
  run_inside(pool, [&] {
    TaskGroup g(pool);
    for (int i = 0; i < 100; ++i)
      g.run(WhereItRuns{&first_frames, &first_jobs});
    g.wait();
    for (int i = 0; i < 4; ++i)
      g.run(WhereItRuns{&next_frames, &next_jobs});
    g.wait();
  });
  EXPECT_EQ(first_frames.load() + first_jobs.load(), 100);
  EXPECT_EQ(first_frames.load(), 8) << "the first round fills the frame deque to its cap";
  EXPECT_EQ(next_frames.load(), 4) << "the next round's callables are not frames";
  EXPECT_EQ(next_jobs.load(), 0);
}

// run() writes a frame whether or not its group is cancelled (step 'One look per push'); each such
// frame is skipped when it runs, here or on the thief that took it, since the cancellation holds
// until wait() has waited for all of them. The next round runs every callable. A frame run
// function that does not look at the cancellation fails here (checked on such a build).
TEST(GroupFrames, FramesWrittenWhileTheGroupIsCancelledAreSkippedHereAndByThieves) {
  for (std::size_t threads : {1, 2}) {
    Scheduler pool(threads);
    constexpr int kCallables = 5000;
    std::atomic<int> ran_cancelled{0}, ran_next{0}, on_stack{0}, elsewhere{0};
    run_inside(pool, [&] {
      TaskGroup g(pool);
      g.cancel();
      for (int i = 0; i < kCallables; ++i)
        g.run([&ran_cancelled] { ran_cancelled.fetch_add(1); });
      g.wait();
      EXPECT_FALSE(g.is_cancelled());
      for (int i = 0; i < kCallables; ++i)
        g.run([&ran_next] { ran_next.fetch_add(1); });
      g.run(WhereItRuns{&on_stack, &elsewhere});
      g.wait();
    });
    EXPECT_EQ(ran_cancelled.load(), 0) << threads << " worker(s)";
    EXPECT_EQ(ran_next.load(), kCallables) << threads << " worker(s)";
    EXPECT_EQ(on_stack.load(), 1) << threads << " worker(s): the callables were not frames";
  }
}

// Frames only for plain bytes of up to 48: a callable that owns a std::string, and one of 56
// bytes, go as group jobs, in the same group as frames, each once; and with the step off, all of
// them do.
TEST(GroupFrames, CallablesThatFitNoFrameRunBesideThoseThatDo) {
  for (bool frames : {true, false}) {
    for (std::size_t threads : {1, 2}) {
      SchedulerKnobs knobs;
      knobs.group_frames = frames;
      Scheduler pool(threads, {}, knobs);
      constexpr std::size_t kEach = 1000;
      test::ExactlyOnce small(kEach), owning(kEach), large(kEach);
      run_inside(pool, [&] {
        TaskGroup g(pool);
        for (std::size_t i = 0; i < kEach; ++i) {
          g.run([&small, i] { small.mark(i); });
          g.run([&owning, i, text = std::string(40, 'x')] {
            if (text.size() == 40) owning.mark(i);
          });
          std::array<std::uint64_t, 6> pad{};
          pad[5] = i;
          g.run([&large, pad] { large.mark(pad[5]); });
        }
        g.wait();
      });
      SCOPED_TRACE(testing::Message() << "frames " << frames << ", " << threads << " worker(s)");
      small.expect_each_once();
      owning.expect_each_once();
      large.expect_each_once();
    }
  }
}

// From a task of `pool`: pushes a frame that this task does not wait for, and says whether another
// thread ran it within the watchdog's patience (not a timing: a woken worker takes it within
// microseconds); then waits for the group, which runs the frame here if nobody came.
bool a_frame_runs_elsewhere(Scheduler& pool) {
  TaskGroup g(pool);
  std::atomic<bool> ran{false};
  g.run([&ran] { ran.store(true); });
  const bool elsewhere = test::eventually([&] { return ran.load(); });
  g.wait();
  return elsewhere;
}

// A frame pushed while the other worker sleeps wakes it (step 'Parking'): its owner does not wait
// for the frame, so unless the sleeper comes nobody runs it (the promise that a blocked task's
// partner runs elsewhere). Before it the owner pushed a frame while the other worker was busy (a
// blocked task), whose push found nobody asleep: what a push found before does not excuse the
// next one from looking. A build whose frame pushes do not look fails here (checked on such a
// build), and so does one that stops looking once a look found nobody asleep (checked).
TEST(GroupFrames, APushAfterAWorkerParkedWakesIt) {
  std::atomic<bool> done{false};  // before the pool: its task may outlive a failed check
  bool ran_elsewhere = false;
  Scheduler pool(2);
  test::BlockedTask busy(pool);  // the other worker, busy during the owner's first push
  pool.spawn([&] {
    {
      TaskGroup g(pool);
      int ran = 0;
      g.run([&ran] { ++ran; });  // finds nobody asleep
      g.wait();
      EXPECT_EQ(ran, 1);
    }
    const std::uint64_t parks = pool.stats().total().parks;
    busy.release();
    test::wait_for_parks(pool, parks + 1);
    ran_elsewhere = a_frame_runs_elsewhere(pool);
    done.store(true);
  });
  pool.wait_idle();
  ASSERT_TRUE(done.load());
  EXPECT_TRUE(ran_elsewhere) << "the frame pushed after a worker parked woke nobody";
}

// The same for a worker that comes back from a guest's loan (step 'Guest seat'): while the only
// other worker is lent to a guest, the owner's pushes find nobody to wake (the first notes the
// skipped wake-up for the guest); the guest leaves, which makes the lent worker a sleeper again
// without a park of its own, and its re-scan finds no work. The owner's next push must wake that
// worker. A build whose frame pushes do not look fails here, and so does one whose pushes stop
// looking once a look found nobody asleep, until a thread next parks: the leave is not a park
// (each checked on such a build).
TEST(GroupFrames, APushAfterAGuestLeftWakesTheWorkerItHadBorrowed) {
  std::atomic<int> stage{0};  // 1: the guest sits; 2: the owner asks it to leave; 3: it left
  std::atomic<bool> done{false};
  bool ran_elsewhere = false;
  Scheduler pool(2);
  pool.spawn([&] {
    ASSERT_TRUE(test::eventually([&] { return stage.load() == 1; }));
    {
      TaskGroup g(pool);
      int ran = 0;
      g.run([&ran] { ++ran; });  // finds only the lent worker: notes the skip
      g.run([&ran] { ++ran; });  // finds the skip noted, nobody asleep
      g.wait();
      EXPECT_EQ(ran, 2);
    }
    stage.store(2);
    ASSERT_TRUE(test::eventually([&] { return stage.load() == 3; }));
    ran_elsewhere = a_frame_runs_elsewhere(pool);
    done.store(true);
  });
  {
    Scheduler::GuestSeat seat = test::seat_once_a_worker_sleeps(pool);  // the other worker's
    ASSERT_TRUE(seat);
    stage.store(1);
    ASSERT_TRUE(test::eventually([&] { return stage.load() == 2; }));
  }
  stage.store(3);
  pool.wait_idle();
  ASSERT_TRUE(done.load());
  EXPECT_TRUE(ran_elsewhere) << "the frame pushed after the guest left woke nobody";
}

// ---- frames given back (README.md, step 'Frames given back') ----

// More callables in one round than a frame deque's first buffer holds: the home's deque grows
// (and, on two workers, a thief's, which steals frames in batches onto its own).
constexpr std::size_t kBurst = 100'000;

// Once the pool is idle, every worker asleep for 50 ms gives its frame deque back: each holds its
// first buffer alone again. Each callable runs once. Without the give-back in the worker's idle
// time (checked), the grown buffers stay and the wait runs out.
TEST(FramesGivenBack, AnIdlePoolHoldsOnlyItsFirstBuffers) {
  for (std::size_t threads : {1, 2}) {
    Scheduler pool(threads);
    const std::size_t first = pool.frame_slots_held();
    std::atomic<std::size_t> ran{0};
    std::size_t grown = 0;
    run_inside(pool, [&] {
      TaskGroup g(pool);
      for (std::size_t i = 0; i < kBurst; ++i)
        g.run([&ran] { ran.fetch_add(1, std::memory_order_relaxed); });
      g.wait();
      grown = pool.frame_slots_held();  // the home is busy here: nothing given back yet
    });
    EXPECT_EQ(ran.load(), kBurst) << threads << " worker(s)";
    EXPECT_GT(grown, first) << threads << " worker(s): the burst did not grow a frame deque";
    EXPECT_TRUE(test::eventually([&] { return pool.frame_slots_held() == first; }))
        << threads << " worker(s): " << pool.frame_slots_held() << " slots held, " << first
        << " before the burst";
  }
}

// A guest leaves the seat with the buffers its frame deque outgrew freed, at once (no worker
// steals: the only one sleeps in the guest's place), and keeps its largest for the next guest.
// Without the give-back in leave_guest_seat() (checked), the outgrown buffers stay.
TEST(FramesGivenBack, AGuestLeavesTheSeatWithItsLargestBufferAlone) {
  Scheduler pool(1);
  const std::size_t first = pool.frame_slots_held();
  std::size_t ran = 0;
  std::size_t grown = 0;
  {
    Scheduler::GuestSeat seat = test::seat_once_a_worker_sleeps(pool);
    ASSERT_TRUE(seat);
    TaskGroup g(pool);
    for (std::size_t i = 0; i < kBurst; ++i)
      g.run([&ran] { ++ran; });
    g.wait();
    grown = pool.frame_slots_held();
  }
  EXPECT_EQ(ran, kBurst);
  // The seat's buffers: 256 slots doubled up to 131,072 (the burst's 100,000 fit), all held.
  const std::size_t largest = 131'072;
  EXPECT_EQ(grown, first - 256 + 2 * largest - 256);
  EXPECT_EQ(pool.frame_slots_held(), first - 256 + largest);
}

// With the step off, an idle pool keeps what its frame deques grew to; the same burst, and the
// pool idle long enough that a worker's idle time has freed the node depot, which happens at the
// same moment.
TEST(FramesGivenBack, SwitchedOffAnIdlePoolKeepsItsBuffers) {
  SchedulerKnobs knobs;
  knobs.give_back_frames = false;
  Scheduler pool(1, {}, knobs);
  const std::size_t first = pool.frame_slots_held();
  std::atomic<std::size_t> ran{0};
  run_inside(pool, [&] {
    TaskGroup g(pool);
    for (std::size_t i = 0; i < kBurst; ++i)
      g.run([&ran] { ran.fetch_add(1, std::memory_order_relaxed); });
    g.wait();
    // A spawned backlog beyond the worker's node cache leaves nodes in the depot.
    for (std::size_t i = 0; i < 40'000; ++i)
      pool.spawn([&ran] { ran.fetch_add(1, std::memory_order_relaxed); });
  });
  EXPECT_EQ(ran.load(), kBurst + 40'000);
  ASSERT_TRUE(test::eventually([&] { return pool.depot_nodes() == 0; }));
  EXPECT_GT(pool.frame_slots_held(), first);
}

// ---- runs of one frame function (README.md, step 'Runs of one frame function') ----

// A run of frames, led by the first frame the waiter's loop pops, does what that loop does
// between two frames: the step changes no order, which each test below checks with the step on
// and off. 40 frames of one callable type: enough for a run (kFramesForARun).
class FrameRuns : public testing::TestWithParam<bool> {
 protected:
  static SchedulerKnobs knobs() {
    SchedulerKnobs k;
    k.frame_runs = GetParam();
    return k;
  }
  static constexpr int kFrames = 40;
};

// A callable's spawn() goes on the Chase-Lev deque above the group's mark: newer than the frames
// below, it runs before the next of them. A run that looked only at the frame deque would run all
// the frames first (checked: the spawned task then comes last).
TEST_P(FrameRuns, ACallablesSpawnRunsBeforeTheNextFrame) {
  Scheduler pool(1, {}, knobs());
  std::vector<int> order;
  run_inside(pool, [&] {
    TaskGroup g(pool);
    for (int i = 0; i < kFrames; ++i) {
      g.run([&order, &pool, i] {
        order.push_back(i);
        if (i == 30) pool.spawn([&order] { order.push_back(-1); });
      });
    }
    g.wait();
  });
  std::vector<int> expected;
  for (int i = kFrames - 1; i >= 30; --i)
    expected.push_back(i);
  expected.push_back(-1);
  for (int i = 29; i >= 0; --i)
    expected.push_back(i);
  EXPECT_EQ(order, expected);
}

// A callable in the middle of the outer group's run makes an inner group of the same callable
// type and waits: the inner wait's run takes the inner frames and stops at the inner group's mark,
// leaving the outer frames below it (same function, same deque) to the outer wait. A run that
// ignored the mark would run them inside the inner wait (checked: they then come before its
// return, -38).
struct Note {
  std::vector<int>* order;
  Scheduler* pool;
  int id;
  void operator()() const {
    order->push_back(id);
    if (id != 38) return;
    TaskGroup inner(*pool);
    for (int i = 100; i < 120; ++i)
      inner.run(Note{order, pool, i});
    inner.wait();
    order->push_back(-38);
  }
};
static_assert(std::is_trivially_copyable_v<Note> && sizeof(Note) <= sched::kFrameCallableBytes);

TEST_P(FrameRuns, AnInnerGroupsRunStopsAtItsMark) {
  Scheduler pool(1, {}, knobs());
  std::vector<int> order;
  run_inside(pool, [&] {
    TaskGroup outer(pool);
    for (int i = 0; i < kFrames; ++i)
      outer.run(Note{&order, &pool, i});
    outer.wait();
  });
  std::vector<int> expected{kFrames - 1, 38};
  for (int i = 119; i >= 100; --i)
    expected.push_back(i);
  expected.push_back(-38);
  for (int i = 37; i >= 0; --i)
    expected.push_back(i);
  EXPECT_EQ(order, expected);
}

// A callable destroys the pool, the run's first (its leader) or one in the run: the destructor, on
// that worker, runs the frames below it, and the run, back from the callable, touches the worker
// no more (under ASan, a run without either look at the orphaned flag reads the freed worker and
// the process dies: checked).
TEST_P(FrameRuns, ACallableThatDestroysThePoolEndsTheRun) {
  for (const int destroyer : {kFrames - 1, 30}) {
    testing::internal::CaptureStderr();
    auto* pool = new Scheduler(1, {}, knobs());
    test::ExactlyOnce counts(kFrames);
    std::atomic<bool> done{false};
    pool->spawn([pool, &counts, &done, destroyer] {
      {
        TaskGroup g(*pool);
        for (int i = 0; i < kFrames; ++i) {
          g.run([pool, &counts, i, destroyer] {
            counts.mark(static_cast<std::size_t>(i));
            if (i == destroyer) delete pool;
          });
        }
        g.wait();
      }
      done.store(true);
    });
    while (!done.load())
      std::this_thread::yield();
    (void)testing::internal::GetCapturedStderr();
    SCOPED_TRACE(testing::Message() << "the pool destroyed by callable " << destroyer);
    counts.expect_each_once();
  }
}

// A chain of groups on a worker whose stack holds about a hundred of its levels, each level a round
// of 20 frames of one type whose oldest recurses: past three quarters of the stack the waiter's
// loop hands each frame to a fresh thread (README.md, step 'A group's own work in one loop'),
// which carries the rest of the chain, as a thread outside the pool, if it is the oldest's. A run
// starts only on the home's own thread, so no fresh thread runs more of a level made on the worker
// than the one frame it was handed (a run started there popped the home's deque from a thread
// that is no worker: checked).
struct FreshStackChain {
  static constexpr std::size_t kDepth = 140, kWidth = 20;
  explicit FreshStackChain(Scheduler& p) : pool(&p) {}
  Scheduler* pool;
  test::ExactlyOnce ran{kDepth * kWidth};
  // Of the levels made on the worker, the callables another thread ran, and the most of one level
  // that one thread ran. Counted per thread in thread_local storage, which a fresh thread starts
  // afresh (a thread's id may be reused by the next one).
  std::atomic<int> off_worker{0}, most{0};
  std::thread::id worker;

  void level(std::size_t at) {
    volatile char pad[2048];  // a frame this large makes the chain outgrow the worker's stack
    pad[0] = static_cast<char>(at);
    if (at == kDepth) return;
    const bool made_on_worker = std::this_thread::get_id() == worker;
    TaskGroup group(*pool);
    for (std::size_t i = 0; i < kWidth; ++i) {
      // 32 bytes, trivially copyable: a frame.
      group.run([chain = this, at, i, made_on_worker] { chain->callable(at, i, made_on_worker); });
    }
    group.wait();
    EXPECT_EQ(pad[0], static_cast<char>(at));
  }
  void callable(std::size_t at, std::size_t i, bool made_on_worker) {
    ran.mark(at * kWidth + i);
    if (made_on_worker && std::this_thread::get_id() != worker) {
      thread_local std::size_t level_here = kDepth;
      thread_local int ran_here = 0;
      if (level_here != at) {
        level_here = at;
        ran_here = 0;
      }
      off_worker.fetch_add(1);
      const int n = ++ran_here;
      int seen = most.load();
      while (n > seen && !most.compare_exchange_weak(seen, n)) {
      }
    }
    if (i == 0) level(at + 1);  // the oldest frame, run last: the chain goes on there
  }
};

TEST_P(FrameRuns, NoRunStartsOnAFreshStack) {
  PoolOptions options;
  options.stack_size = 256 * 1024;
  Scheduler pool(1, options, knobs());
  FreshStackChain chain(pool);
  run_inside(pool, [&] {
    chain.worker = std::this_thread::get_id();
    chain.level(0);
  });
  chain.ran.expect_each_once();
  ASSERT_GT(chain.off_worker.load(), 0) << "the chain never reached a fresh stack on the worker";
  EXPECT_EQ(chain.most.load(), 1) << "a fresh thread ran more of a worker's level than its frame";
}

INSTANTIATE_TEST_SUITE_P(StepOnAndOff, FrameRuns, testing::Bool(),
                         [](const testing::TestParamInfo<bool>& param_info) {
                           return param_info.param ? std::string("runs") : std::string("no_runs");
                         });

}  // namespace
}  // namespace wslab
