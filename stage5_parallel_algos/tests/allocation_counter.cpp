#include "stage5_parallel_algos/tests/allocation_counter.hpp"

#include <cstdlib>
#include <new>

namespace {
thread_local std::size_t allocations_here = 0;
}  // namespace

std::size_t wslab::test::allocations_on_this_thread() noexcept {
  return allocations_here;
}

void* operator new(std::size_t size) {
  ++allocations_here;
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
// The nothrow form too: every form that pairs with the deletes below must come from malloc.
// (std::stable_sort's temporary buffer uses it; left to the sanitizer's own allocator, its block
// reached our free() and AddressSanitizer rightly reported operator new vs free.)
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  ++allocations_here;
  return std::malloc(size == 0 ? 1 : size);
}
// Out of line: inlined into a caller, GCC would see free() applied to the result of operator new
// (it does not know ours is malloc-based) and warn.
[[gnu::noinline]] void operator delete(void* p) noexcept {
  std::free(p);
}
[[gnu::noinline]] void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}
[[gnu::noinline]] void operator delete(void* p, const std::nothrow_t&) noexcept {
  std::free(p);
}
