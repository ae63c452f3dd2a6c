// join(pool, a, b): run two callables, potentially in parallel, and return both results.
//
// The shape is Rayon's: b is forked (made stealable), a runs on the calling thread, then the
// caller takes b back and runs it inline if no other thread has started it, or else helps the
// pool until b is done (help_until_done.hpp). The parallelism is only paid for when it is used.
//
// Exceptions: both callables always run to completion (b may use a's frame, so we wait for it
// even when a has thrown). If both throw, a's exception is rethrown and b's is dropped; if one
// throws, that one is rethrown.
//
// On a worker of the stage-5 scheduler (or its seated guest), a b passed as a temporary is moved
// into the split deque's own slot (below, "join(pool, a, b) with b in the slot"). Every other
// call takes one code path over the pool's handle (pool_handle.hpp), which decides where b lives:
//   - on a thread whose pool lends it a deque (a worker of the stage-5 scheduler, any knobs, or a
//     seated guest), b lives in the caller's frame, and its job goes in the deque's slot or links
//     to it from there: no allocation (below, "The worker path");
//   - from outside such a pool, the caller takes its guest seat, if free, and runs the join as a
//     worker would, while one parked worker stays asleep in its place (README.md, step 'Guest
//     seat'); every nested join then takes the worker path too. Without a seat, the whole join is
//     handed to the pool as one task and the caller sleeps until it is done (Rayon's way), unless
//     no worker has started it within a millisecond: then the caller takes it back and runs it
//     on the heap path below (its own work, which a waiter may always run itself);
//   - on any other pool, b stays in the caller's frame and a small reference-counted heap job
//     points to it, because the queued trampoline may come out of the queue after this call
//     returned: one allocation, one submit and one claim per join, from inside a task or from
//     outside the pool (the calling thread then works alongside the pool's workers).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <new>
#include <optional>
#include <type_traits>
#include <utility>
#include <variant>

#include "../../common/task.hpp"
#include "../../common/thread_pool.hpp"
#include "../../common/worker_identity.hpp"
#include "../scheduler/port.hpp"
#include "claimable_job.hpp"
#include "completion_flag.hpp"
#include "current_pool.hpp"
#include "fork_frame.hpp"
#include "help_bounds.hpp"
#include "help_until_done.hpp"
#include "pool_handle.hpp"
#include "stack_room.hpp"
#include "thread_record.hpp"

namespace wslab {

// Identifies the calling thread cheaply (the address of its thread-local record): a forked job
// compares it with its forker's to tell whether it was stolen ("migrated"), which the adaptive
// splitter of range_splitter.hpp uses to split more where work is being stolen.
inline const void* this_thread_tag() noexcept {
  return &detail::this_fork_join_thread;
}

namespace detail {

// What a join returns, from its pair of stored results: nothing when both halves return void
// (their pair holds two std::monostate), else the pair.
template <class RA, class RB, class Pair>
[[gnu::always_inline]] inline auto join_answer(Pair&& results) {
  if constexpr (std::is_void_v<RA> && std::is_void_v<RB>) {
    return;
  } else {
    return std::forward<Pair>(results);
  }
}

// ---- The worker path ----
//
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

// b for join(pool, a, b), whose second half never asks whether it migrated: its frame keeps no
// forker's tag (three instructions of every fork).
template <class B>
struct IgnoresMigration {
  B& fn;
  decltype(auto) operator()(bool) { return std::invoke(fn); }
};
template <class B>
inline constexpr bool asks_migrated = true;
template <class B>
inline constexpr bool asks_migrated<IgnoresMigration<B>> = false;

// b(bool migrated) in the joining frame (fork_frame.hpp): taken back, the joiner calls b itself;
// a thief calls it with `migrated` true when it runs on a thread other than the forker's.
template <class B, class Result>
class StackJob final : public ForkFrame<Result> {
 public:
  explicit StackJob(B& fn) noexcept : ForkFrame<Result>(&run_stolen), fn_(fn) {
    if constexpr (asks_migrated<B>) forker_ = this_thread_tag();
  }

