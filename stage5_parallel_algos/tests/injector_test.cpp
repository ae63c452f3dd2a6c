// The scheduler's injector: stage 4's queue with SpareSegments. Drained segments come back for
// the next segment switches (no allocation), up to the four the reference documents, and items
// still pass exactly once while segments are recycled between threads.
#include "stage5_parallel_algos/scheduler/injector.hpp"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <optional>

#include "common/config.hpp"
#include "stage4_chase_lev/injector_queue.hpp"
#include "stage5_parallel_algos/tests/allocation_counter.hpp"
#include "tests/injector_stress.hpp"

namespace {

using wslab::test::allocations_on_this_thread;
using wslab::test::check_mpmc_exactly_once_fifo_per_producer;

constexpr std::size_t kSlots = 4;  // small segments: a switch every four items

// Pushes then pops `items` items, `batch` at a time, checking FIFO order outside the count;
// returns the allocations that took.
template <class Queue>
std::size_t allocations_for_round_trips(Queue& q, std::uint64_t items, std::uint64_t batch) {
  std::uint64_t out_of_order = 0;
  const std::size_t before = allocations_on_this_thread();
  for (std::uint64_t done = 0; done < items; done += batch) {
    for (std::uint64_t i = 0; i < batch; ++i)
      q.push(done + i);
    for (std::uint64_t i = 0; i < batch; ++i)
      out_of_order += q.pop() != std::optional<std::uint64_t>(done + i) ? 1 : 0;
  }
  const std::size_t allocations = allocations_on_this_thread() - before;
  EXPECT_EQ(out_of_order, 0u);
  return allocations;
}

// 1,000 items cross 250 segment switches. Stage 4's default policy allocates a segment for each
// (which shows the counter sees them); the spares serve every switch once the queue has drained.
TEST(SpareSegments, DrainedSegmentsServeLaterSwitchesWithoutAllocating) {
  wslab::chase_lev::InjectorQueue<std::uint64_t, kSlots> fresh;
  EXPECT_GE(allocations_for_round_trips(fresh, 1000, kSlots), 250u);

  wslab::sched::InjectorQueue<std::uint64_t, kSlots> recycled;
  allocations_for_round_trips(recycled, 40, 40);  // ten segments drained: spares fill
  EXPECT_EQ(allocations_for_round_trips(recycled, 1000, kSlots), 0u);
}

// After a long drain, four segments are kept and the rest deleted: four more segment switches
// allocate nothing, the fifth allocates one.
TEST(SpareSegments, KeepsFourDrainedSegments) {
  static_assert(wslab::sched::SpareSegments<int>::kSpares == 4);
  wslab::sched::InjectorQueue<std::uint64_t, kSlots> q;
  allocations_for_round_trips(q, 40, 40);
  const std::size_t before = allocations_on_this_thread();
  for (std::uint64_t i = 0; i < 4 * kSlots; ++i)
    q.push(i);
  const std::size_t after_four = allocations_on_this_thread();
  for (std::uint64_t i = 0; i < kSlots; ++i)
    q.push(i);
  const std::size_t after_five = allocations_on_this_thread();
  EXPECT_EQ(after_four - before, 0u) << "four switches from the spares";
  EXPECT_EQ(after_five - after_four, 1u) << "the fifth switch allocates";
}

constexpr std::uint64_t kPerProducer = wslab::kSanitized ? 50'000 : 500'000;

TEST(SpareSegments, FourProducersFourConsumersExactlyOnceAcrossRecycledSegments) {
  check_mpmc_exactly_once_fifo_per_producer<wslab::sched::InjectorQueue<std::uint64_t, kSlots>>(
      4, 4, kPerProducer);
}

TEST(SpareSegments, TwoSlotSegmentsRecycledOnEveryOtherItem) {
  check_mpmc_exactly_once_fifo_per_producer<wslab::sched::InjectorQueue<std::uint64_t, 2>>(
      3, 3, kPerProducer / 2);
}

}  // namespace
