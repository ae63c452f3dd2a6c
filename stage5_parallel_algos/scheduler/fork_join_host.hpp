// What fork-join asks a scheduler from a thread that is not one of its workers (yet): the guest
// seat for an outside join, and whether the range algorithms should cut timed leaves. Off the
// hot path (once per outside join, once per parallel_for or parallel_reduce call), so a virtual
// interface found with dynamic_cast; on a worker, fork-join goes through its WorkerContext
// (worker_context.hpp) instead.
#pragma once

#include "../../common/thread_pool.hpp"
#include "guest_seat.hpp"

namespace wslab::sched {

class ForkJoinHost {
 public:
  // The seat, or an empty GuestSeat when another thread has it, the caller already works for
  // this pool, the pool is shutting down, or the seat is switched off.
  virtual GuestSeat try_seat_guest() noexcept = 0;
  // True when parallel_for / parallel_reduce with the automatic grain should cut timed leaves
  // (range_splitter.hpp) rather than split on demand.
  virtual bool timed_leaves() const noexcept = 0;

 protected:
  ForkJoinHost() = default;
  ForkJoinHost(const ForkJoinHost&) = default;
  ForkJoinHost& operator=(const ForkJoinHost&) = default;
  ~ForkJoinHost() = default;
};

// The pool as a ForkJoinHost, or nullptr for a pool that is none.
inline ForkJoinHost* fork_join_host(IThreadPool& pool) noexcept {
  return dynamic_cast<ForkJoinHost*>(&pool);
}

}  // namespace wslab::sched
