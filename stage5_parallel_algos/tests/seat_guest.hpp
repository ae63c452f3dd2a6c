// The scheduler lends its guest seat only in a sleeping worker's place (Scheduler::
// try_seat_guest(); README.md, step 'Guest seat'): a test that needs an outside caller seated
// first waits for a worker of its pool to park. Idle workers always do, so the wait ends.
#pragma once

#include <optional>
#include <utility>

#include "stage5_parallel_algos/scheduler/scheduler.hpp"
#include "tests/test_scale.hpp"

namespace wslab::test {

// The seat, taken as soon as a worker of `pool` sleeps (the pool must be idle meanwhile), or none
// after test::kPatience: a seat never freed, or a worker that never parks, fails the test that
// asks.
inline Scheduler::GuestSeat seat_once_a_worker_sleeps(Scheduler& pool) {
  std::optional<Scheduler::GuestSeat> taken;  // a seat can be moved from, not assigned
  (void)eventually([&] {
    if (Scheduler::GuestSeat seat = Scheduler::ForkJoinHandle(pool).try_seat_guest()) {
      taken.emplace(std::move(seat));
      return true;
    }
    return false;
  });
  if (!taken) return {};
  return std::move(*taken);
}

// Returns once a worker of the idle `pool` sleeps, with the seat free: the next outside join or
// algorithm sits on it (nothing wakes the sleeper in between).
inline void wait_until_a_worker_sleeps(Scheduler& pool) {
  (void)seat_once_a_worker_sleeps(pool);
}

}  // namespace wslab::test
