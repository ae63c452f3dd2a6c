// The parent's end of a co_join (co_join.hpp): how its children report that they have finished,
// and how the parent learns that all of them have.
//
// The forking thread runs the children in a *run*: it calls the first child (a plain resume,
// which returns once the child has finished or suspended), then takes the queued ones back from
// its deque and calls them the same way, until the thieves have the rest. A child that finishes
// on that thread during the run finishes *here*: it adds one to a plain count and hands the thread
// back to the run. A child that finishes anywhere else (a thief ran it, or it suspended and was
// resumed later) *arrives* at an atomic counter. The counter starts at the number of children plus
// one, for the run itself, which at its end subtracts one plus the children that finished here.
// Whoever brings the counter to zero resumes the parent: the run (the parent then goes on without
// suspending) or the child that arrives last. When every child finished here, no other thread has
// touched the counter and the run leaves it alone: a join whose children nobody stole costs no
// read-modify-write.
//
// Which children finish here: for the run's duration the thread's record names the join
// (running_join, restored afterwards, so a join nested in a child names itself meanwhile). No other
// thread ever names it, and the run stops naming it before its own arrival, so a child that finds
// its join named on its thread is inside the run, and the run counts it before it arrives.
#pragma once

#include <atomic>
#include <coroutine>
#include <cstddef>
#include <utility>

#include "../../common/thread_pool.hpp"
#include "../fork_join/stack_room.hpp"
#include "../fork_join/thread_record.hpp"
#include "resume_on_pool.hpp"

namespace wslab::detail {

// The counter of the children that arrive, the run's own arrival included. acq_rel: each arrival
// releases what its child wrote (its result), and the last one acquires the others' before it
// hands the parent every result. (The order is a parameter only so that a test can build the broken
// relaxed counter and see ThreadSanitizer report the race on a child's result; on x86 every
// read-modify-write is a full barrier, so no test of the hardware catches it there.)
template <std::memory_order kArrive = std::memory_order_acq_rel>
class BasicJoinCounter {
 public:
  explicit BasicJoinCounter(std::size_t arrivals) noexcept : left_(arrivals) {}
  BasicJoinCounter(std::size_t arrivals, std::coroutine_handle<> parent) noexcept
      : left_(arrivals), parent_(parent) {}
  // Before anything arrives: whom the last arrival resumes.
  void resume_at_end(std::coroutine_handle<> parent) noexcept { parent_ = parent; }
  // `count` arrivals at once; true for the last.
  bool arrive_last(std::size_t count) noexcept { return left_.fetch_sub(count, kArrive) == count; }
  std::coroutine_handle<> parent() const noexcept { return parent_; }
  // One arrival: the parent to the last, a no-op coroutine to the others.
  std::coroutine_handle<> arrive() noexcept {
    if (arrive_last(1)) return parent_;
    return std::noop_coroutine();
  }

 private:
  std::atomic<std::size_t> left_;
  std::coroutine_handle<> parent_;
};
using JoinCounter = BasicJoinCounter<>;

class JoinPoint {
 public:
  explicit JoinPoint(std::size_t children) noexcept : children_(children), counter_(children + 1) {}
  JoinPoint(const JoinPoint&) = delete;
  JoinPoint& operator=(const JoinPoint&) = delete;

  // Before the run: whom the last arrival resumes, and the pool it belongs to.
  void resume_at_end(std::coroutine_handle<> parent, IThreadPool& pool) noexcept {
    counter_.resume_at_end(parent);
    pool_ = &pool;
  }

  // A child's last step (its final_suspend): whom the child hands its thread to. Back to the run
  // when it finishes inside it; else the parent if it is the last to arrive, or nobody. The
  // parent is resumed by a symmetric transfer, which nests a call where the compiler does not
  // make it a tail call (g++ below -O2, ThreadSanitizer): a chain of parents each resumed by its
  // last child would then grow the stack by the recursion's depth. So where the stack is three
  // quarters full, the parent is queued on its pool instead.
  [[gnu::always_inline]] std::coroutine_handle<> child_finished() noexcept {
    if (this_fork_join_thread.running_join == this) [[likely]] {
      ++finished_here_;
      return std::noop_coroutine();
    }
    return arrive_from_elsewhere();
  }

  // body(), the run, with this join named in the thread's record.
  template <class Body>
  [[gnu::always_inline]] void run(Body&& body) {
    struct Name {
      const void* outer;
      ~Name() { this_fork_join_thread.running_join = outer; }
    } name{std::exchange(this_fork_join_thread.running_join, this)};
    std::forward<Body>(body)();
  }

  // After the run, its own arrival: false when the parent goes on now, true when it must wait for
  // a child still running elsewhere (which resumes it). Then the join may be gone at once: nothing
  // here touches it after the counter.
  [[gnu::always_inline]] bool parent_waits() noexcept {
    if (finished_here_ == children_) return false;  // nobody else has touched the counter
    return !counter_.arrive_last(finished_here_ + 1);
  }

 private:
  [[gnu::noinline]] std::coroutine_handle<> arrive_from_elsewhere() noexcept {
    if (!counter_.arrive_last(1)) return std::noop_coroutine();  // the join may be gone now
    const std::coroutine_handle<> parent = counter_.parent();    // the last: it is not
    if (stack_nearly_full()) [[unlikely]] {
      resume_on(*pool_, pool_->lifetime(), parent);
      return std::noop_coroutine();
    }
    return parent;
  }

  const std::size_t children_;
  std::size_t finished_here_ = 0;  // the run's thread alone
  IThreadPool* pool_ = nullptr;
  JoinCounter counter_;
};

}  // namespace wslab::detail
