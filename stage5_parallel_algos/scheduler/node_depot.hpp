// The pool's depot of spare task nodes (README.md, step 'Node depot'): where a worker's cache
// sends its surplus, a batch at a time, and where a worker whose cache ran dry gets a batch back
// before it asks the allocator. Two patterns need it:
//   - a backlog: one worker spawns a million tasks and then runs them; its cache holds 16,384
//     nodes, and without the depot every node beyond them would be freed on completion and
//     allocated again by the next burst;
//   - producer and thief: nodes travel with stolen jobs, so a thief's cache fills up while the
//     spawner's runs dry; through the depot the nodes go back to the spawner in batches.
// While the pool is busy the depot keeps whatever it is given, so it holds at most the largest
// backlog's nodes; a worker that has slept for a while empties it (Scheduler::search()),
// so an idle pool keeps only what the caches hold. A mutex, taken once per batch (1,024 nodes):
// a few nanoseconds per task at worst, and never on the path of a spawn that finds its node in
// the worker's own cache, nor by a take() while the depot is empty. One depot
// per kind of spare memory: task nodes, and small group jobs' blocks (job.hpp's SmallJobBlock),
// each linked through its next_free.
#pragma once

#include <atomic>
#include <cstddef>
#include <mutex>
#include <utility>
#include <vector>

#include "job.hpp"

namespace wslab::sched {

template <class Node>
class BasicNodeDepot {
 public:
  // Nodes per batch: big enough that the lock is rare, small enough that a batch moved to the
  // wrong worker wastes little.
  static constexpr std::size_t kBatch = 1024;

  BasicNodeDepot() = default;
  BasicNodeDepot(const BasicNodeDepot&) = delete;
  BasicNodeDepot& operator=(const BasicNodeDepot&) = delete;
  ~BasicNodeDepot() { release_all(); }

  // A chain of kBatch spare nodes linked through next_free (the last one's is nullptr).
  void put(Node* chain) {
    std::lock_guard<std::mutex> lock(mutex_);
    chains_.push_back(chain);  // may throw std::bad_alloc: the caller frees the chain instead
    held_.store(chains_.size(), std::memory_order_relaxed);
  }

  // A chain of kBatch nodes, or nullptr when the depot is empty. An empty depot answers without
  // its lock: a cache that runs dry while the depot is empty (a backlog larger than the caches,
  // the first since the pool went idle) allocates its nodes one by one, and would otherwise take
  // the lock for each of them, only to find nothing. A stale count costs one allocation too many,
  // or one lock for nothing.
  Node* take() noexcept {
    if (held_.load(std::memory_order_relaxed) == 0) return nullptr;
    std::lock_guard<std::mutex> lock(mutex_);
    ++locked_takes_;
    if (chains_.empty()) return nullptr;
    Node* chain = chains_.back();
    chains_.pop_back();
    held_.store(chains_.size(), std::memory_order_relaxed);
    return chain;
  }

  // Frees every node the depot holds. For an idle pool and the destructor.
  void release_all() noexcept {
    std::vector<Node*> chains;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      chains.swap(chains_);
      held_.store(0, std::memory_order_relaxed);
    }
    for (Node* node : chains) {
      while (node != nullptr)
        delete std::exchange(node, node->next_free);
    }
  }

  // Nodes held now (a snapshot), and calls of take() so far that took the lock. For tests.
  std::size_t size() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return chains_.size() * kBatch;
  }
  std::size_t locked_takes() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return locked_takes_;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<Node*> chains_;
  std::size_t locked_takes_ = 0;
  std::atomic<std::size_t> held_{0};  // chains_.size(), written under the lock
};

using NodeDepot = BasicNodeDepot<TaskJob>;
using SmallJobDepot = BasicNodeDepot<SmallJobBlock>;

}  // namespace wslab::sched
