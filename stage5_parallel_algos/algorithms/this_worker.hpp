// this_worker_index(): which worker of its pool the calling thread is, as an index in
// [0, thread_count()), on every pool of the lab; PerWorker (per_worker.hpp) keys its slots on it.
//
//   if (std::optional<std::size_t> i = wslab::this_worker_index(pool)) partial[*i] += x;
//
// A worker reports its index from the moment it starts (its on_worker_start hook included) until
// its pool is destroyed; a thread keeps the same index for its whole life as a worker. Every other
// thread gets std::nullopt: threads outside any pool, and threads that only help, such as the one
// calling parallel_for or join, which runs pieces of the work inline.
//
// The stage-5 guest seat: a thread from outside that sits on it (an outside join or parallel_for
// on a stage-5 pool) counts as one of the pool's workers for owns_current_thread(), but reports
// no index while it sits there. The seat is not a worker: successive outside threads share it,
// so an index for it could not key per-thread state, and the seated thread's own role (a worker
// of another pool, perhaps) is suspended until it leaves, when its index comes back.
#pragma once

#include <cstddef>
#include <optional>

#include "../../common/thread_pool.hpp"
#include "../../common/worker_identity.hpp"
#include "../scheduler/worker_context.hpp"

namespace wslab {

namespace detail {

// How a pool's workers name it in this_thread_identity.pool: every pool passes `this`, the
// address of the complete pool object, to WorkerThreads::start. (A cast to void* needs no RTTI.)
inline const void* worker_key(const IThreadPool& pool) noexcept {
  return dynamic_cast<const void*>(&pool);
}

// The calling thread's index among the `workers` workers of the pool named `key`. Reads only the
// thread's own identity, never the pool, so it stays safe once the pool is gone. The bound
// excludes the stage-5 guest seat, which carries the index one past the workers'; an orphaned
// worker (its pool was destroyed by its own task) no longer belongs to anything.
inline std::optional<std::size_t> worker_index_for(const void* key, std::size_t workers) noexcept {
  const WorkerIdentity& me = this_thread_identity;
  if (me.pool != key || me.orphaned || me.index >= workers) return std::nullopt;
  return me.index;
}

}  // namespace detail

// The calling thread's index among `pool`'s workers, in [0, pool.thread_count()); std::nullopt on
// any thread that is not one of them (a seated guest included). Wait-free; touches only the
// calling thread's identity and pool.thread_count().
inline std::optional<std::size_t> this_worker_index(const IThreadPool& pool) noexcept {
  return detail::worker_index_for(detail::worker_key(pool), pool.thread_count());
}

// The calling thread's index among the workers of whichever pool it works for; std::nullopt on
// a thread that works for none (a seated guest included).
inline std::optional<std::size_t> this_worker_index() noexcept {
  const WorkerIdentity& me = this_thread_identity;
  if (me.pool == nullptr || me.orphaned) return std::nullopt;
  // Only a stage-5 thread has a context, and only the guest's identity is out of its pool's range.
  if (const sched::WorkerContext* ctx = sched::this_thread_worker;
      ctx != nullptr && me.index >= ctx->pool->thread_count()) {
    return std::nullopt;
  }
  return me.index;
}

}  // namespace wslab
