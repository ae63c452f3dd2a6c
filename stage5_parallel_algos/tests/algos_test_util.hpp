// Shared pieces of the stage-5 tests, and of the tests of its algorithms on every registered pool
// (tests/algorithms/): sizes that shrink under sanitizers, an exactly-once counter, a gate, a test
// exception and a tagged sort key. The fixture that runs a test on every registered pool is
// tests/on_every_pool.hpp.
#pragma once

#include "tests/exactly_once.hpp"
#include "tests/flag.hpp"

#include <cstddef>
#include <stdexcept>

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

// A gate one thread opens (raise()) and others wait at: the shared one-shot flag.
using Gate = Flag;

using VisitCounts = wslab::test::ExactlyOnce;  // each of n items visited exactly once

struct TestFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A sort key tagged with its original position: a sort by key alone is stable exactly when,
// among equal keys, the tags come out increasing.
struct Tagged {
  int key;
  std::size_t tag;
  bool operator==(const Tagged&) const = default;
};

}  // namespace wslab::test
