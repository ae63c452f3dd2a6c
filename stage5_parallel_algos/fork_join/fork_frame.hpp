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
#include <new>
#include <utility>

#include "../scheduler/port.hpp"
#include "completion_flag.hpp"

namespace wslab::detail {

// Held: the callable the frame keeps by value until it runs (a frame in the slot), or NothingHeld.
struct NothingHeld {};

template <class R, class Held = NothingHeld>
class ForkFrame : public sched::Job {
 public:
  CompletionFlag& flag() noexcept { return flag_; }

  // After the flag is set: the thief's result, or its exception rethrown.
  R take_stolen() {
    if (threw_) {
      std::exception_ptr error = std::move(error_);
      error_.~exception_ptr();
      std::rethrow_exception(std::move(error));
    }
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
  union {
    Held held_;
    R result_;
    std::exception_ptr error_;
  };
  bool threw_;  // written by the thief before the flag
  CompletionFlag flag_;
};

}  // namespace wslab::detail
