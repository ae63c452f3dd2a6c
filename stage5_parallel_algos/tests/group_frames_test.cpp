// Group frames (README.md, step 'Group frames'; scheduler/group_frame.hpp): a task group's small
// callables written into the home worker's frame deque. group_jobs_test.cpp's shapes run on
// frames too (their callables fit one); these are the frames' own: a callable whose run() writes
// a frame into the very slot it was popped from, callables past the frame deque's cap, callables
// that fit no frame beside ones that do, and the step switched off.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "stage5_parallel_algos/threadpool.hpp"

namespace wslab {
namespace {

// Runs body as a task of `pool` and waits for it from outside.
template <class Pool, class Body>
void run_inside(Pool& pool, Body body) {
  pool.spawn(body);
  pool.wait_idle();
}

std::unique_ptr<std::atomic<int>[]> zeroed(std::size_t n) {
  std::unique_ptr<std::atomic<int>[]> counts(new std::atomic<int>[n]);
  for (std::size_t i = 0; i < n; ++i)
    counts[i].store(0);
  return counts;
}

std::size_t not_once(const std::unique_ptr<std::atomic<int>[]>& counts, std::size_t n) {
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < n; ++i)
    wrong += counts[i].load() != 1 ? 1 : 0;
  return wrong;
}

// The home's wait runs a frame in its slot, and the frame's first act pushes a child frame, which
// lands in that same slot (the pop left the deque's bottom there). The callable reads its
// captures only after the push: they are intact only if the frame's run function copied the
// callable out before calling it. `out` comes first, in the word the child's capture overwrites.
TEST(GroupFrames, ACallableThatAddsToItsGroupKeepsItsCaptures) {
  for (std::size_t threads : {1, 2}) {
    Scheduler pool(threads);
    constexpr int kCallables = 2000;
    auto outs = zeroed(kCallables);
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
      auto ran = zeroed(kCallables);
      run_inside(pool, [&] {
        TaskGroup g(pool);
        for (std::size_t i = 0; i < kCallables; ++i)
          g.run([&ran, i] { ran[i].fetch_add(1); });
        g.wait();
      });
      EXPECT_EQ(not_once(ran, kCallables), 0u) << threads << " worker(s), round " << round;
    }
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
      auto small = zeroed(kEach), owning = zeroed(kEach), large = zeroed(kEach);
      run_inside(pool, [&] {
        TaskGroup g(pool);
        for (std::size_t i = 0; i < kEach; ++i) {
          g.run([&small, i] { small[i].fetch_add(1); });
          g.run([&owning, i, text = std::string(40, 'x')] {
            if (text.size() == 40) owning[i].fetch_add(1);
          });
          std::array<std::uint64_t, 6> pad{};
          pad[5] = i;
          g.run([&large, pad] { large[pad[5]].fetch_add(1); });
        }
        g.wait();
      });
      EXPECT_EQ(not_once(small, kEach), 0u) << frames << " " << threads;
      EXPECT_EQ(not_once(owning, kEach), 0u) << frames << " " << threads;
      EXPECT_EQ(not_once(large, kEach), 0u) << frames << " " << threads;
    }
  }
}

}  // namespace
}  // namespace wslab
