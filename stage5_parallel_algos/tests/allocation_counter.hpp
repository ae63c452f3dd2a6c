// Counts the heap allocations the calling thread makes through operator new, to check which
// paths allocate (join's fast path allocates nothing; the generic path one job per fork; a
// spawn without the node cache one node). The replacement operators live in
// allocation_counter.cpp, linked into each program that counts: stage5_algos_test,
// stage5_injector_test, and the cross-stage algorithms_test (tests/algorithms/).
#pragma once

#include <cstddef>

namespace wslab::test {

std::size_t allocations_on_this_thread() noexcept;

}  // namespace wslab::test
