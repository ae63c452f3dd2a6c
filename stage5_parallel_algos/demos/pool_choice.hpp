// Choosing a pool by name for the demos and benchmarks: every pool of the registry, plus stage 4
// even before it is registered there (join's fast path is stage 4's, so stage 5 always shows it).
#pragma once

#include <algorithm>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "harness/pools.hpp"
#include "stage4_chase_lev/chase_lev_pool.hpp"

namespace wslab::demo {

inline std::vector<std::string> pool_choices() {
  std::vector<std::string> names;
  for (std::string_view n : pool_names())
    names.emplace_back(n);
  if (std::find(names.begin(), names.end(), ChaseLevPool::kName) == names.end()) {
    names.emplace_back(ChaseLevPool::kName);
  }
  return names;
}

// threads == 0 means one per hardware thread.
inline std::unique_ptr<IThreadPool> make_any_pool(std::string_view name, std::size_t threads) {
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  for (std::string_view n : pool_names()) {
    if (n == name) return make_pool(name, threads);
  }
  if (name == ChaseLevPool::kName) return std::make_unique<ChaseLevPool>(threads);
  return make_pool(name, threads);  // throws std::invalid_argument listing the known pools
}

}  // namespace wslab::demo
