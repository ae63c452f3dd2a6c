// Build-wide facts every stage needs: the cache-line size we pad to, a CPU pause hint for spin
// loops, whether a sanitizer is watching (stress sizes shrink, and stage 4 swaps fences for
// orderings ThreadSanitizer understands), and the internal checks of the hottest paths.
#pragma once

#include <cstddef>
#include <cstdio>
#include <cstdlib>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#if defined(__SANITIZE_THREAD__)
#define WSLAB_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define WSLAB_TSAN 1
#endif
#endif
#ifndef WSLAB_TSAN
#define WSLAB_TSAN 0
#endif

#if defined(__SANITIZE_ADDRESS__)
#define WSLAB_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define WSLAB_ASAN 1
#endif
#endif
#ifndef WSLAB_ASAN
#define WSLAB_ASAN 0
#endif

#define WSLAB_SANITIZED (WSLAB_TSAN || WSLAB_ASAN)

// WSLAB_ASSERT(cond): an internal check on a path that runs on every fork (a fork's take-back, a
// worker's handle used on its own thread), on only where WSLAB_ASSERTIONS is 1, whatever NDEBUG
// says, as oneTBB's TBB_USE_ASSERT. A fork costs a few nanoseconds: a check there that every
// program compiled without -DNDEBUG paid cost about 5% of fib by pool.join on one thread. The
// project's own Debug, ThreadSanitizer and ASan builds define it (CMakeLists.txt,
// CMakePresets.json); a program may define it too, to run its own tests with the checks.
#ifndef WSLAB_ASSERTIONS
#define WSLAB_ASSERTIONS 0
#endif
#if WSLAB_ASSERTIONS
#define WSLAB_ASSERT(cond) \
  ((cond) ? static_cast<void>(0) : ::wslab::assertion_failed(#cond, __FILE__, __LINE__))
#else
#define WSLAB_ASSERT(cond) static_cast<void>(0)
#endif

namespace wslab {

// 64 bytes is the coherence granule on x86-64 and most ARM cores. We do not use
// std::hardware_destructive_interference_size: GCC warns that its value may differ between
// compilations, which would make the padding part of the ABI by accident. Adjacent-line
// prefetchers can still pair two lines, which this padding does not prevent.
inline constexpr std::size_t kCacheLineSize = 64;

// Tells the CPU we are in a spin-wait: on x86 `pause` stops the spinning core from flooding the
// memory system with speculative loads and hands its pipeline to a sibling hyper-thread.
inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

// True when the build runs under a sanitizer; tests use it to scale stress sizes down.
inline constexpr bool kSanitized = WSLAB_SANITIZED;

// What a failed WSLAB_ASSERT calls.
[[noreturn, gnu::cold, gnu::noinline]] inline void assertion_failed(const char* what,
                                                                    const char* file,
                                                                    int line) noexcept {
  std::fprintf(stderr, "wslab: internal check failed: %s (%s:%d)\n", what, file, line);
  std::abort();
}

}  // namespace wslab
