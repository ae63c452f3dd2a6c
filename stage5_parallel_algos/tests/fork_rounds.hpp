// What the tests of the two forks on a worker, join(pool, a, b) (fork_join_test.cpp) and
// WorkerRef::join (worker_ref_test.cpp), share: a count of live copies, and the four schedulers
// their rounds run on.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <cstddef>

#include "stage5_parallel_algos/scheduler/scheduler.hpp"

namespace wslab::test {

// Counts its live objects: every copy made is destroyed exactly once.
struct Tracked {
  static inline std::atomic<int> live{0};
  Tracked() noexcept { live.fetch_add(1); }
  Tracked(const Tracked&) noexcept { live.fetch_add(1); }
  Tracked(Tracked&&) noexcept { live.fetch_add(1); }
  Tracked& operator=(const Tracked&) = default;
  ~Tracked() { live.fetch_add(-1); }
};

// rounds(pool, stolen) on a one-worker scheduler (nobody can steal b there: stolen is false) and
// on a two-worker one (stolen is true: a round that needs b stolen makes a wait until a thief has
// started it), each with b's frame built in the deque's slot and, step 'Frames in the slot' off,
// in the joining stack. rounds returns how many of its checks failed.
template <class Rounds>
void on_one_and_two_workers(Rounds rounds) {
  for (bool in_slots : {true, false}) {
    for (std::size_t workers : {1u, 2u}) {
      SchedulerKnobs knobs;
      knobs.frames_in_slots = in_slots;
      Scheduler pool(workers, {}, knobs);
      EXPECT_EQ(rounds(pool, workers == 2), 0)
          << workers << " workers, frames in slots " << in_slots;
    }
  }
}

}  // namespace wslab::test
