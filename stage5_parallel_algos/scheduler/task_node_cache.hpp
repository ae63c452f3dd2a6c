// A worker's spare task nodes (README.md, step 'Node cache'): a spawn takes its node from here
// and a finished task gives it back, so that a burst of spawns touches the allocator only until
// the cache has grown to the burst's size. Owner only: no atomics. Past its limit the cache
// hands a batch to the pool's depot (node_depot.hpp), and it refills from there before it
// allocates. The same for small group jobs' blocks (job.hpp's SmallJobBlock; README.md, step
// 'Small group jobs'): a worker keeps a cache of each.
#pragma once

#include <cstddef>
#include <type_traits>
#include <utility>

#include "job.hpp"
#include "node_depot.hpp"

namespace wslab::sched {

template <class Node>
class NodeCache {
  using Depot = BasicNodeDepot<Node>;

 public:
  // limit 0: no cache, every node is new/delete. Without a depot, or with a limit under two
  // batches, nodes past the limit are freed. `bytes`: what a new small block takes.
  NodeCache(std::size_t limit, Depot* depot, std::size_t bytes = sizeof(Node)) noexcept
      : limit_(limit), depot_(limit >= 2 * Depot::kBatch ? depot : nullptr), bytes_(bytes) {}
  NodeCache(const NodeCache&) = delete;
  NodeCache& operator=(const NodeCache&) = delete;
  ~NodeCache() {
    while (free_ != nullptr)
      delete std::exchange(free_, free_->next_free);
  }

  // A node whose task is empty (a spare block). Inlined: a group's run() takes one per callable.
  [[gnu::always_inline]] Node* take_empty() {
    Node* node = free_;
    if (node == nullptr) [[unlikely]] {
      node = refill();
      if (node == nullptr) return make_node();
    }
    free_ = node->next_free;
    --count_;
    return node;
  }

  // A node holding fn.
  template <class F>
  Node* take(F&& fn) {
    Node* node = take_empty();
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
  [[gnu::always_inline]] void recycle(Node* node) noexcept {
    if (count_ >= limit_ && !make_room(node)) [[unlikely]]
      return;
    node->next_free = free_;
    free_ = node;
    ++count_;
  }

 private:
  // The cache is full: spill a batch to the depot and keep `node` (true), or, without a depot,
  // free `node` (false).
  [[gnu::noinline]] Node* make_node() {
    if constexpr (std::is_same_v<Node, TaskJob>)
      return new TaskJob;
    else
      return Node::make(bytes_);
  }

  [[gnu::noinline]] bool make_room(Node* node) noexcept {
    if (depot_ == nullptr) {
      delete node;
      return false;
    }
    spill();
    return true;
  }

  // The depot's newest batch, spliced onto our (empty) list; nullptr when it has none.
  [[gnu::noinline]] Node* refill() noexcept {
    if (depot_ == nullptr) return nullptr;
    Node* chain = depot_->take();
    if (chain == nullptr) return nullptr;
    free_ = chain;
    count_ = Depot::kBatch;
    return chain;
  }

  // Hands our newest kBatch nodes to the depot (or frees them if it cannot take them).
  [[gnu::noinline]] void spill() noexcept {
    Node* chain = free_;
    Node* last = chain;
    for (std::size_t i = 1; i < Depot::kBatch; ++i)
      last = last->next_free;
    free_ = last->next_free;
    last->next_free = nullptr;
    count_ -= Depot::kBatch;
    try {
      depot_->put(chain);
    } catch (...) {
      while (chain != nullptr)
        delete std::exchange(chain, chain->next_free);
    }
  }

  Node* free_ = nullptr;  // intrusive stack of spare nodes
  std::size_t count_ = 0;
  std::size_t limit_;
  Depot* depot_;  // nullptr: none
  std::size_t bytes_;
};

using TaskNodeCache = NodeCache<TaskJob>;
using SmallJobCache = NodeCache<SmallJobBlock>;

}  // namespace wslab::sched
