// The invariant most stress tests check: each of n items (tasks, indices, queue entries) was seen
// exactly once. Shared by the conformance suite and the stages' own tests.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace wslab::test {

class ExactlyOnce {
 public:
  explicit ExactlyOnce(std::size_t n) : counts_(n) {}
  std::size_t size() const noexcept { return counts_.size(); }
  // Any thread; .at(): an out-of-range item is a bug in the code under test, not a crash here.
  void mark(std::size_t i) { counts_.at(i).fetch_add(1, std::memory_order_relaxed); }
  void expect_each_once() const {
    std::size_t missing = 0, repeated = 0;
    for (const auto& c : counts_) {
      const auto v = c.load(std::memory_order_relaxed);
      missing += v == 0;
      repeated += v > 1;
    }
    EXPECT_EQ(missing, 0u) << "items never seen (lost)";
    EXPECT_EQ(repeated, 0u) << "items seen more than once (duplicated)";
  }

 private:
  std::vector<std::atomic<std::uint32_t>> counts_;
};

}  // namespace wslab::test
