// Counts the heap allocations the calling thread makes through operator new, to check which
// paths allocate (join's fast path allocates nothing; the generic path one job per fork; a spawn
// without the node cache one node), and fails them on demand (FailAllocationsHere), to check what
// a call does when it cannot. The replacement operators live in allocation_counter.cpp, linked
// into each program that counts: stage5_algos_test, stage5_injector_test, and the cross-stage
// algorithms_test (tests/algorithms/).
#pragma once

#include <atomic>
#include <cstddef>

#include "common/thread_pool.hpp"

namespace wslab::test {

std::size_t allocations_on_this_thread() noexcept;
// Of those, the ones of exactly `size` bytes (sizes under 128; 0 for larger ones).
std::size_t allocations_of_size_on_this_thread(std::size_t size) noexcept;

// While one is alive, every operator new on the constructing thread fails (std::bad_alloc, or
// nullptr from the nothrow form): the out-of-memory paths the reference documents, on demand.
// Keep the scope to the call under test (a failing EXPECT_* allocates its message).
class FailAllocationsHere {
 public:
  FailAllocationsHere() noexcept;
  ~FailAllocationsHere();
  FailAllocationsHere(const FailAllocationsHere&) = delete;
  FailAllocationsHere& operator=(const FailAllocationsHere&) = delete;
};

// Allocations the calling thread makes in f(), measured on one of the pool's workers.
template <class F>
std::size_t allocations_on_a_worker(IThreadPool& pool, F f) {
  std::atomic<std::size_t> allocations{~std::size_t{0}};
  pool.submit([&] {
    const std::size_t before = allocations_on_this_thread();
    f();
    allocations.store(allocations_on_this_thread() - before);
  });
  pool.wait_idle();
  return allocations.load();
}

}  // namespace wslab::test
