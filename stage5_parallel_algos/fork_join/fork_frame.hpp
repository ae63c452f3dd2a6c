// A forked half's frame in the joining stack, for the forks that go on a worker's split deque
// (join.hpp's worker path, worker_ref.hpp): the job header the deque points to, the completion
// flag, and room for the outcome, which only a thief writes.
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

template <class R>
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
    R result_;
    std::exception_ptr error_;
  };
  bool threw_;  // written by the thief before the flag
  CompletionFlag flag_;
};

}  // namespace wslab::detail
