// Which pool, if any, the calling thread works for. Every pool asks this to tell a recursive
// submission (from one of its own workers) from an external one, and to refuse calls that would
// make a worker wait for itself.
#pragma once

#include <cstddef>

namespace wslab {

struct WorkerIdentity {
  const void* pool = nullptr;  // the pool this thread is a worker of; nullptr for other threads
  std::size_t index = 0;       // the worker's index in that pool
  void* state = nullptr;       // the pool's own per-worker record (e.g. stage 3's queue pointer)
  // Set when the pool is destroyed from inside one of this thread's tasks: the worker loop must
  // return as soon as that task ends, without touching the (gone) pool again.
  bool orphaned = false;
};

// Constant-initialised, so reading it costs a TLS-relative load and no init guard.
inline thread_local WorkerIdentity this_thread_identity{};

inline bool is_worker_of(const void* pool) noexcept {
  return this_thread_identity.pool == pool;
}

}  // namespace wslab
