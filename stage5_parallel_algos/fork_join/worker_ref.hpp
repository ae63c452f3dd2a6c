// WorkerRef: the worker a recursion runs on, handed down so that a fork does not look it up.
//
//   int fib(wslab::WorkerRef w, int n) {
//     if (n < 2) return n;
//     auto [x, y] = w.join([n](wslab::WorkerRef w) { return fib(w, n - 1); },
//                          [n](wslab::WorkerRef w) { return fib(w, n - 2); });
//     return x + y;
//   }
//   int r = wslab::with_worker(pool, [](wslab::WorkerRef w) { return fib(w, 30); });
//
// `pool.join(a, b)` (join.hpp) finds the calling worker through a thread-local on every fork, and
// must run b even when a throws. WorkerRef::join pays only for the path that is taken (README.md,
// steps 'Worker handles' and 'Frames in the slot'):
//   - the handle is two words, passed in registers: the worker's record and the stack floor below
//     which the recursion must move to a fresh stack, so a fork's one check is a compare with the
//     frame address (and a handle made off the workers has an infinite floor: the same compare
//     sends it to the general join);
//   - b's frame is built in the split deque's slot, b moved in (SlotForkFrame, fork_frame.hpp):
//     the job header, the pool, the completion flag and a union for b, its result or its
//     exception, which only a thief writes. Taken back unstolen, b is moved out and called
//     directly, its result returned in registers. A b that cannot be moved in keeps its frame in
//     the joining stack (RefForkFrame, below), linked from the slot;
//   - what a() throws unwinds through a catch that takes b back first, and waits for b's thief if
//     b was stolen: nothing is caught on the path where a returns;
//   - every other case leaves the fast path through one out-of-line function, so the fork keeps
//     the handle and small halves in registers.
//
// The rule that costs: when a() throws and no thread has started b, b is dropped, not run (join
// runs it anyway). b runs at most once; a stolen b runs to completion before the exception
// leaves the join, and its own exception, if it throws too, is dropped.
#pragma once

#include <cstdint>
#include <exception>
#include <functional>
#include <limits>
#include <new>
#include <type_traits>
#include <utility>

#include "../../common/config.hpp"
#include "../../common/thread_pool.hpp"
#include "../../common/worker_identity.hpp"
#include "../scheduler/port.hpp"
#include "completion_flag.hpp"
#include "fork_frame.hpp"
#include "join.hpp"
#include "pool_handle.hpp"
#include "stack_room.hpp"

namespace wslab {

class WorkerRef;

namespace detail {

template <class F>
using ref_result_t = stored_result_t<std::invoke_result_t<F&, WorkerRef>>;

}  // namespace detail

class WorkerRef {
 public:
  // The calling thread's handle on `pool`: on one of its workers (or its seated guest), the fast
  // one; anywhere else, one whose every join takes the general path of `join(pool, a, b)` (and
  // whose halves, once they run on a worker, get fast handles of their own).
  static WorkerRef here(IThreadPool& pool) noexcept {
    if (sched::WorkerContext* ctx = sched::worker_context_of(pool)) [[likely]]
      return WorkerRef(ctx, detail::this_thread_stack_floors().overflow_floor);
    return WorkerRef(&pool, kAnywhere);
  }

  // Runs a(handle) and b(handle), potentially in parallel, and returns both results as a
  // std::pair (void contributes std::monostate); void when both return void. b is forked: a thief
  // may run it with a handle of its own. The handle each half receives is for the thread that
  // runs it; pass it down, never to another thread. When a throws, b runs only if a thief has
  // started it (then join waits for it); a's exception wins.
  template <class A, class B>
    requires std::invocable<A&, WorkerRef> && std::invocable<B&, WorkerRef>
  [[gnu::always_inline]] auto join(A&& a, B&& b) const {
    return detail::join_answer<std::invoke_result_t<A&, WorkerRef>,
                               std::invoke_result_t<B&, WorkerRef>>(join_stored<A, B>(a, b));
  }