 private:
  static void run_stolen(sched::Job& self) noexcept {
    auto& job = static_cast<StackJob&>(self);
    job.run_and_publish([&] {
      if constexpr (asks_migrated<B>)
        return invoke_stored(job.fn_, this_thread_tag() != job.forker_);
      else
        return invoke_stored(job.fn_, true);
    });
  }

  struct NoTag {};
  B& fn_;
  [[no_unique_address]] std::conditional_t<asks_migrated<B>, const void*, NoTag> forker_{};
};

// Waits until the thief that took our forked job has run it, helping meanwhile within the help
// bounds (help_bounds.hpp). While it looks for work it counts as a searcher, so a push of new
// work (the thief splitting its half) is left to it rather than waking a sleeping worker, and it
// looks longer than help_until_done() before it naps: the thief is usually a leaf away from
// done, and a napping waiter costs a futex wake-up at the end of every parallel_for.
template <sched::WorkerQueue Queue>
void wait_for_thief(Queue queue, CompletionFlag& flag) {
  // A worker's search loop of looks with pauses, then 64 more looks with a yield between them
  // (the core goes to any thread that wants it), then naps.
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

// join_on_worker()'s pop did not give b back. On the Chase-Lev deque, anything above b was pushed
// by a and left behind (a submit()): run it with the pool's bookkeeping and look again. (The split
// deque holds forks only, strictly nested: it gives back b or nothing.) True once b is found: the
// caller runs it. False: b was stolen, and its thief has finished (we helped meanwhile). Out of
// line, so that the fork's own path keeps few registers live across a(), and compiled once per
// queue type, not once per b.
template <sched::WorkerQueue Queue>
[[gnu::noinline]] bool take_back_or_wait(Queue queue, typename Queue::Place place, sched::Job& job,
                                         CompletionFlag& flag, sched::Job* top) {
  for (;;) {
    if (top == &job) return true;
    if (top == nullptr) {
      wait_for_thief(queue, flag);
      queue.release_stolen(place);
      return false;
    }
    queue.run(top);
    top = queue.pop(place, job);
  }
}

// The fork itself, for b's job built where the caller put it (in the split deque's slot, or in
// the caller's frame) and pushed at `place`. a's outcome goes nowhere but the return: what a
// throws unwinds through the catch, which first runs b or waits for its thief (b always runs, and
// its exception is then dropped), so the path where a returns has no handler code. A job in a
// slot is read after take_back_or_wait() has freed the slot: only this thread builds in free
// slots, and it builds nothing in between.
template <class ResultA, class ResultB, sched::WorkerQueue Queue, class A, class B, class Job>
[[gnu::always_inline]] inline std::pair<ResultA, ResultB> fork_and_join(
    Queue queue, A& a, B& b, Job& job, typename Queue::Place place) {
  // Always inlined: GCC leaves a lambda with a handler out of line when a() is large (a
  // recursion that forks again), a call and a frame more on every fork.
  ResultA result_a = [&]() __attribute__((always_inline)) -> ResultA {
    try {
      return invoke_stored(a);
    } catch (...) {
      if (take_back_or_wait(queue, place, job, job.flag(), queue.pop(place, job))) {
        try {
          (void)invoke_stored(b, false);
        } catch (...) {  // a's exception wins
        }
      } else {
        job.drop_stolen();
      }
      throw;
    }
  }();
  // Take b back: nearly always it is there, and runs here.
  sched::Job* top = queue.pop(place, job);
  if (top == &job) [[likely]]
    return {std::move(result_a), invoke_stored(b, false)};
  if (take_back_or_wait(queue, place, job, job.flag(), top))
    return {std::move(result_a), invoke_stored(b, false)};
  return {std::move(result_a), job.take_stolen()};
}

// b's job in the caller's frame, pushed as a link (the job too large for a slot, the split deque
// full, the step 'Frames in the slot' off) or on the Chase-Lev deque (no split deque).
template <class ResultA, class ResultB, sched::WorkerQueue Queue, class A, class B>
[[gnu::noinline]] std::pair<ResultA, ResultB> join_on_worker_stack(Queue queue, A& a, B& b) {
  StackJob<B, ResultB> job(b);
  return fork_and_join<ResultA, ResultB>(queue, a, b, job, queue.push(job));
}

// `queue` is the calling worker's own deque, found once per join, so the push and the pop below
// do not look the worker up again. Out of line, so that join_context() stays a small function
// (a TLS load, two compares, a jump here) and this one gets the inlining budget for what runs on
// every fork. b's job is built in the split deque's slot where it fits (README.md, step 'Frames in
// the slot'): a fork then writes one line of the deque and no pointer.
template <class ResultA, class ResultB, sched::WorkerQueue Queue, class A, class B>
[[gnu::noinline]] std::pair<ResultA, ResultB> join_on_worker(Queue queue, A& a, B& b) {
  using Job = StackJob<B, ResultB>;
  if constexpr (sched::fits_job_slot<Job>) {
    if (void* slot = queue.fork_slot()) [[likely]] {
      Job& job = *::new (slot) Job(b);
      return fork_and_join<ResultA, ResultB>(queue, a, b, job, queue.push_built(slot));
    }
  }
  return join_on_worker_stack<ResultA, ResultB>(queue, a, b);
}

// ---- join(pool, a, b) with b in the slot ----
//
// The public join's b, passed as a temporary, is moved into the split deque's slot, as
// WorkerRef::join's is (worker_ref.hpp): taken back unstolen, it is moved out and called from
// the joiner's frame, so neither b nor a pointer to it is kept in memory across a().

// Whether a fork's way out (join_off_slot(), WorkerRef's join_elsewhere()) receives a copy of a
// half, F as join() deduced it: a temporary of at most two words that copies as bytes, copied on
// that path only (cold_copy()). A reference to the half itself would make the compiler keep it in
// memory on the fork's own path, and copy b from there into the slot with one wide load of two
// narrower stores, which the CPU cannot forward: a stall on every fork. (Passed by value instead,
// a half with padding, such as a reference and an int, makes GCC carry the padding's bits in a
// register across the whole fork.)
template <class F>
inline constexpr bool copied_on_the_way_out =
    !std::is_lvalue_reference_v<F> && std::is_trivially_copyable_v<std::remove_cvref_t<F>> &&
    sizeof(std::remove_cvref_t<F>) <= 2 * sizeof(void*);

// join's b, stolen: called with nothing (SlotForkFrame's Thief).
struct CallAlone {
  template <class F>
  auto operator()(F& fn) const {
    return invoke_stored(fn);
  }
};
template <class F, class R>
using SlotJoinFrame = SlotForkFrame<F, R, CallAlone>;

// Whether join(pool, a, b) builds b, passed as B, in a slot: a temporary (an lvalue stays the
// caller's, referenced), whose frame fits a slot and whose move cannot throw.
template <class B, class Frame>
inline constexpr bool joins_in_slot =
    !std::is_lvalue_reference_v<B> && sched::fits_job_slot<Frame> &&
    std::is_nothrow_move_constructible_v<std::remove_cvref_t<B>>;

// The fork's pop came back empty: a thief took b. Help until it has finished, then free b's slot.
// Out of line and compiled once: the fork's own path keeps only the pop and a compare.
[[gnu::noinline]] inline void wait_for_stolen_fork(sched::WorkerContext& me, CompletionFlag& flag) {
  auto queue = sched::Scheduler::LocalQueue::of(me);
  wait_for_thief(queue, flag);
  queue.release_stolen(sched::Scheduler::LocalQueue::Place::split_deque);
}

// a threw: b still runs (join's rule), here if it is taken back (its own exception dropped), or
// by its thief, waited for. Out of line: the fork keeps no handler code of its own.
template <class Frame>
[[gnu::noinline]] void finish_b_after_a_threw(sched::WorkerContext& me, Frame& frame) noexcept {
  if (sched::Scheduler::LocalQueue::template take_back_fork<true>(me, frame)) {
    try {
      (void)frame.run_taken_back();
    } catch (...) {  // a's exception wins
    }
  } else {
    wait_for_stolen_fork(me, frame.flag());
    frame.drop_stolen();
  }
}

// The fork, once b's frame is built and pushed in the slot.
template <class A, class Frame>
[[gnu::always_inline]] inline std::pair<stored_result_t<std::invoke_result_t<A&>>,
                                        typename Frame::Result>
join_in_slot(sched::WorkerContext& me, A& a, Frame& frame) {
  using RA = stored_result_t<std::invoke_result_t<A&>>;
  RA ra = [&]() __attribute__((always_inline)) -> RA {
    try {
      return invoke_stored(a);
    } catch (...) {
      finish_b_after_a_threw(me, frame);
      throw;
    }
  }();
  // Taken back by its slot: no load of the deque's head.
  if (sched::Scheduler::LocalQueue::template take_back_fork<true>(me, frame)) [[likely]]
    return {std::move(ra), frame.run_taken_back()};
  // The slot is read after wait_for_stolen_fork() has freed it: only this thread builds in free
  // slots, and it builds nothing in between.
  wait_for_stolen_fork(me, frame.flag());
  return {std::move(ra), frame.take_stolen()};
}

// ---- The cold paths, and the way in ----
//
// Everything but the worker path is compiled once per pool handle, not once per pair of
// callables: the typed shell join_cold() below puts the two halves in a JoinFrame, behind
// function pointers, and the paths work on the frame. (Compiled per pair, they would make a file
// of algorithm calls take half as long again to compile:
// tests/algorithms/algorithms_api_test.cpp, g++ -O3, 45 s against 67.)

// One join's halves and their outcomes, in the joining frame. Each function stores what its
// callable returned in the frame and what it threw in an error slot; none throws.
struct JoinFrame {
  void (*whole)(JoinFrame&) noexcept;                  // the join itself, join_context()
  void (*first)(JoinFrame&) noexcept;                  // a()
  void (*second)(JoinFrame&, bool migrated) noexcept;  // b(migrated)
  std::exception_ptr error_first;                      // what whole() or a() threw
  std::exception_ptr error_second;                     // what b() threw
};

// A JoinFrame call (b, or the whole join handed to the workers) as a job of the pool: reference
// counted on the heap, because the queued trampoline may come out of the queue after the join
// returned. The outcome goes to the frame, which outlives the run: the joiner waits for the flag,
// which the runner sets as its last touch of the frame. `migrated` tells b whether it runs on a
// thread other than the forker's: the adaptive splitter of parallel_for splits more where work
// is being stolen.
class FrameCall final : public ClaimableJob {
 public:
  FrameCall(void (*call)(JoinFrame&, bool) noexcept, JoinFrame& frame) noexcept
      : ClaimableJob(2), call_(call), frame_(&frame), forker_(this_thread_tag()) {}

  void run_claimed() noexcept override {
    call_(*frame_, this_thread_tag() != forker_);
    flag_.set();  // release: the outcome in the frame is published to the waiter
  }
  CompletionFlag& flag() noexcept { return flag_; }

 private:
  void (*call_)(JoinFrame&, bool) noexcept;
  JoinFrame* frame_;
  const void* forker_;
  CompletionFlag flag_;
};

// Runs f() as one task of `pool` and sleeps until it is done; rethrows what f threw. The flag
// lives in this frame: the task sets it as its last touch of anything here. The demos' way to
// compute on the pool's own threads only (registry/pool_choice.hpp); the caller never takes the
// task back, unlike join's hand-over below.
template <class F>
auto run_as_one_task(IThreadPool& pool, F& f) -> decltype(f()) {
  using R = decltype(f());
  std::optional<std::conditional_t<std::is_void_v<R>, std::monostate, R>> result;
  std::exception_ptr error;
  CompletionFlag done;
  pool.submit(Task([&f, &result, &error, &done] {
    try {
      if constexpr (std::is_void_v<R>) {
        f();
        result.emplace();
      } else {
        result.emplace(f());
      }
    } catch (...) {
      error = std::current_exception();
    }
    done.set();
  }));
  help_until_done(nullptr, nullptr, done, [] { return false; });
  if (error) std::rethrow_exception(error);
  if constexpr (!std::is_void_v<R>) return std::move(*result);
}

template <class A, class B>
using join_results_t = std::pair<stored_result_t<std::invoke_result_t<A&>>,
                                 stored_result_t<std::invoke_result_t<B&, bool>>>;

// ForkJoinThread::joins_stay_here is true while a thread outside the pool runs a join it handed
// to the workers and took back (hand_to_workers_or_run_here() below): the joins nested in it fork
// from here, on the heap path, rather than hand themselves over again.

// For a join from outside a scheduler without its guest seat: runs the whole join as one task of
// `pool`, where its nested joins find a worker's deque, while the caller sleeps. The task is the
// caller's own work, so the caller may always run it itself: a claimable job (claimable_job.hpp),
// taken back if no worker has claimed it within kHandOverGrace while every worker is busy (none
// sleeps or searches: those would come, once the machine schedules them). Without that, a
// structured program could hang: every worker may be waiting, past its help bounds, for work
// under this caller's frame. Once a worker has claimed it the caller sleeps with no timed
// wake-ups (the worker finishes it: started work only waits for work it can get done).
template <ForkJoinPool Pool>
void hand_to_workers_or_run_here(Pool handle, JoinFrame& frame) {
  IThreadPool& pool = handle.pool();
  constexpr auto whole = [](JoinFrame& f, bool) noexcept { f.whole(f); };
  JobRef<FrameCall> job = JobRef<FrameCall>::adopt(new FrameCall(whole, frame));  // ours, and
  submit_trampoline(pool, JobRef<FrameCall>::adopt(job.get()));  // the trampoline's
  // A worker that sleeps or searches will start it: the machine has not scheduled it yet.
  while (!job->flag().sleep_for(kHandOverGrace) && !job->claimed() && !handle.every_worker_busy()) {
  }
  if (job->flag().done()) return;
  if (job->try_claim()) {
    struct Stay {
      bool saved = std::exchange(detail::this_fork_join_thread.joins_stay_here, true);
      ~Stay() { detail::this_fork_join_thread.joins_stay_here = saved; }
    } stay;
    job->run_claimed();
  } else {
    job->flag().wait();
  }
}

// Every path but the worker's, on the frame: a nearly full stack, a call from outside the pool's
// workers, and the heap path.
template <ForkJoinPool Pool>
[[gnu::noinline]] void join_cold_paths(Pool pool, JoinFrame& frame) {
  if (stack_nearly_full()) {
    run_on_fresh_stack(
        [](void* f) { static_cast<JoinFrame*>(f)->whole(*static_cast<JoinFrame*>(f)); }, &frame);
    return;
  }
  // Not one of the pool's workers (join_context() checked). Whichever path follows, the halves
  // that run on this thread are tasks of the pool, as on a worker: wait_idle() inside them is
  // refused, and TaskGroup() and join(a, b) inside them find this pool even when the thread also
  // runs another pool's task further out (current_pool.hpp). Marked once, for the whole join: the
  // caller's waits in between only sleep or run tasks of this pool, which are refused it anyway.
  RunningTaskScope running(pool.pool());
  // Take a guest seat if the pool has one free and run the join here, as a worker would; the seat
  // is left when `seat` goes out of scope.
  if (sched::GuestSeat seat = pool.try_seat_guest()) {
    frame.whole(frame);
    return;
  }
  if (pool.hands_outside_joins_to_workers() && !detail::on_overflow_stack() &&
      !detail::this_fork_join_thread.joins_stay_here) {
    hand_to_workers_or_run_here(pool, frame);
    return;
  }
  // The heap path: b as a job of the pool, a here, then b taken back if no thread has started it.
  JobRef<FrameCall> job = JobRef<FrameCall>::adopt(new FrameCall(frame.second, frame));
  submit_trampoline(pool.pool(), JobRef<FrameCall>::adopt(job.get()));  // two references
  frame.first(frame);
  help_until_done(&pool.pool(), nullptr, job->flag(), [&] {
    if (!job->try_claim()) return false;
    job->run_claimed();
    return true;
  });
}

template <ForkJoinPool Pool, class A, class B>
inline join_results_t<A, B> join_context(Pool pool, A&& a, B&& b);

// The typed frame of one join on its cold paths.
template <ForkJoinPool Pool, class A, class B>
class TypedJoinFrame final : public JoinFrame {
  using ResultA = stored_result_t<std::invoke_result_t<A&>>;
  using ResultB = stored_result_t<std::invoke_result_t<B&, bool>>;

 public:
  TypedJoinFrame(Pool pool, A& a, B& b) noexcept
      : JoinFrame{&run_whole, &run_first, &run_second, nullptr, nullptr},
        pool_(pool),
        a_(a),
        b_(b) {}

  // Both results; a's exception first if both threw.
  join_results_t<A, B> take() {
    if (error_first) std::rethrow_exception(error_first);
    if (error_second) std::rethrow_exception(error_second);
    return {std::move(*result_a_), std::move(*result_b_)};
  }

 private:
  static void run_whole(JoinFrame& frame) noexcept {
    auto& self = static_cast<TypedJoinFrame&>(frame);
    try {
      auto results = join_context(self.pool_, std::forward<A>(self.a_), std::forward<B>(self.b_));
      self.result_a_.emplace(std::move(results.first));
      self.result_b_.emplace(std::move(results.second));
    } catch (...) {
      self.error_first = std::current_exception();
    }
  }
  static void run_first(JoinFrame& frame) noexcept {
    auto& self = static_cast<TypedJoinFrame&>(frame);
    try {
      self.result_a_.emplace(invoke_stored(self.a_));
    } catch (...) {
      self.error_first = std::current_exception();
    }
  }
  static void run_second(JoinFrame& frame, bool migrated) noexcept {
    auto& self = static_cast<TypedJoinFrame&>(frame);
    try {
      self.result_b_.emplace(invoke_stored(self.b_, migrated));
    } catch (...) {
      self.error_second = std::current_exception();
    }
  }

  Pool pool_;
  A& a_;
  B& b_;
  std::optional<ResultA> result_a_;
  std::optional<ResultB> result_b_;
};

// The cold paths' typed shell, out of line so that the worker path stays a small function.
template <ForkJoinPool Pool, class A, class B>
[[gnu::noinline]] join_results_t<A, B> join_cold(Pool pool, A&& a, B&& b) {
  TypedJoinFrame<Pool, A, B> frame(pool, a, b);
  join_cold_paths(pool, frame);
  return frame.take();
}

// join with b(bool migrated) on `pool`'s handle; returns both stored results. The algorithms
// call this with the handle they resolved once, on every fork. Always inlined: on a worker it
// is a TLS load, two compares and the call of join_on_worker(), and a call of its own would
// double that on every fork.
template <ForkJoinPool Pool, class A, class B>
[[gnu::always_inline]] inline join_results_t<A, B> join_context(Pool pool, A&& a, B&& b) {
  using ResultA = stored_result_t<std::invoke_result_t<A&>>;
  using ResultB = stored_result_t<std::invoke_result_t<B&, bool>>;
  return pool.with_worker_queue(
      [&](sched::WorkerQueue auto queue) -> join_results_t<A, B> {
        if (!stack_nearly_full()) [[likely]] {
          return join_on_worker<ResultA, ResultB>(queue, a, b);
        }
        return join_cold(pool, std::forward<A>(a), std::forward<B>(b));
      },
      [&]() -> join_results_t<A, B> {
        return join_cold(pool, std::forward<A>(a), std::forward<B>(b));
      });
}

// join(pool, a, b) by any path but the slot's: b referenced, not copied, since join does not
// return before b has finished.
template <class A, class B>
auto join_by_handle(IThreadPool& pool, A&& a, B&& b) {
  return with_fork_join_pool(pool, [&](ForkJoinPool auto handle) {
    return join_context(handle, std::forward<A>(a), IgnoresMigration<B>{b});
  });
}

// The slot path's way out, out of line, on the halves or on copies of them
// (copied_on_the_way_out). On a worker whose stack has room and whose deque has a free slot, the
// fork's push must share (thieves emptied the shared part; step 'Private forks'): the same fork,
// b moved into the slot, with the push that shares. Anywhere else (a thread that is not one of the
// pool's workers, a nearly full stack, a full split deque), the general join.
template <class A, class B>
[[gnu::noinline]] join_results_t<A, IgnoresMigration<B>> join_off_slot(
    IThreadPool& pool, std::remove_reference_t<A>& a, std::remove_reference_t<B>& b) {
  using Frame = SlotJoinFrame<std::remove_cvref_t<B>, stored_result_t<std::invoke_result_t<B&>>>;
  if (sched::WorkerContext* ctx = sched::worker_context_of(pool); ctx && !stack_nearly_full()) {
    using Queue = sched::Scheduler::LocalQueue;
    if (void* slot = Queue::fork_slot(*ctx)) {
      Frame& frame = *::new (slot) Frame(static_cast<B&&>(b), CallAlone{});
      Queue::push_built_fork(*ctx, slot);
      return join_in_slot(*ctx, a, frame);
    }
  }
  return join_by_handle(pool, static_cast<A&&>(a), static_cast<B&&>(b));
}

// f, or a copy of it where copied_on_the_way_out<F>.
template <class F>
[[gnu::always_inline]] inline decltype(auto) cold_copy(F& f) {
  if constexpr (copied_on_the_way_out<F>) {
    return std::remove_cvref_t<F>(f);
  } else {
    return (f);
  }
}

}  // namespace detail

// Runs a() and b(), potentially in parallel, and returns both results as a std::pair (a callable
// returning void contributes a std::monostate). When both return void, join returns void.
//
// On a worker of the scheduler, a b passed as a temporary is moved into the split deque's slot
// (README.md, step 'join's b in the slot'): the fork path of WorkerRef::join, with a worker
// found through the thread-local instead of a handle. Always inlined, as WorkerRef::join is: a
// recursion then keeps its halves in registers, where a call would need them in memory.
template <class A, class B>
  requires std::invocable<A&> && std::invocable<B&>
[[gnu::always_inline]] inline auto join(IThreadPool& pool, A&& a, B&& b) {
  using RA = std::invoke_result_t<A&>;
  using RB = std::invoke_result_t<B&>;
  using Frame = detail::SlotJoinFrame<std::remove_cvref_t<B>, stored_result_t<RB>>;
  if constexpr (detail::joins_in_slot<B, Frame>) {
    if (sched::WorkerContext* ctx = sched::worker_context_of(pool)) [[likely]] {
      // A thread whose floors are not measured yet has the highest floor: its first fork goes the
      // other way, which measures them (stack_room.hpp).
      if (!detail::stack_below(detail::this_fork_join_thread.stack_floors.overflow_floor))
          [[likely]] {
        using Queue = sched::Scheduler::LocalQueue;
        if (void* slot = Queue::private_fork_slot(*ctx)) [[likely]] {
          Frame& frame = *::new (slot) Frame(static_cast<B&&>(b), detail::CallAlone{});
          Queue::push_private_fork(*ctx, slot);
          return detail::join_answer<RA, RB>(detail::join_in_slot(*ctx, a, frame));
        }
      }
    }
    auto&& a_off = detail::cold_copy<A>(a);
    auto&& b_off = detail::cold_copy<B>(b);
    return detail::join_answer<RA, RB>(detail::join_off_slot<A, B>(pool, a_off, b_off));
  } else {
    return detail::join_answer<RA, RB>(
        detail::join_by_handle(pool, std::forward<A>(a), std::forward<B>(b)));
  }
}

// join(a, b) on the pool whose task the calling thread runs (current_pool.hpp), for a recursion
// that does not pass its pool down; throws std::logic_error, before running either callable,
// where there is none to find.
template <class A, class B>
  requires std::invocable<A&> && std::invocable<B&>
auto join(A&& a, B&& b) {
  return join(detail::current_pool_for("wslab::join(a, b)"), std::forward<A>(a),
              std::forward<B>(b));
}

}  // namespace wslab
