// A forked half's frame, for the forks that go on a worker's split deque (join.hpp's worker path,
// worker_ref.hpp): the job header the deque runs, the completion flag, and room for the outcome,
// which only a thief writes. The frame lives in the joining stack (the deque's slot links to it),
// or, for WorkerRef::join, in the deque's slot itself, with the forked callable held in the same
// room until somebody runs it (README.md, step 'Frames in the slot').
//
// A half taken back by the thread that forked it is called directly by that thread, its result
// returned like any call's, so the frame builds nothing for it: the result and the exception
// share a union left unbuilt until a thief runs the half. The thief builds one of them, then sets
// the flag as its last touch of the frame; the joiner, once it sees the flag, takes or drops
// what was built. Nothing here is built, tested or destroyed on the path nobody steals.
#pragma once

#include <exception>
#include <functional>
#include <new>
#include <type_traits>
#include <utility>
#include <variant>

#include "../scheduler/port.hpp"
#include "completion_flag.hpp"

namespace wslab {

// What a callable returning R leaves behind: void becomes std::monostate so that results can be
// stored and paired uniformly.
template <class R>
using stored_result_t = std::conditional_t<std::is_void_v<R>, std::monostate, std::decay_t<R>>;

namespace detail {

template <class F, class... Args>
stored_result_t<std::invoke_result_t<F&, Args...>> invoke_stored(F& f, Args&&... args) {
  if constexpr (std::is_void_v<std::invoke_result_t<F&, Args...>>) {
    std::invoke(f, std::forward<Args>(args)...);
    return {};
  } else {
    return std::invoke(f, std::forward<Args>(args)...);
  }
}

// Held: the callable the frame keeps by value until it runs (a frame in the slot), or NothingHeld.
struct NothingHeld {};

template <class R, class Held = NothingHeld>
class ForkFrame : public sched::Job {
 public:
  using Result = R;
  CompletionFlag& flag() noexcept { return flag_; }

  // After the flag is set: the thief's result, or its exception rethrown.
  R take_stolen() {
    if (threw_) [[unlikely]]
      rethrow_stolen();
    R result = std::move(result_);
    result_.~R();
    return result;
  }

  // After the flag is set, on a path that throws something else: drops what the thief left.
  void drop_stolen() noexcept {
    if (threw_) {
      error_.~exception_ptr();
    } else {
      result_.~R();
    }
  }

 protected:
  explicit ForkFrame(ExecuteFn run_stolen) noexcept : Job(run_stolen) {}
  ~ForkFrame() {}  // whatever a thief built, take_stolen() or drop_stolen() destroyed

  // The held callable: built by the forker (hold()), moved out by whoever runs it (unhold()),
  // before the call, after which the outcome takes its place.
  template <class F>
  void hold(F&& fn) noexcept {
    ::new (static_cast<void*>(&held_)) Held(std::forward<F>(fn));
  }
  Held unhold() noexcept {
    Held fn(std::move(held_));
    held_.~Held();
    return fn;
  }

  // For the derived frame's run_stolen(): stores what call() returns or throws, then publishes it.
  template <class Call>
  void run_and_publish(Call&& call) noexcept {
    try {
      ::new (static_cast<void*>(&result_)) R(call());
      threw_ = false;
    } catch (...) {
      ::new (static_cast<void*>(&error_)) std::exception_ptr(std::current_exception());
      threw_ = true;
    }
    flag_.set();  // release: the outcome is published; the thief's last touch of the frame
  }

 private:
  // Out of line: the exception_ptr it moves out lives in this call's frame, not in the frame of
  // every function that joins, which then keeps no stack slot for it on the path nobody steals.
  [[noreturn, gnu::noinline]] void rethrow_stolen() {
    std::exception_ptr error = std::move(error_);
    error_.~exception_ptr();
    std::rethrow_exception(std::move(error));
  }

  union {
    Held held_;
    R result_;
    std::exception_ptr error_;
  };
  bool threw_;  // written by the thief before the flag
  CompletionFlag flag_;
};

// b's frame built in the split deque's slot (README.md, step 'Frames in the slot'): b itself is
// moved (or, trivially copyable, copied) into the slot, beside the flag, in the room where a
// thief's result goes. Whoever runs b moves it out of the slot first: b's own forks build their
// frames in the slots above, and the joiner's next fork reuses this one. `Thief` calls b on the
// thread that stole it, with what that needs (WorkerRef::join's b takes a handle, made from the
// pool the Thief keeps; join's b takes nothing, and its Thief is empty).
template <class F, class R, class Thief>
class SlotForkFrame final : public ForkFrame<R, F> {
 public:
  using Fn = F;
  static constexpr bool kInSlot = true;
  template <class B>
  SlotForkFrame(B&& fn, Thief thief) noexcept : ForkFrame<R, F>(&run_stolen), thief_(thief) {
    this->hold(std::forward<B>(fn));
  }
  // Taken back unstolen: b, moved out of the slot, is called from the joiner's frame; dropped,
  // it is destroyed.
  template <class... Args>
  R run_taken_back(Args&&... args) {
    F fn = this->unhold();
    return invoke_stored(fn, std::forward<Args>(args)...);
  }
  void drop_taken_back() noexcept { this->unhold(); }

 private:
  static void run_stolen(sched::Job& self) noexcept {
    auto& frame = static_cast<SlotForkFrame&>(self);
    // b, moved to the thief's stack, is destroyed before the flag is set: the thief's last touch
    // of the joiner's state stays the flag.
    frame.run_and_publish([&] {
      F fn = frame.unhold();
      return frame.thief_(fn);
    });
  }

  [[no_unique_address]] Thief thief_;
};

}  // namespace detail
}  // namespace wslab
