// Shared pieces of the stage-5 tests, and of the tests of its algorithms on every registered pool
// (tests/algorithms/): sizes that shrink under sanitizers, an exactly-once counter, a gate, a test
// exception, a tagged sort key, the sort and scan inputs, fib by join, and the timed-leaves
// question as the algorithms ask it. The fixture that runs a test on every registered pool is
// tests/on_every_pool.hpp.
#pragma once

#include "tests/exactly_once.hpp"
#include "tests/flag.hpp"
#include "tests/test_scale.hpp"

#include <cstddef>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/config.hpp"
#include "stage5_parallel_algos/algorithms/range_splitter.hpp"
#include "stage5_parallel_algos/fork_join/join.hpp"

namespace wslab::test {

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

// n ints in one of the sorts' input shapes ("random", "sorted", "reversed", "all_equal",
// "few_unique", "organ_pipe", "sawtooth"); the same for the same arguments.
inline std::vector<int> pattern(const std::string& kind, std::size_t n) {
  std::vector<int> v(n);
  std::mt19937 rng(12345);
  for (std::size_t i = 0; i < n; ++i) {
    const int k = static_cast<int>(i);
    if (kind == "random") v[i] = static_cast<int>(rng());
    if (kind == "sorted") v[i] = k;
    if (kind == "reversed") v[i] = static_cast<int>(n) - k;
    if (kind == "all_equal") v[i] = 42;
    if (kind == "few_unique") v[i] = static_cast<int>(rng() % 4);
    if (kind == "organ_pipe") v[i] = i < n / 2 ? k : static_cast<int>(n) - k;
    if (kind == "sawtooth") v[i] = k % 1000;
  }
  return v;
}

// n values in [-1000, 1000] for the scans, seeded by n.
inline std::vector<std::int64_t> scan_input(std::size_t n) {
  std::vector<std::int64_t> v(n);
  std::mt19937 rng(static_cast<unsigned>(n));
  for (auto& x : v)
    x = static_cast<std::int64_t>(rng() % 2001) - 1000;
  return v;
}

inline std::uint64_t fib_join(IThreadPool& pool, int n) {
  if (n < 2) return static_cast<std::uint64_t>(n);
  auto [a, b] =
      join(pool, [&] { return fib_join(pool, n - 1); }, [&] { return fib_join(pool, n - 2); });
  return a + b;
}

// wants_timed_leaves() on `pool`'s handle, as the algorithms ask it.
inline bool timed_leaves_for(IThreadPool& pool, std::size_t grain) {
  return with_fork_join_pool(
      pool, [&](ForkJoinPool auto handle) { return wants_timed_leaves(handle, grain); });
}

}  // namespace wslab::test
