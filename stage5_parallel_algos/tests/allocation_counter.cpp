#include "stage5_parallel_algos/tests/allocation_counter.hpp"

#include <cstdlib>
#include <new>

namespace {
thread_local std::size_t allocations_here = 0;
constexpr std::size_t kSizesCounted = 128;
thread_local std::size_t allocations_by_size[kSizesCounted] = {};

thread_local std::size_t failing_scopes = 0;  // FailAllocationsHere objects alive on this thread

void count(std::size_t size) noexcept {
  ++allocations_here;
  if (size < kSizesCounted) ++allocations_by_size[size];
}
}  // namespace

wslab::test::FailAllocationsHere::FailAllocationsHere() noexcept {
  ++failing_scopes;
}
wslab::test::FailAllocationsHere::~FailAllocationsHere() {
  --failing_scopes;
}

std::size_t wslab::test::allocations_on_this_thread() noexcept {
  return allocations_here;
}
std::size_t wslab::test::allocations_of_size_on_this_thread(std::size_t size) noexcept {
  return size < kSizesCounted ? allocations_by_size[size] : 0;
}

void* operator new(std::size_t size) {
  count(size);
  if (failing_scopes != 0) throw std::bad_alloc();
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
// The nothrow form too: every form that pairs with the deletes below must come from malloc.
// (std::stable_sort's temporary buffer uses it; left to the sanitizer's own allocator, its block
// reached our free() and AddressSanitizer rightly reported operator new vs free.)
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  count(size);
  if (failing_scopes != 0) return nullptr;
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
