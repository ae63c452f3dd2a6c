// What the tests of parking and steal sessions watch on a pool at rest: the parks its workers have
// made, and the steal-gate sessions counted while nobody steals.
#pragma once

#include <cstdint>
#include <thread>

#include "common/thread_pool.hpp"
#include "stage5_parallel_algos/scheduler/asymmetric_fence.hpp"

namespace wslab::test {

// Sessions the steal gate counts when nobody steals: one where the heavy fence is unavailable
// (and under TSan), none otherwise (steal_gate.hpp).
inline std::uint32_t idle_gate_count() noexcept {
  return sched::asymmetric_fence_available() ? 0u : 1u;
}

// Waits until the pool's workers have parked `count` times in all (a worker bumps its park counter
// after announcing, so from then on it counts as a sleeper).
inline void wait_for_parks(const IThreadPool& pool, std::uint64_t count) {
  while (pool.stats().total().parks < count)
    std::this_thread::yield();
}

}  // namespace wslab::test
