// A worker's spare task nodes (README.md, step 'Node cache'): a spawn takes its node from here
// and a finished task gives it back, so that a burst of spawns touches the allocator only until
// the cache has grown to the burst's size. Owner only: no atomics.
#pragma once

#include <cstddef>
#include <utility>

#include "job.hpp"

namespace wslab::sched {

class TaskNodeCache {
 public:
  // limit 0: no cache, every node is new/delete.
  explicit TaskNodeCache(std::size_t limit) noexcept : limit_(limit) {}
  TaskNodeCache(const TaskNodeCache&) = delete;
  TaskNodeCache& operator=(const TaskNodeCache&) = delete;
  ~TaskNodeCache() {
    while (free_ != nullptr)
      delete std::exchange(free_, free_->next_free);
  }

  // A node whose task is empty.
  TaskJob* take_empty() {
    TaskJob* node = free_;
    if (node == nullptr) return new TaskJob;
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
  // the injector orders the accesses.
  void recycle(TaskJob* node) noexcept {
    if (count_ < limit_) {
      node->next_free = free_;
      free_ = node;
      ++count_;
    } else {
      delete node;
    }
  }

 private:
  TaskJob* free_ = nullptr;  // intrusive stack of spare nodes
  std::size_t count_ = 0;
  std::size_t limit_;
};

}  // namespace wslab::sched
