// How much a test does and how long it waits, whatever the build: scaled() shrinks a stress test's
// work under a sanitizer (and in an unoptimised build), and eventually() gives a condition a
// generous deadline, so that a broken pool fails the test instead of hanging it. The deadline
// never hides a race: a test asserts what eventually() returns.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "common/config.hpp"

namespace wslab::test {

#if defined(NDEBUG)
inline constexpr bool kOptimised = true;
#else
inline constexpr bool kOptimised = false;
#endif

constexpr std::size_t scaled(std::size_t release, std::size_t sanitized) {
  return kSanitized ? sanitized : (kOptimised ? release : release / 10);
}

// How long a test waits for something that takes microseconds on a healthy pool, before it calls
// it a failure: long enough for a loaded CI machine and a sanitizer's slowdown.
inline constexpr std::chrono::seconds kPatience{60};

// Yields until done() holds; false if it still does not after `deadline`.
template <class Pred>
bool eventually(Pred done, std::chrono::steady_clock::duration deadline = kPatience) {
  const auto give_up = std::chrono::steady_clock::now() + deadline;
  while (!done()) {
    if (std::chrono::steady_clock::now() > give_up) return false;
    std::this_thread::yield();
  }
  return true;
}

// A hang cannot be undone (a pool stuck in a wait cannot be destroyed either), so a test whose
// scenario hung says what hung and ends the process: a failure, not a stuck test run.
[[noreturn]] inline void fail_hung(const char* what) {
  // On stdout too: a test may be capturing stderr.
  std::printf("FAILED (hang): %s\n", what);
  std::fflush(stdout);
  std::fprintf(stderr, "FAILED (hang): %s\n", what);
  std::fflush(stderr);
  std::_Exit(1);
}

}  // namespace wslab::test
