// StdAtomics: the atomics a lock-free structure of the project runs on, as a policy. The shipped
// code uses this one (std::atomic and std::atomic_thread_fence, nothing added); the model checker
// (model_checker.hpp) supplies another with the same shape, so that it explores the shipped code
// itself rather than a copy. Zero cost: the alias and the inline fence compile to what they name.
#pragma once

#include <atomic>

namespace wslab {

struct StdAtomics {
  template <class T>
  using atomic = std::atomic<T>;
  static void thread_fence(std::memory_order order) noexcept { std::atomic_thread_fence(order); }
};

}  // namespace wslab
