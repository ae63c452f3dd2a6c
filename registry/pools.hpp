// The registry of pools: every stage registers here once, and the test suite, the harness, the
// labs and the demos find it by name. It depends on the pools only, never on the harness. Two
// lists: registry() holds the five stages (the default tables, the main conformance entries);
// lab_variants() holds a stage with one knob turned, and the course lab's own pools, named
// "<folder>:<what differs>". The lists live in registry/pools.cpp, compiled once (the library
// wslab_registry). To compare your own pool with the stages, add one line to lab_variants()
// there (labs/README.md shows how) and its name to WSLAB_VARIANT_NAMES in CMakeLists.txt.
#pragma once

#include <cstddef>
#include <memory>
#include <string_view>
#include <vector>

#include "common/thread_pool.hpp"

namespace wslab {

struct PoolEntry {
  std::string_view name;
  std::string_view summary;  // one line for --help and tables
  std::unique_ptr<IThreadPool> (*make)(std::size_t threads);
};

// In stage order; the harness prints them in this order and computes speedups over the first.
const std::vector<PoolEntry>& registry();
// One knob position per entry, each a lab exercise (labs/README.md), and the lab's own pools.
const std::vector<PoolEntry>& lab_variants();
std::vector<std::string_view> pool_names();
std::vector<std::string_view> variant_names();
// The entry of a stage or a lab variant; nullptr for an unknown name.
const PoolEntry* find_pool(std::string_view name);
// Builds a stage or a lab variant by name. threads == 0 means one per hardware thread,
// at least 1 and at most kMaxThreads (default_thread_count()). Throws std::invalid_argument for an
// unknown name, naming every known one.
std::unique_ptr<IThreadPool> make_pool(std::string_view name, std::size_t threads);

}  // namespace wslab
