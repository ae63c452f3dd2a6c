// The fixture of the tests that run on every registered pool (tests/algorithms/, demos/tests/):
// parameterised over the names of registry/pools.hpp, each test makes its pool by name. Stage
// 5's own tests make their pools directly and do not include this.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/thread_pool.hpp"
#include "registry/pools.hpp"

namespace wslab::test {

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

}  // namespace wslab::test

#define WSLAB_INSTANTIATE_ON_EVERY_POOL(Suite)                                                 \
  INSTANTIATE_TEST_SUITE_P(Pools, Suite, ::testing::ValuesIn(::wslab::test::all_pool_names()), \
                           [](const auto& pool_info) { return pool_info.param; })
