// join's fast path, for calls made on a worker of a scheduler (or a seated guest): the forked
// half lives in the caller's stack frame and goes straight onto the worker's own deque through a
// WorkerQueue (scheduler/worker_queue.hpp). No allocation, no task node, no ledger update: if
// nobody steals it, the worker pops it back and calls it, and the whole fork costs a deque push
// and pop (README.md, step 'Fork-join on the scheduler').
//
// Why the frame is safe here and not on the generic path: the job is in no queue but the deque,
// and it leaves the deque either by our own pop (we then run it) or by a steal (the thief runs
// it and sets the flag as its last touch). Either way nothing refers to the frame once the flag
// is set, so join may return. A generic pool's queued Task, by contrast, can come out of the
// queue after join returned, so there the job must be reference counted on the heap.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <exception>
#include <optional>
#include <type_traits>
#include <utility>
#include <variant>

#include "../scheduler/job.hpp"
#include "../scheduler/worker_queue.hpp"
#include "help_bounds.hpp"
#include "latch.hpp"
#include "thread_tag.hpp"

namespace wslab::detail {

// b(bool migrated) and its outcome, in the joining frame.
template <class B, class Result>
class StackJob final : public sched::Job {
 public:
  explicit StackJob(B& fn) noexcept : Job(&run_stolen), fn_(fn), forker_(this_thread_tag()) {}

  // Runs b here, where it was forked: no one else can be waiting, so no flag to set (a locked
  // exchange saved on every unstolen fork).
  [[gnu::always_inline]] void run_inline() noexcept { invoke(false); }

  CompletionFlag& flag() noexcept { return flag_; }
  const std::exception_ptr& error() const noexcept { return error_; }
  Result take_result() { return std::move(*result_); }

 private:
  [[gnu::always_inline]] void invoke(bool migrated) noexcept {
    try {
      if constexpr (std::is_same_v<Result, std::monostate> &&
                    std::is_void_v<std::invoke_result_t<B&, bool>>) {
        fn_(migrated);
        result_.emplace();
      } else {
        result_.emplace(fn_(migrated));
      }
    } catch (...) {
      error_ = std::current_exception();
    }
  }

  static void run_stolen(Job& self) noexcept {
    auto& job = static_cast<StackJob&>(self);
    job.invoke(this_thread_tag() != job.forker_);
    job.flag_.set();  // release: result_/error_ are published; our last touch of the frame
  }

  B& fn_;
  const void* forker_;
  std::optional<Result> result_;
  std::exception_ptr error_;
  CompletionFlag flag_;
};

// Waits until the thief that took our forked job has run it, helping meanwhile within the help
// bounds (help_bounds.hpp). While it looks for work it counts as a searcher, so a push of new
// work (the thief splitting its half) is left to it rather than waking a sleeping worker, and it
// looks longer than help_until_done() before it naps: the thief is usually a leaf away from
// done, and a napping waiter costs a futex wake-up (tens of microseconds) at the end of
// every parallel_for.
template <sched::WorkerQueue Queue>
void wait_for_thief(Queue queue, CompletionFlag& flag) {
  // About 15 us of looking with pauses (a worker's search loop), then ~50 us more with a yield
  // between looks (the core goes to any thread that wants it), then naps.
  constexpr std::uint32_t kSearchRounds = Queue::kSearchPauseRounds + 64;
  std::uint32_t idle_rounds = 0;
  bool searching = false;
  auto nap = std::chrono::microseconds(50);
  struct StopSearching {  // also on an exception from a helped job
    Queue& queue;
    bool& searching;
    void operator()() noexcept {
      if (searching) queue.end_search();
      searching = false;
    }
    ~StopSearching() { (*this)(); }
  } stop_searching{queue, searching};
  for (;;) {
    if (flag.done()) return;
    if (help_allowed()) {
      if (sched::Job* job = queue.find_work()) {
        stop_searching();
        run_as_helper([&] { queue.run(job); });
        idle_rounds = 0;
        continue;
      }
      if (!searching) {
        queue.begin_search();
        searching = true;
      }
    }
    if (idle_rounds < kSearchRounds) {
      Queue::search_backoff(idle_rounds++);
      continue;
    }
    stop_searching();
    if (flag.sleep_for(nap)) return;
    nap = std::min(nap * 2, std::chrono::microseconds(2000));
    idle_rounds = kSearchRounds - 8;  // woke up: look again, briefly
  }
}

// `queue` is the calling worker's own deque, found once per join, so the push and the pop below
// do not look the worker up again. Out of line, so that join_context() stays a small function
// (a TLS load, two compares, a jump here) and this one gets the inlining budget for what runs on
// every fork.
template <class ResultA, class ResultB, sched::WorkerQueue Queue, class A, class B>
[[gnu::noinline]] std::pair<ResultA, ResultB> join_on_worker(Queue queue, A& a, B& b) {
  StackJob<B, ResultB> job(b);
  queue.push(job);

  std::optional<ResultA> result_a;
  std::exception_ptr error_a;
  try {
    if constexpr (std::is_void_v<std::invoke_result_t<A&>>) {
      a();
      result_a.emplace();
    } else {
      result_a.emplace(a());
    }
  } catch (...) {
    error_a = std::current_exception();
  }

  // Take b back. Anything above it on the deque was pushed by a and left behind (a submit()):
  // run it with the pool's bookkeeping and look again.
  for (;;) {
    sched::Job* top = queue.pop();
    if (top == &job) {
      job.run_inline();
      break;
    }
    if (top == nullptr) {
      // Stolen (or already run by a helper nested in a): help until the thief is done.
      wait_for_thief(queue, job.flag());
      break;
    }
    queue.run(top);
  }
  if (error_a) std::rethrow_exception(error_a);
  if (job.error()) std::rethrow_exception(job.error());
  return {std::move(*result_a), job.take_result()};
}

}  // namespace wslab::detail
