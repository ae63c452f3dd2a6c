// Shared pieces of the stage-5 tests: sizes that shrink under sanitizers, the per-pool fixture,
// and an exactly-once counter.
#pragma once

#include <gtest/gtest.h>

#include "tests/exactly_once.hpp"
#include "tests/flag.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "registry/pools.hpp"
#include "stage5_parallel_algos/scheduler/scheduler.hpp"

namespace wslab::test {

#if defined(NDEBUG)
inline constexpr bool kOptimised = true;
#else
inline constexpr bool kOptimised = false;
#endif

constexpr std::size_t scaled(std::size_t release, std::size_t sanitized) {
  return kSanitized ? sanitized : (kOptimised ? release : release / 10);
}

// Parameterised over every registered pool name.
class OnEveryPool : public ::testing::TestWithParam<std::string> {
 protected:
  std::unique_ptr<IThreadPool> make(std::size_t threads) const {
    return make_pool(GetParam(), threads);
  }
};

// Every registered pool, stage 5's own scheduler among them.
inline std::vector<std::string> all_pool_names() {
  std::vector<std::string> names;
  for (std::string_view n : pool_names())
    names.emplace_back(n);
  return names;
}

// The same, followed by every lab variant.
inline std::vector<std::string> all_pool_and_variant_names() {
  std::vector<std::string> names = all_pool_names();
  for (std::string_view n : variant_names())
    names.emplace_back(n);
  return names;
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

#define WSLAB_INSTANTIATE_ON_EVERY_POOL(Suite)                                                 \
  INSTANTIATE_TEST_SUITE_P(Pools, Suite, ::testing::ValuesIn(::wslab::test::all_pool_names()), \
                           [](const auto& pool_info) { return pool_info.param; })
