// A worker's spare task nodes (README.md, step 'Node cache'): a spawn takes its node from here
// and a finished task gives it back, so that a burst of spawns touches the allocator only until
// the cache has grown to the burst's size. Owner only: no atomics. Past its limit the cache
// hands a batch to the pool's depot (node_depot.hpp), and it refills from there before it
// allocates.
#pragma once

#include <cstddef>
#include <utility>

#include "job.hpp"
#include "node_depot.hpp"

namespace wslab::sched {

class TaskNodeCache {
 public:
  // limit 0: no cache, every node is new/delete. Without a depot, or with a limit under two
  // batches, nodes past the limit are freed.
  TaskNodeCache(std::size_t limit, NodeDepot* depot) noexcept
      : limit_(limit), depot_(limit >= 2 * NodeDepot::kBatch ? depot : nullptr) {}
  TaskNodeCache(const TaskNodeCache&) = delete;
  TaskNodeCache& operator=(const TaskNodeCache&) = delete;
  ~TaskNodeCache() {
    while (free_ != nullptr)
      delete std::exchange(free_, free_->next_free);
  }

  // A node whose task is empty. Inlined: a group's run() takes one per callable.
  [[gnu::always_inline]] TaskJob* take_empty() {
    TaskJob* node = free_;
    if (node == nullptr) [[unlikely]] {
      node = refill();
      if (node == nullptr) return new TaskJob;
    }
    free_ = node->next_free;
    --count_;
    return node;
  }

  // A node holding fn.
  template <class F>
  TaskJob* take(F&& fn) {
    TaskJob* node = take_empty();
    try {
      node->emplace(std::forward<F>(fn));
    } catch (...) {
      recycle(node);
      throw;
    }
    return node;
  }

  // Takes back a node whose task is empty. It may come from another worker's cache (its job was
  // stolen): it joins ours. Nodes only travel with their jobs, whose hand-off through a deque or
  // the injector orders the accesses (and the depot's mutex orders a batch's).
  // Inlined, as take_empty() is: three stores on every task's path.
  [[gnu::always_inline]] void recycle(TaskJob* node) noexcept {
    if (count_ >= limit_ && !make_room(node)) [[unlikely]]
      return;
    node->next_free = free_;
    free_ = node;
    ++count_;
  }

 private:
  // The cache is full: spill a batch to the depot and keep `node` (true), or, without a depot,
  // free `node` (false).
  [[gnu::noinline]] bool make_room(TaskJob* node) noexcept {
    if (depot_ == nullptr) {
      delete node;
      return false;
    }
    spill();
    return true;
  }

  // The depot's newest batch, spliced onto our (empty) list; nullptr when it has none.
  [[gnu::noinline]] TaskJob* refill() noexcept {
    if (depot_ == nullptr) return nullptr;
    TaskJob* chain = depot_->take();
    if (chain == nullptr) return nullptr;
    free_ = chain;
    count_ = NodeDepot::kBatch;
    return chain;
  }

  // Hands our newest kBatch nodes to the depot (or frees them if it cannot take them).
  [[gnu::noinline]] void spill() noexcept {
    TaskJob* chain = free_;
    TaskJob* last = chain;
    for (std::size_t i = 1; i < NodeDepot::kBatch; ++i)
      last = last->next_free;
    free_ = last->next_free;
    last->next_free = nullptr;
    count_ -= NodeDepot::kBatch;
    try {
      depot_->put(chain);
    } catch (...) {
      while (chain != nullptr)
        delete std::exchange(chain, chain->next_free);
    }
  }

  TaskJob* free_ = nullptr;  // intrusive stack of spare nodes
  std::size_t count_ = 0;
  std::size_t limit_;
  NodeDepot* depot_;  // nullptr: none
};

}  // namespace wslab::sched