  // The pool whose worker this is (or, off its workers, the pool the handle was made for).
  IThreadPool& pool() const noexcept {
    return on_worker() ? *static_cast<sched::WorkerContext*>(where_)->pool
                       : *static_cast<IThreadPool*>(where_);
  }

  // Whether forks take the fast path: the handle was made on one of the pool's workers.
  bool on_worker() const noexcept { return floor_ != kAnywhere; }

 private:
  static constexpr std::uintptr_t kAnywhere = std::numeric_limits<std::uintptr_t>::max();

  WorkerRef(void* where, std::uintptr_t floor) noexcept : where_(where), floor_(floor) {}

  template <class A, class B>
  using Results = std::pair<detail::ref_result_t<A>, detail::ref_result_t<B>>;

  // B as join() deduced it: an lvalue reference when b is an lvalue (then b is not moved from).
  template <class A, class B>
  [[gnu::always_inline]] Results<A, B> join_stored(A& a, B& b) const;
  template <class A, class Frame>
  [[gnu::always_inline]] Results<A, typename Frame::Fn> join_pushed(A& a, Frame& frame) const;
  template <class A, class B>
  [[gnu::always_inline]] Results<A, B> join_on_stack(A& a, B& b) const;
  template <class A, class B>
  [[gnu::noinline]] static Results<A, B> join_elsewhere(WorkerRef self,
                                                        std::remove_reference_t<A>& a,
                                                        std::remove_reference_t<B>& b);
  template <class A, class B>
  [[gnu::noinline]] Results<A, B> join_general(A& a, B& b) const;

  void* where_;  // the worker's sched::WorkerContext when on_worker(), else the IThreadPool
  // Below it the stack is nearly full and forks move to a fresh stack (stack_room.hpp);
  // kAnywhere off the workers, so that the fork's one compare sends every join the general way.
  std::uintptr_t floor_;
};

namespace detail {

// b's frame for WorkerRef::join (fork_frame.hpp): a thief calls b with a handle of its own. The
// thief is usually a worker of the pool, but a thread outside it that helps while it waits steals
// forks too (Scheduler::try_run_one_outside()), so the handle comes from here(), which gives such
// a thread one off the workers; hence the pool in the frame.
template <class B, class R>
class RefForkFrame final : public ForkFrame<R> {
 public:
  using Fn = B;
  static constexpr bool kInSlot = false;
  RefForkFrame(B& fn, IThreadPool& pool) noexcept
      : ForkFrame<R>(&run_stolen), fn_(fn), pool_(pool) {}
  // Taken back unstolen: b is called where the caller keeps it; dropped, it is left alone.
  R run_taken_back(WorkerRef w) { return invoke_stored(fn_, w); }
  void drop_taken_back() noexcept {}

 private:
  static void run_stolen(sched::Job& self) noexcept {
    auto& frame = static_cast<RefForkFrame&>(self);
    frame.run_and_publish([&] { return invoke_stored(frame.fn_, WorkerRef::here(frame.pool_)); });
  }

