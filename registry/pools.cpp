// The registry's lists and lookups (registry/pools.hpp declares them). Compiled once per build,
// into the library wslab_registry (and, with the trace hooks compiled in, wslab_registry_traced),
// rather than in every file that makes a pool by name: each pool's code is instantiated here.
// To register a pool of your own, add one line to lab_variants() below and an #include of its
// header (labs/README.md, "Your own pool").
#include "registry/pools.hpp"

#include <algorithm>
#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "labs/my_pool.hpp"
#ifdef WSLAB_DEQUE_LAB  // CMake's option of the same name (labs/deque_lab/README.md)
#include "labs/deque_lab/student_pool.hpp"
#endif
#include "stage1_global_lock/global_lock_pool.hpp"
#include "stage2_per_thread_mutex/per_thread_mutex_pool.hpp"
#include "stage3_lock_wsq/lock_wsq_pool.hpp"
#include "stage4_chase_lev/chase_lev_pool.hpp"
#include "stage5_parallel_algos/scheduler/scheduler.hpp"

namespace wslab {

namespace {
template <class Pool>
std::unique_ptr<IThreadPool> make_pool_of(std::size_t threads) {
  return std::make_unique<Pool>(threads);
}

// A stage built with its lab knobs set to `Knobs` (a structural aggregate, so it can be a template
// argument and every variant stays a plain function pointer).
template <class Pool, auto Knobs>
std::unique_ptr<IThreadPool> make_pool_with(std::size_t threads) {
  return std::make_unique<Pool>(threads, PoolOptions{}, Knobs);
}

}  // namespace

// In stage order; the harness prints them in this order and computes speedups over the first.
const std::vector<PoolEntry>& registry() {
  static const std::vector<PoolEntry> entries{
      {GlobalLockPool::kName, "one queue, one mutex, one condition variable",
       &make_pool_of<GlobalLockPool>},
      {PerThreadMutexPool::kName, "a mutex-guarded deque per worker, a global queue, steal half",
       &make_pool_of<PerThreadMutexPool>},
      {LockWsqPool::kName, "Duffy: lock-free owner end per worker queue, locked steals",
       &make_pool_of<LockWsqPool>},
      {ChaseLevPool::kName, "lock-free Chase-Lev deques, a lock-free injector, futex parking",
       &make_pool_of<ChaseLevPool>},
      {Scheduler::kName, "stage 4 plus the refinements that make it fast: the production scheduler",
       &make_pool_of<Scheduler>},
  };
  return entries;
}

// One knob position per entry, each a lab exercise (labs/README.md). A variant's name() is its
// stage's name. The deliberately weakened deque orderings are not here: they fail the conformance
// suite by design (stage4_chase_lev/README.md, "Breaking it on purpose").
const std::vector<PoolEntry>& lab_variants() {
  using OwnerOrder = ChaseLevKnobs::OwnerOrder;
  using Injector = ChaseLevKnobs::Injector;
  static const std::vector<PoolEntry> entries{
      {"stage2_per_thread_mutex:steal_one", "stage 2, a thief takes one task instead of half",
       &make_pool_with<PerThreadMutexPool, PerThreadMutexKnobs{.steal_half = false}>},
      {"stage3_lock_wsq:global_first", "stage 3, the global queue checked before the own queue",
       &make_pool_with<LockWsqPool, LockWsqKnobs{.global_queue_first = true}>},
      {"stage4_chase_lev:unpadded",
       "stage 4, per-worker state and top/bottom not cache-line padded",
       &make_pool_of<BasicChaseLevPool<ChaseLevLayout{.padded = false}>>},
      {"stage4_chase_lev:fifo", "stage 4, the owner takes its oldest task (FIFO) instead of LIFO",
       &make_pool_with<ChaseLevPool, ChaseLevKnobs{.owner_order = OwnerOrder::fifo}>},
      {"stage4_chase_lev:no_spin", "stage 4, an idle worker parks at once (no spin budget)",
       &make_pool_with<ChaseLevPool, ChaseLevKnobs{.spin_rounds = 0}>},
      {"stage4_chase_lev:injector_last", "stage 4, the global queue checked after stealing",
       &make_pool_with<ChaseLevPool, ChaseLevKnobs{.injector = Injector::last}>},
      // Stage 5 with one refinement switched off (SchedulerKnobs; README.md, one step each).
      {"stage5_parallel_algos:no_node_cache",
       "stage 5, every task node new/delete and every completion retired at once",
       &make_pool_with<Scheduler, SchedulerKnobs{.node_cache = false}>},
      {"stage5_parallel_algos:no_steal_gate",
       "stage 5, every pop fences: no steal gate, no sessions",
       &make_pool_with<Scheduler, SchedulerKnobs{.steal_gate = false}>},
      {"stage5_parallel_algos:no_linger",
       "stage 5, a steal session closes as soon as its thief finds work",
       &make_pool_with<Scheduler, SchedulerKnobs{.linger = false}>},
      {"stage5_parallel_algos:no_guest_seat",
       "stage 5, an outside join is handed to the pool as one task (no guest seat)",
       &make_pool_with<Scheduler, SchedulerKnobs{.guest_seat = false}>},
      {"stage5_parallel_algos:no_quick_scans",
       "stage 5, a worker out of work counts itself a searcher at once",
       &make_pool_with<Scheduler, SchedulerKnobs{.quick_scans = 0}>},
      {"stage5_parallel_algos:no_steal_batch",
       "stage 5, a thief takes one task per steal (no batched steals)",
       &make_pool_with<Scheduler, SchedulerKnobs{.steal_batch = 1}>},
      {"stage5_parallel_algos:no_timed_leaves",
       "stage 5, parallel_for/reduce split on demand as on any pool (no timed leaves)",
       &make_pool_with<Scheduler, SchedulerKnobs{.timed_leaves = false}>},
      {"stage5_parallel_algos:no_split_deque",
       "stage 5, join's forks go on the Chase-Lev deque (no split deque)",
       &make_pool_with<Scheduler, SchedulerKnobs{.split_deque = 0}>},
      {"stage5_parallel_algos:no_tiny_steals",
       "stage 5, a thief steals whenever it finds work, however short what it stole ran",
       &make_pool_with<Scheduler, SchedulerKnobs{.tiny_steal_ns = 0}>},
      {"stage5_parallel_algos:no_look_first",
       "stage 5, a thief opens its steal session before it looks at a victim (no look first)",
       &make_pool_with<Scheduler, SchedulerKnobs{.look_first = false}>},
      {"stage5_parallel_algos:no_group_jobs",
       "stage 5, a task group's callables are task nodes with the pool's bookkeeping (no group "
       "jobs)",
       &make_pool_with<Scheduler, SchedulerKnobs{.group_jobs = false}>},
      {"stage5_parallel_algos:no_adaptive_wait",
       "stage 5, wait_idle() always polls before it sleeps, however long its last waits were",
       &make_pool_with<Scheduler, SchedulerKnobs{.adaptive_wait = false}>},
      // Not an ablation: Step 16 at its most eager, for the suites. Every stolen task counts as
      // tiny, so thieves pause after every few steals, and every scenario that needs a second
      // worker (a blocked task's partner, a wait from outside) runs through the pause's exits.
      {"stage5_parallel_algos:pausing_thieves",
       "stage 5, a thief pauses after every few steals, whatever they cost (Step 16's exits)",
       &make_pool_with<Scheduler, SchedulerKnobs{.tiny_steal_ns = 1'000'000'000}>},
      {labs::my_pool::MyPool::kName,
       "labs/my_pool.hpp: stage 1 with a spinlock that parks, an example student pool",
       &make_pool_of<labs::my_pool::MyPool>},
      {"labs:my_pool_spin_only", "labs/my_pool.hpp with a waiter that never sleeps on the lock",
       &make_pool_with<labs::my_pool::MyPool, labs::my_pool::MyPoolKnobs{.park = false}>},
#ifdef WSLAB_DEQUE_LAB  // only when graded: the skeleton as it ships fails the suite
      {labs::deque_lab::kStudentDequePoolName,
       "stage 4 on the student's Chase-Lev deque (labs/deque_lab)",
       &make_pool_of<labs::deque_lab::StudentDequePool>},
#endif
  };
  return entries;
}

std::vector<std::string_view> pool_names() {
  std::vector<std::string_view> names;
  for (const PoolEntry& e : registry())
    names.push_back(e.name);
  return names;
}

std::vector<std::string_view> variant_names() {
  std::vector<std::string_view> names;
  for (const PoolEntry& e : lab_variants())
    names.push_back(e.name);
  return names;
}

// The entry of a stage or a lab variant; nullptr for an unknown name.
const PoolEntry* find_pool(std::string_view name) {
  for (const auto* list : {&registry(), &lab_variants()}) {
    for (const PoolEntry& e : *list) {
      if (e.name == name) return &e;
    }
  }
  return nullptr;
}

// Builds a stage or a lab variant by name. threads == 0 means one per hardware thread,
// at least 1 and at most kMaxThreads (default_thread_count()).
std::unique_ptr<IThreadPool> make_pool(std::string_view name, std::size_t threads) {
  if (threads == 0) threads = default_thread_count();
  if (const PoolEntry* e = find_pool(name)) return e->make(threads);
  std::string known;
  for (const PoolEntry& e : registry()) {
    if (!known.empty()) known += ", ";
    known += e.name;
  }
  std::string variants;
  for (const PoolEntry& e : lab_variants()) {
    if (!variants.empty()) variants += ", ";
    variants += e.name;
  }
  throw std::invalid_argument("unknown pool \"" + std::string(name) + "\"; known pools: " + known +
                              "; lab variants: " + variants);
}

}  // namespace wslab
