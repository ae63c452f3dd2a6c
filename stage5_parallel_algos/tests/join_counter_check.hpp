// Two children write their results and arrive at a co_join's counter; the one told to resume the
// parent reads both, as the resumed parent does. Shared by coro_test.cpp (the shipped counter)
// and weakened_join_counter_test.cpp (the relaxed one, which ThreadSanitizer must catch).
#pragma once

#include <coroutine>
#include <thread>

#include "stage5_parallel_algos/coro/co_task.hpp"

namespace wslab::test {

// Returns how many rounds resumed the parent exactly once with both results in place.
template <class Counter>
int children_arrive_and_the_last_reads_both(int rounds) {
  // A handle that is only compared, never resumed.
  static int parent_frame_stand_in;
  const auto parent = std::coroutine_handle<>::from_address(&parent_frame_stand_in);
  int good = 0;
  for (int r = 0; r < rounds; ++r) {
    int result_a = 0, result_b = 0;  // plain: published only by the counter's orderings
    int sum_a = -1, sum_b = -1;
    Counter counter(2, parent);
    std::thread b([&] {
      result_b = 2;
      if (counter.arrive() == parent) sum_b = result_a + result_b;
    });
    result_a = 1;
    if (counter.arrive() == parent) sum_a = result_a + result_b;
    b.join();
    if ((sum_a == 3) != (sum_b == 3)) ++good;  // exactly one resumed, and saw both
  }
  return good;
}

}  // namespace wslab::test
