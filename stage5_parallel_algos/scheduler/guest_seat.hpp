// The guest seat (README.md, step 'Guest seat'): a thread from outside the pool that is about to
// wait for a fork-join computation runs it itself instead, on a seat with its own deque that the
// workers steal from, while one sleeping worker stays asleep in its place (so that two cores
// still run two threads). One guest at a time; while seated, the thread counts as one of the
// pool's workers (owns_current_thread(), its WorkerContext), and what it spawns goes onto the
// seat's deque. Leaving runs whatever is still on that deque, settles the seat's accounts, hands
// the sleeper back and gives the thread its former role back (a worker of another pool stays
// one). The pool's side is in scheduler.hpp (try_seat_guest(), leave_guest_seat()).
#pragma once

#include <atomic>
#include <utility>

#include "../../common/worker_identity.hpp"
#include "worker_context.hpp"

namespace wslab::sched {

// Who the calling thread works for: saved when it sits down, restored when it leaves.
struct ThreadRole {
  WorkerIdentity identity;
  WorkerContext* worker = &kNoWorker;

  static ThreadRole current() noexcept { return {this_thread_identity, this_thread_worker}; }
  void assume() const noexcept {
    this_thread_identity.assume(identity);
    this_thread_worker = worker;
  }
};

// Whether a guest sits on the seat.
class SeatFlag {
 public:
  // True if the caller now holds the seat.
  bool try_claim() noexcept {
    if (taken_.load(std::memory_order_relaxed)) return false;
    // acquire: everything the previous guest did on the seat (its deque's owner side, its node
    // cache, its counters) happens before what we do there.
    return !taken_.exchange(true, std::memory_order_acquire);
  }
  // release: pairs with the next guest's acquire in try_claim().
  void release() noexcept { taken_.store(false, std::memory_order_release); }
  // seq_cst: for a thief's re-scan after announcing, which must follow the announce in S like
  // its deque loads (Scheduler::victim_count()).
  bool taken_seq_cst() const noexcept { return taken_.load(std::memory_order_seq_cst); }

 private:
  std::atomic<bool> taken_{false};
};

// A held seat, or none (false). Obtained from the pool's try_seat_guest(); the seat is left when
// the object goes out of scope, on the thread that took it.
class GuestSeat {
 public:
  using LeaveFn = void (*)(void* pool, const ThreadRole& saved) noexcept;

  GuestSeat() noexcept = default;
  GuestSeat(void* pool, LeaveFn leave, ThreadRole saved) noexcept
      : pool_(pool), leave_(leave), saved_(saved) {}
  GuestSeat(GuestSeat&& other) noexcept
      : pool_(std::exchange(other.pool_, nullptr)), leave_(other.leave_), saved_(other.saved_) {}
  GuestSeat& operator=(GuestSeat&&) = delete;
  ~GuestSeat() {
    if (pool_ != nullptr) leave_(pool_, saved_);
  }
  explicit operator bool() const noexcept { return pool_ != nullptr; }

 private:
  void* pool_ = nullptr;
  LeaveFn leave_ = nullptr;
  ThreadRole saved_;
};

}  // namespace wslab::sched
