// The registry of pools: every stage registers here once, and the test suite and the harness
// find it by name. To compare your own variant with the stages, add one line to registry().
#pragma once

#include <algorithm>
#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common/thread_pool.hpp"
#include "stage1_global_lock/global_lock_pool.hpp"
#include "stage2_per_thread_mutex/per_thread_mutex_pool.hpp"
#include "stage3_lock_wsq/lock_wsq_pool.hpp"
#include "stage4_chase_lev/chase_lev_pool.hpp"

namespace wslab {

struct PoolEntry {
  std::string_view name;
  std::string_view summary;  // one line for --help and tables
  std::unique_ptr<IThreadPool> (*make)(std::size_t threads);
};

template <class Pool>
std::unique_ptr<IThreadPool> make_pool_of(std::size_t threads) {
  return std::make_unique<Pool>(threads);
}

// In stage order; the harness prints them in this order and computes speedups over the first.
inline const std::vector<PoolEntry>& registry() {
  static const std::vector<PoolEntry> entries{
      {GlobalLockPool::kName, "one queue, one mutex, one condition variable",
       &make_pool_of<GlobalLockPool>},
      {PerThreadMutexPool::kName, "a mutex-guarded deque per worker, a global queue, steal half",
       &make_pool_of<PerThreadMutexPool>},
      {LockWsqPool::kName, "Duffy: lock-free owner end per worker queue, locked steals",
       &make_pool_of<LockWsqPool>},
      {ChaseLevPool::kName, "lock-free Chase-Lev deques, a lock-free injector, futex parking",
       &make_pool_of<ChaseLevPool>},
  };
  return entries;
}

inline std::vector<std::string_view> pool_names() {
  std::vector<std::string_view> names;
  for (const PoolEntry& e : registry())
    names.push_back(e.name);
  return names;
}

// threads == 0 means std::thread::hardware_concurrency() (at least 1).
inline std::unique_ptr<IThreadPool> make_pool(std::string_view name, std::size_t threads) {
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  for (const PoolEntry& e : registry()) {
    if (e.name == name) return e.make(threads);
  }
  std::string known;
  for (const PoolEntry& e : registry()) {
    if (!known.empty()) known += ", ";
    known += e.name;
  }
  throw std::invalid_argument("unknown pool \"" + std::string(name) + "\"; known pools: " + known);
}

}  // namespace wslab
