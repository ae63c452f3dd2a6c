// Choosing a pool by name for the demos: every pool of the registry.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "registry/pools.hpp"

namespace wslab::demo {

inline std::vector<std::string> pool_choices() {
  std::vector<std::string> names;
  for (std::string_view n : pool_names())
    names.emplace_back(n);
  return names;
}

// threads == 0 means one per hardware thread. Throws std::invalid_argument for an unknown name.
inline std::unique_ptr<IThreadPool> make_any_pool(std::string_view name, std::size_t threads) {
  return make_pool(name, threads);
}

}  // namespace wslab::demo
