// Choosing a pool by name for the demos and stage5_algos_bench (every pool of the registry), and
// running a parallel algorithm so that "N threads" means N CPUs on every pool (run_on_pool).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/worker_identity.hpp"
#include "registry/pools.hpp"
#include "stage5_parallel_algos/fork_join/join.hpp"

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

// Runs f(), which calls join or a parallel algorithm on `pool`, as one task of the pool while
// the calling thread sleeps, and returns what f returns: a pool of N threads then computes on N
// CPUs, whichever stage it is. Called directly from outside the pool, the fork-join code lets the
// calling thread work too: on stages 1-4 beside all N workers (join.hpp's generic path helps while
// it waits), so a "1-thread" pool computes on two CPUs; on stage 5 it takes the guest seat while
// one worker stays parked in its place, which holds once that worker has parked, but a worker
// still searching when the call arrives can take work beside the caller. On one of the pool's
// workers, or inside one of its tasks, f runs on the calling thread.
template <class F>
auto run_on_pool(IThreadPool& pool, F&& f) {
  if (pool.owns_current_thread() || running_task_of(pool)) return std::forward<F>(f)();
  return detail::run_as_one_task(pool, f);
}

}  // namespace wslab::demo