  B& fn_;
  IThreadPool& pool_;
};

// WorkerRef::join's b, stolen: called with a handle of the thief's own, from the pool (the thief
// may be a thread outside it that helps, as for RefForkFrame).
struct CallWithHandle {
  IThreadPool& pool;
  template <class F>
  auto operator()(F& fn) const {
    return invoke_stored(fn, WorkerRef::here(pool));
  }
};
template <class F, class R>
using SlotRefFrame = SlotForkFrame<F, R, CallWithHandle>;

// Whether b, passed to join() as B, is built in a slot: its frame fits a slot, and putting b there
// can neither throw nor take anything from the caller (an lvalue is copied only when that is a
// plain copy of bytes).
template <class B, class R>
inline constexpr bool builds_in_slot =
    sched::fits_job_slot<SlotRefFrame<std::remove_cvref_t<B>, R>> &&
    std::is_nothrow_constructible_v<std::remove_cvref_t<B>, B&&> &&
    std::is_nothrow_move_constructible_v<std::remove_cvref_t<B>> &&
    (!std::is_lvalue_reference_v<B> || std::is_trivially_copyable_v<std::remove_cvref_t<B>>);

// a threw: before the frame goes (or its slot is reused), b is dropped unrun if it is taken back,
// or waited for if a thief has it. Out of line: the fork keeps no handler code, and computes no
// address for it, on its own path.
template <class Frame>
[[gnu::noinline]] void drop_b_after_a_threw(sched::WorkerContext& me, Frame& frame) noexcept {
  if (sched::Scheduler::LocalQueue::take_back_fork(me, frame)) {
    frame.drop_taken_back();
  } else {
    wait_for_stolen_fork(me, frame.flag());
    frame.drop_stolen();
  }
}

}  // namespace detail

template <class A, class B>
[[gnu::always_inline]] inline WorkerRef::Results<A, B> WorkerRef::join_stored(A& a, B& b) const {
  // A worker's handle used on a thread other than the one it was made for (WSLAB_ASSERTIONS).
  WSLAB_ASSERT(!on_worker() || sched::this_thread_worker == where_);
  using RB = detail::ref_result_t<B>;
  if constexpr (detail::builds_in_slot<B, RB>) {
    using Frame = detail::SlotRefFrame<std::remove_cvref_t<B>, RB>;
    using Queue = sched::Scheduler::LocalQueue;
    if (!detail::stack_below_held(floor_)) [[likely]] {
      sched::WorkerContext& me = *static_cast<sched::WorkerContext*>(where_);
      if (void* slot = Queue::private_fork_slot(me)) [[likely]] {
        Frame& frame = *::new (slot) Frame(static_cast<B&&>(b), detail::CallWithHandle{*me.pool});
        Queue::push_private_fork(me, slot);
        return join_pushed(a, frame);
      }
    }
    // Every other case out of line, on copies of small halves made on this path only, so that
    // the fork's own path keeps the halves in registers (detail::cold_copy(), as join's).
    auto&& a_off = detail::cold_copy<A>(a);
    auto&& b_off = detail::cold_copy<B>(b);
    return join_elsewhere<A, B>(*this, a_off, b_off);
  } else {
    return join_on_stack(a, b);
  }
}

// b's frame in the joining stack, linked from the slot: for a b that is not built in a slot, and
// when the step 'Frames in the slot' is off.
template <class A, class B>
[[gnu::always_inline]] inline WorkerRef::Results<A, B> WorkerRef::join_on_stack(A& a, B& b) const {
  if (detail::stack_below_held(floor_)) [[unlikely]]
    return join_general(a, b);
  using Queue = sched::Scheduler::LocalQueue;
  sched::WorkerContext& me = *static_cast<sched::WorkerContext*>(where_);
  detail::RefForkFrame<B, detail::ref_result_t<B>> frame(b, *me.pool);
  if (!Queue::push_fork(me, frame)) [[unlikely]]
    return join_general(a, b);  // the split deque is full (or switched off)
  return join_pushed(a, frame);
}

// The slot path's way out. Static, so that the caller has no reason to keep the handle in memory;
// a half that is a temporary and copies as bytes arrives as a copy made on the way out
// (detail::cold_copy()). With room on the stack and a free slot, the fork's push must share
// (thieves emptied the shared part; step 'Private forks'): the same fork, b in the slot, with the
// push that shares. Otherwise (the stack nearly full, the deque full, the step 'Frames in the
// slot' off, a handle made off the workers) b's frame goes in the joining stack, or the join the
// general way.
template <class A, class B>
[[gnu::noinline]] WorkerRef::Results<A, B> WorkerRef::join_elsewhere(
    WorkerRef self, std::remove_reference_t<A>& a, std::remove_reference_t<B>& b) {
  using Frame = detail::SlotRefFrame<std::remove_cvref_t<B>, detail::ref_result_t<B>>;
  using Queue = sched::Scheduler::LocalQueue;
  if (!detail::stack_below_held(self.floor_)) {
    sched::WorkerContext& me = *static_cast<sched::WorkerContext*>(self.where_);
    if (void* slot = Queue::fork_slot(me)) {
      Frame& frame = *::new (slot) Frame(static_cast<B&&>(b), detail::CallWithHandle{*me.pool});
      Queue::push_built_fork(me, slot);
      return self.join_pushed(a, frame);
    }
  }
  return self.join_on_stack(a, b);
}

// The fork once b's frame is pushed, in the deque's slot or in the joining stack. Always inlined,
// as in join_on_worker().
template <class A, class Frame>
[[gnu::always_inline]] inline WorkerRef::Results<A, typename Frame::Fn> WorkerRef::join_pushed(
    A& a, Frame& frame) const {
  using RA = detail::ref_result_t<A>;
  using Queue = sched::Scheduler::LocalQueue;
  sched::WorkerContext& me = *static_cast<sched::WorkerContext*>(where_);
  RA ra = [&]() __attribute__((always_inline)) -> RA {
    try {
      return detail::invoke_stored(a, *this);
    } catch (...) {
      detail::drop_b_after_a_threw(me, frame);
      throw;
    }
  }();
  // A frame in a slot is taken back by its slot: no load of the deque's head.
  if (Queue::template take_back_fork<Frame::kInSlot>(me, frame)) [[likely]]
    return {std::move(ra), frame.run_taken_back(*this)};
  // A frame in a slot is read after wait_for_stolen_fork() has freed the slot: only this thread
  // builds in free slots, and it builds nothing in between.
  detail::wait_for_stolen_fork(me, frame.flag());
  return {std::move(ra), frame.take_stolen()};
}

// Off the workers, or with the stack nearly full: the general join, whose halves look the
// thread up again wherever they run (a fresh stack, a worker the join was handed to, a guest).
template <class A, class B>
[[gnu::noinline]] WorkerRef::Results<A, B> WorkerRef::join_general(A& a, B& b) const {
  IThreadPool& pool = this->pool();
  return with_fork_join_pool(pool, [&](ForkJoinPool auto handle) {
    return detail::join_context(
        handle, [&]() -> decltype(auto) { return std::invoke(a, WorkerRef::here(pool)); },
        [&](bool) -> decltype(auto) { return std::invoke(b, WorkerRef::here(pool)); });
  });
}

namespace detail {

template <class F>
[[gnu::noinline]] decltype(auto) with_worker_outside(IThreadPool& pool, F& root) {
  // The root is a task of the pool, as on a worker, seated or not: wait_idle() inside it is
  // refused whichever path it takes (in the seat, waiting for the pool would wait for the seat
  // itself), and TaskGroup() and join(a, b) inside it find this pool.
  RunningTaskScope running(pool);
  // Seated as a guest, the caller runs the root as a worker would, a parked worker asleep in its
  // place (README.md, step 'Guest seat'); without the seat, every join of the root's handle takes
  // the general path.
  const sched::GuestSeat seat = fork_join_handle(pool).try_seat_guest();
  return std::invoke(root, WorkerRef::here(pool));
}

}  // namespace detail

// Runs root(handle) on the calling thread and returns what it returns, with a handle on `pool`:
// fast on one of its workers, or when the caller takes the pool's guest seat (a scheduler whose
// workers are not all busy); otherwise a handle whose joins take the general path of join(pool,
// a, b), handing each join to the workers, where the halves get fast handles. Blocks like join:
// it returns once everything root forked has finished; rethrows what root throws.
template <class F>
  requires std::invocable<F&, WorkerRef>
decltype(auto) with_worker(IThreadPool& pool, F&& root) {
  if (sched::worker_context_of(pool) != nullptr) [[likely]]
    return std::invoke(root, WorkerRef::here(pool));
  return detail::with_worker_outside(pool, root);
}

}  // namespace wslab
