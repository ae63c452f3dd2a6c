// TaskGroup: run(f) any number of callables on a pool, then wait() for all of them.
//
//   TaskGroup group(pool);  // a ThreadPool, or any IThreadPool
//   for (auto& part : parts) group.run([&part] { process(part); });
//   group.wait();  // helps while waiting; rethrows the first exception
//
// wait() never just blocks a worker: it runs the group's own callables that nobody has started
// (newest first, for cache locality), then helps the pool with foreign tasks within the bounds of
// help_bounds.hpp (help_until_done.hpp), and sleeps only when its remaining callables are all
// running elsewhere. A waiter outside the stage-5 scheduler's workers is the exception: it sleeps
// while the workers take its callables, so that a pool of N workers computes on N CPUs, and runs
// one itself only when every worker is busy and none of its callables moves
// (wait_beside_workers()).
//
// The rule that makes every structured wait finish: a waiter can always run its own unstarted
// work, wherever it is queued, and that is never counted as help. A structured program (each
// callable waits only for work it created) therefore never hangs, whatever the bounds and the
// number of threads: a callable the waiter cannot run has started on another thread, whose frames
// above it wait, by the same rule, only for work they can get done.
//
// One bookkeeping (a counter of unfinished callables) on every pool; how a callable is queued, and
// how its waiter finds it again if nobody has started it, is the pool handle's GroupWork
// (pool_handle.hpp), resolved once when the group is made:
//   - on a worker of the stage-5 scheduler, a callable is an ordinary task of the pool, built in
//     a task node from the worker's cache and pushed on that worker's deque; the group marks where
//     its work begins there, and its waiter pops everything above the mark as its own (README.md,
//     step 'Waits without help bounds'). No allocation, no lock, no container: a run() costs about
//     what a spawn() does.
//   - from any other thread, and on any other IThreadPool, a callable is a claimable job behind a
//     trampoline task, listed so that the waiter can claim and run it itself (group_call_list.hpp)
//     wherever the trampoline waits (the scheduler's injector, another pool's queue).
// Either way groups nest freely, from outside the pool or inside tasks, even on a 1-thread pool,
// to any depth: the recursion is the program's own, and moves to a fresh stack when a thread's
// stack is nearly full (stack_room.hpp). A callable run by its waiter is still a task of the pool:
// wait_idle() inside it is refused, as on a worker.
//
// Exceptions: every callable runs, whatever the others throw (nothing is skipped, so nothing is
// lost). wait() rethrows the first exception recorded and discards the later ones;
// dropped_exceptions() then says how many it discarded. A group destroyed without wait() waits in
// its destructor and reports an exception nobody collected on stderr.
//
// Cancellation: cancel() makes every callable of the group that has not started yet skip (it is
// destroyed without running), and every one run() adds too, until wait() returns (run() drops
// it, save a frame, which it writes all the same and which is skipped when run); callables
// already running finish, and may poll is_cancelled() to stop early. wait() returns once the
// started ones have finished, and then resets the group to not cancelled, ready for reuse.
// Exceptions of callables that ran are rethrown as usual.
//
// Threads: run() may be called by the owner and by the group's own callables (a callable may add
// work to its group); wait() by the owner only, which may reuse the group afterwards; cancel() and
// is_cancelled() by any thread at any time (a cancel() racing with the end of a wait() may apply to
// either round).
//
// Misuse and lifetime: run() of an empty callable (a null function pointer, an empty
// std::function) throws std::invalid_argument. A group may outlive its pool (it holds the pool's
// PoolLifetime, thread_pool.hpp): once the pool's destruction has completed, run() throws
// std::logic_error and queues nothing, while wait() and the destructor work, never touching the
// pool (the destructor ran every queued callable). If the pool refuses run() because its
// destruction has begun (a call from outside the pool), run() throws wslab::SubmitRefused (a
// std::logic_error), the callable does not run, and the group no longer helps that pool while it
// waits. A std::logic_error the callable's own copy throws passes through unchanged. A group may
// be used while another thread destroys its pool: its calls into the pool from outside are made
// inside a PoolVisit (docs/reference.md, "Objects that outlive their pool").
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include "../../common/config.hpp"
#include "../../common/task_ledger.hpp"
#include "../../common/thread_pool.hpp"
#include "../../common/worker_identity.hpp"
#include "completion_flag.hpp"
#include "current_pool.hpp"
#include "help_until_done.hpp"
#include "pool_handle.hpp"
#include "thread_record.hpp"

namespace wslab {

class ThreadPool;

class TaskGroup {
 public:
  [[gnu::always_inline]] explicit TaskGroup(IThreadPool& pool)
      : pool_(pool), work_(fork_join_handle(pool)), lifetime_(pool.lifetime()) {
    idle_.set_unshared();  // nothing runs yet; no other thread knows the group
  }
  // A group on a ThreadPool (its scheduler()); defined in threadpool.hpp. Inlined, as the
  // constructor above: GCC otherwise calls it out of line where a recursion makes a group per call.
  [[gnu::always_inline]] explicit TaskGroup(ThreadPool& pool);
  // A group on the pool whose task the calling thread runs (current_pool.hpp); throws
  // std::logic_error where there is none to find.
  TaskGroup() : TaskGroup(detail::current_pool_for("wslab::TaskGroup()")) {}
  TaskGroup(const TaskGroup&) = delete;
  TaskGroup& operator=(const TaskGroup&) = delete;

  [[gnu::always_inline]] ~TaskGroup() {
    // After wait(), the common case: nothing left, nothing to report.
    if (nothing_left() && !has_error_.load(std::memory_order_relaxed)) return;
    destroy_unwaited();
  }

  // Queues fn() on the pool as part of this group and returns at once; never run while the group
  // is cancelled (see the header comment). Throws std::invalid_argument for an empty fn,
  // std::logic_error once the pool is gone or refuses (see the header comment).
  template <class F>
    requires std::invocable<std::decay_t<F>&>
  void run(F&& fn) {
    if (is_empty_callable(fn)) throw_empty_task("wslab::TaskGroup::run()");
    using Fn = std::decay_t<F>;
    if constexpr (fits_group_frame<Fn, F&&>) {
      // A small callable of plain bytes, as a frame of the home's frame deque (README.md, step
      // 'Group frames'): counted as a group job is, before the push publishes it. A push that
      // throws (the deque could not grow) counted it and queued nothing: a drop, which counts as
      // a job finished elsewhere, as for a group job.
      // A frame copies the callable's bytes, so fn is left as it was for the ways below. No look
      // at the cancellation here (README.md, step 'One look per push'): a frame pushed while the
      // group is cancelled is skipped when it is run, before wait() can return and reset the flag.
      auto count = [this]() noexcept {
        home_pushed_.store(home_pushed_.load(std::memory_order_relaxed) + 1,
                           std::memory_order_relaxed);
      };
      auto make_words = [&]() noexcept { return GroupFrame<Fn>::words(*this, Fn(fn)); };
      bool pushed;
      try {
        pushed = work_.try_push_group_frame(count, make_words);
      } catch (...) {
        finish_elsewhere();
        throw;
      }
      if (pushed) return;
    }
    if constexpr (fits_group_job<Fn, F&&>) {
      // On the group's home worker, a group job (README.md, step 'Group jobs'), counted by the
      // home alone: a load and a store, no read-modify-write. Only a worker of a live pool is the
      // group's home (a destroyed pool's worker is no longer its worker), so the pool's lifetime
      // needs no look here. Counted before the push publishes the job: a thief that runs it and
      // finishes may bring elsewhere_ to zero, and a waiter away from the home that then reads
      // the flag done must see the push, or it would return while this callable still runs.
      auto build = [&](void* memory) noexcept -> sched::GroupJob* {
        home_pushed_.store(home_pushed_.load(std::memory_order_relaxed) + 1,
                           std::memory_order_relaxed);
        return ::new (memory) GroupCall<Fn>(*this, std::forward<F>(fn));
      };
      if (!is_cancelled() &&
          work_.template try_push_group_job<sizeof(GroupCall<Fn>), alignof(GroupCall<Fn>)>(build))
        return;
    }
    if (lifetime_.expired()) {
      throw std::logic_error(
          "wslab::TaskGroup::run(): the group's pool has been destroyed; nothing was queued");
    }
    if (is_cancelled()) return;
    if (called_on_a_worker()) [[likely]] {
      spawn_call(std::forward<F>(fn));  // the pool outlives its worker's call
      return;
    }
    // Any other thread may call while another destroys the pool: the group outlives it, and
    // lifetime_ answered only for the moment it was asked. The pool is reached inside a visit
    // (PoolVisit), which it admits until its destructor has drained it, and then no more: the
    // callable could no longer run there.
    PoolVisit visit(lifetime_);
    if (!visit) [[unlikely]]
      refused_by_pool();
    spawn_call(std::forward<F>(fn));
  }

  // Waits until every callable run() so far has finished (or, cancelled, skipped), resets the
  // cancellation, then rethrows the first exception one of them threw (and forgets it).
  [[gnu::always_inline]] void wait() {
    wait_for_all();
    work_.round_over();
    // Relaxed: every record() happened before its callable finished, and so before wait_for_all()
    // returned. A round without exceptions, the common one, reads nothing more.
    if (has_error_.load(std::memory_order_relaxed)) [[unlikely]]
      rethrow_collected();
    last_dropped_.store(0, std::memory_order_relaxed);
    // Nothing of this round is left to skip; release: pairs with is_cancelled() in the next one.
    cancelled_.store(false, std::memory_order_release);
  }

  // How many exceptions of this group's callables the last wait() discarded besides the one it
  // rethrew (0 before the first wait()). Same meaning as ThreadPool::dropped_exceptions().
  std::size_t dropped_exceptions() const { return last_dropped_.load(std::memory_order_relaxed); }

  // Cancels the group's callables that have not started, and those run() adds, until wait()
  // returns. Never blocks; any thread.
  void cancel() noexcept { cancelled_.store(true, std::memory_order_release); }

  // True from cancel() until the next wait() returns. A long callable may poll it to stop early.
  bool is_cancelled() const noexcept { return cancelled_.load(std::memory_order_acquire); }

 private:
  // The rest of wait() when a callable threw, out of line.
  [[gnu::noinline, noreturn]] void rethrow_collected() {
    // Every callable of the round has finished (see record()): nobody writes these now.
    std::exception_ptr error = std::exchange(first_error_, nullptr);
    last_dropped_.store(dropped_.exchange(0, std::memory_order_relaxed), std::memory_order_relaxed);
    has_error_.store(false, std::memory_order_relaxed);
    cancelled_.store(false, std::memory_order_release);  // as in wait()
    std::rethrow_exception(error);
  }

  // True on a worker of the group's pool, asked of the thread alone (the pool may be gone): the
  // scheduler's worker context, or the worker identity every pool's threads carry
  // (on_a_worker_of()).
  bool called_on_a_worker() const noexcept {
    return sched::worker_context_of(pool_) != nullptr || on_a_worker_of(pool_);
  }

  // run()'s last step: counts the callable and queues it on the pool.
  template <class F>
  void spawn_call(F&& fn) {
    take_credit();
    try {
      // noexcept when the callable's copy or move is: the node's task is then built in place.
      work_.spawn([&]() noexcept(std::is_nothrow_constructible_v<std::decay_t<F>, F&&>) {
        return Call<std::decay_t<F>>(*this, std::forward<F>(fn));
      });
    } catch (const SubmitRefused&) {
      // The pool refused it (we are not one of its threads): nothing was queued.
      finish_one();
      refused_by_pool();
    } catch (...) {
      finish_one();  // not queued (out of memory, or the callable's copy threw)
      throw;
    }
  }

  // The rest of the destructor, out of line.
  [[gnu::noinline]] void destroy_unwaited() noexcept {
    // Always through the flag, not the count: the last callable touches the flag after the
    // count reaches zero, and the group must outlive that touch.
    wait_for_all();
    if (!has_error_.load(std::memory_order_relaxed)) return;  // see wait()
    if (first_error_) {
      report_uncollected_exception(
          "a TaskGroup was destroyed without wait() collecting the " +
              std::to_string(1 + dropped_.load(std::memory_order_relaxed)) +
              " exception(s) its callables threw; the first",
          first_error_);
    }
  }

  // Where a Call keeps its callable: the group's pointer, then the callable in a union, so that
  // the Call decides when it is built and destroyed. The destructor destroys a callable never run
  // (its task destroyed unrun); when F's destructor is trivial so is the slot's, and the task
  // destroys nothing after the call (common/task.hpp). A partial specialisation rather than a
  // destructor with a requires-clause: clang before 16 rejects the latter.
  template <class F, bool = std::is_trivially_destructible_v<F>>
  struct CallSlot {
    explicit CallSlot(TaskGroup* group) noexcept : group_(group) {}
    TaskGroup* group_;
    union {
      F fn_;
    };
  };
  template <class F>
  struct CallSlot<F, false> {
    explicit CallSlot(TaskGroup* group) noexcept : group_(group) {}
    CallSlot(const CallSlot&) = delete;
    CallSlot& operator=(const CallSlot&) = delete;
    ~CallSlot() {
      if (group_ != nullptr) fn_.~F();
    }
    TaskGroup* group_;
    union {
      F fn_;
    };
  };

  // A callable as the group hands it to its GroupWork: the group's pointer, then the callable; it
  // reports to the group itself. No std::optional around the callable: its flag would push a
  // 48-byte lambda out of the task's 56 inline bytes (common/task.hpp) into an allocation. The
  // pointer doubles as the flag instead: nullptr once the callable ran and was destroyed.
  template <class F>
  class Call : CallSlot<F> {
    using CallSlot<F>::group_;
    using CallSlot<F>::fn_;

   public:
    template <class G>
    Call(TaskGroup& group, G&& fn) : CallSlot<F>(&group) {
      ::new (static_cast<void*>(&fn_)) F(std::forward<G>(fn));
    }
    Call(Call&& other) noexcept(std::is_nothrow_move_constructible_v<F>)
        : CallSlot<F>(other.group_) {
      if (group_ != nullptr) ::new (static_cast<void*>(&fn_)) F(std::move(other.fn_));
    }
    Call& operator=(Call&&) = delete;
    void operator()() {
      TaskGroup* group = group_;
      group->invoke(fn_);
      fn_.~F();  // captures die before the owner can see the group idle
      group_ = nullptr;
      group->finish_here();  // last touch of the group
    }
  };

  // A callable as a group job (scheduler/job.hpp): the group's pointer, then the callable. Run
  // `here` by the loop of its own group's wait, it counts itself with a plain add; run anywhere
  // else (another group's wait or another worker's loop included), it counts itself among the jobs
  // finished elsewhere (finish_elsewhere()). Which wait is the group's own is the group's to know,
  // not the job's: a job carries no more than a spawned task, and a callable of 56 bytes fits.
  template <class F>
  class GroupCall final : public sched::GroupJob {
   public:
    template <class G>
    GroupCall(TaskGroup& group, G&& fn) noexcept : GroupJob(&run_it), call_(&group) {
      ::new (static_cast<void*>(&call_.fn_)) F(std::forward<G>(fn));
    }

   private:
    // Small: built in a small block (the scheduler chose by the same test), not a task node.
    static constexpr bool kSmall = sched::fits_small_block(sizeof(GroupCall), alignof(GroupCall));

    static bool run_it(sched::GroupJob& job, Ran how, const void* own_wait) noexcept {
      auto& self = static_cast<GroupCall&>(job);
      TaskGroup* group = self.call_.group_;
      how = group->counted_as(how, own_wait);
      if (how != Ran::dropped) group->invoke(self.call_.fn_);
      // Captures die before the owner can see the group idle. No flag to clear after them: the
      // memory becomes an empty task node or a spare block next (sched::empty_node_at(),
      // sched::empty_block_at()), and nothing destroys a GroupCall.
      self.call_.fn_.~F();
      group->settle(how);  // last touch of the group
      return kSmall;
    }

    CallSlot<F> call_;
  };
  // A callable as a frame (group_frame.hpp): its run function, the group, then the callable's
  // bytes, each word whole (a partial word is zero-extended from a narrower load, not stored in
  // parts and read back whole, which costs a store-forwarding stall).
  template <class F>
  struct GroupFrame {
    using Ran = sched::GroupJob::Ran;
    static constexpr std::size_t kCallableWords = std::is_empty_v<F> ? 0 : (sizeof(F) + 7) / 8;
    using Words = std::array<std::uint64_t, sched::kFrameHeaderWords + kCallableWords>;

    [[gnu::always_inline]] static Words words(TaskGroup& group, const F& fn) noexcept {
      Words w;
      w[0] = reinterpret_cast<std::uintptr_t>(
          sched::Scheduler::ForkJoinHandle::frame_run_function<GroupFrame>());
      w[1] = reinterpret_cast<std::uintptr_t>(&group);
      const auto* bytes = reinterpret_cast<const unsigned char*>(&fn);
      // Unrolled by hand, here and in run_body(): GCC leaves a loop of word copies through memory.
      [&]<std::size_t... I>(std::index_sequence<I...>) {
        ((w[sched::kFrameHeaderWords + I] = word_at(bytes, I)), ...);
      }(std::make_index_sequence<kCallableWords>{});
      return w;
    }
    static std::uint64_t word_at(const unsigned char* bytes, std::size_t i) noexcept {
      std::uint64_t word = 0;
      std::memcpy(&word, bytes + 8 * i, std::min<std::size_t>(8, sizeof(F) - 8 * i));
      return word;
    }

    static void put_word(unsigned char* bytes, std::size_t i, std::uint64_t word) noexcept {
      std::memcpy(bytes + 8 * i, &word, std::min<std::size_t>(8, sizeof(F) - 8 * i));
    }

    // Runs a frame as GroupCall::run_it() runs a group job, for the scheduler's run function
    // (frame_run_function()). The callable is copied out before it is called: the frame may be
    // the owner's slot, which its pushes may rewrite.
    [[gnu::always_inline]] static void run_body(const sched::FrameSlot& frame, Ran how,
                                                const void* own_wait) noexcept {
      auto* group = reinterpret_cast<TaskGroup*>(static_cast<std::uintptr_t>(frame[1]));
      // The bytes of a trivially copyable F, copied into storage for it, are an F (the copy
      // creates it implicitly).
      alignas(F) unsigned char bytes[sizeof(F)];
      [&]<std::size_t... I>(std::index_sequence<I...>) {
        (put_word(bytes, I, frame[sched::kFrameHeaderWords + I]), ...);
      }(std::make_index_sequence<kCallableWords>{});
      F& fn = *std::launder(reinterpret_cast<F*>(bytes));
      how = group->counted_as(how, own_wait);
      group->invoke(fn);
      group->settle(how);  // last touch of the group
    }
  };
  // Whether an F built from an Arg goes in a frame: plain bytes (a thief copies it before it owns
  // it, nothing destroys it), 48 bytes at most, built without a throw.
  template <class F, class Arg>
  static constexpr bool fits_group_frame =
      std::is_trivially_copyable_v<F> && std::is_trivially_destructible_v<F> &&
      sizeof(F) <= sched::kFrameCallableBytes && alignof(F) <= alignof(std::uint64_t) &&
      std::is_nothrow_constructible_v<F, Arg> && std::is_nothrow_copy_constructible_v<F>;

  // Whether a GroupCall<F> built from an Arg fits a task node's memory, without a throw.
  template <class F, class Arg>
  static constexpr bool fits_group_job =
      sizeof(GroupCall<F>) <= sched::Scheduler::ForkJoinHandle::kGroupJobSize &&
      alignof(GroupCall<F>) <= sched::Scheduler::ForkJoinHandle::kGroupJobAlign &&
      std::is_nothrow_constructible_v<F, Arg>;

  // The home's count of its group jobs (README.md, step 'Group jobs'). The home counts the jobs
  // run() pushes there (home_pushed_, written by the home alone), and the waiter those it ran here
  // or handed in (home_settled_, the waiter's alone); pending_ knows nothing of them until the
  // waiter, out of its own work, finds jobs pushed and not settled: those were taken elsewhere, and
  // it hands them in (hand_in_taken()). A job run elsewhere adds 1 to elsewhere_
  // (finish_elsewhere()); a hand-in takes off the number handed in. While elsewhere_ is below zero,
  // one unit of pending_ stands for the jobs handed in and unfinished; whoever brings elsewhere_
  // back to zero, the last finisher or the waiter (to zero or above: see hand_in_taken()), takes
  // the unit away. The waiter adds the unit before it takes its number off, so the count cannot
  // reach zero while one of them runs (no test catches the reverse order: a finisher would have to
  // come between the two instructions). A job taken after a hand-in may finish before the next
  // one and bring elsewhere_ to zero early, releasing the unit while an earlier job runs; the
  // waiter then holds a job it has not handed in, so it does not end its wait on the flag
  // (wait_for_work(), help_until_done()), and the next hand-in takes a unit again. A round nobody
  // took from costs no read-modify-write but the CAS with which a Chase-Lev pop takes the deque's
  // last job.
  //
  // The waiter need not be on the home: a group on the heap or in a coroutine's frame may be handed
  // to another thread between run() and wait(). That waiter runs nothing `here` (its loop pops only
  // its own worker's deque) and hands every job in, while the home may push more meanwhile: a
  // callable of the group, run there, adding to it. Hence home_pushed_ is atomic, with one writer.
  // A push the waiter has not seen is made by a callable that holds a unit of the count (a task
  // node, or a job handed in) or that finished, releasing the push into the count's release
  // sequence; either way the flag cannot read done, to a waiter that then misses the push, before
  // that callable finishes, and the waiter's acquire of the flag then sees it: it hands it in
  // rather than end its wait. Whether pushed jobs are unsettled: the flag knows nothing of them.
  bool holds_jobs_not_handed_in() const noexcept {
    return home_pushed_.load(std::memory_order_relaxed) != home_settled_;
  }
  // Whether the flag's "done" is not the whole truth: jobs the waiter has not handed in, or a
  // count above zero. The flag lags a count raised from zero: the adder resets it only after its
  // add (add_pending()). A group job the waiter has not handed in leaves the count at zero while
  // it runs, and when it adds to its group off the home (a task node), a hand-in between that add
  // and the reset raises the count from above zero, resets nothing, and would read the flag still
  // done. Acquire: a zero read here comes after every finisher's effects, as the flag's would.
  // GroupJobs.AWaitEndsOnTheCountNotOnAFlagAnAdderHasYetToReset catches a wait without the count's
  // look under TSan; an optimised build seldom reaches the window.
  bool more_than_the_flag_knows() const noexcept {
    return holds_jobs_not_handed_in() || pending_.load(std::memory_order_acquire) != 0;
  }
  // Whether the group has nothing left to wait for: the flag is set and it knows everything.
  bool nothing_left() const noexcept { return idle_.done() && !more_than_the_flag_knows(); }

  // How a group job or frame run `how` by the wait `own_wait` counts. Another group's wait pops it
  // when it lies above that group's mark too (a sibling made earlier on the home): the plain count
  // is the waiter's own, and the waiter of this group may be on another thread (GroupWork), so
  // that wait counts it as run elsewhere.
  sched::GroupJob::Ran counted_as(sched::GroupJob::Ran how, const void* own_wait) const noexcept {
    using Ran = sched::GroupJob::Ran;
    return how == Ran::here && own_wait != work_.own_wait() ? Ran::elsewhere : how;
  }
  // The count of a group job or frame, once it ran (or was dropped) `how`, after its captures died:
  // here, a plain add of the waiter's; elsewhere or dropped (the deque could not grow; run() then
  // throws), among the jobs finished elsewhere, which the waiter hands in (a drop was counted as
  // pushed already). Elsewhere, this is the job's last touch of the group.
  void settle(sched::GroupJob::Ran how) noexcept {
    if (how == sched::GroupJob::Ran::here) {
      ++home_settled_;
    } else {
      finish_elsewhere();
    }
  }

  void finish_elsewhere() {
    // acq_rel: each finisher's effects are released into elsewhere_; the one that brings it to
    // zero acquires them all through the release sequence and publishes them with finish_one().
    if (elsewhere_.fetch_add(1, std::memory_order_acq_rel) == -1) finish_one();
  }
  [[gnu::noinline]] void hand_in_taken() {
    const std::size_t pushed = home_pushed_.load(std::memory_order_relaxed);
    const auto taken = static_cast<std::int64_t>(pushed - home_settled_);
    home_settled_ = pushed;
    add_pending(1);  // first: the count holds while any of them runs
    const std::int64_t before = elsewhere_.fetch_sub(taken, std::memory_order_acq_rel);
    // All of them finished already, or an earlier hand-in's unit, still held, covers them. More
    // than `taken` finished when the home, away from this waiter, pushed a job after our load of
    // home_pushed_ and it finished before the fetch_sub: elsewhere_ stays above zero, no finisher
    // will bring it to zero, so this unit must go now (a later hand-in counts that job).
    if (before >= taken || before < 0) finish_one();
  }

  // run()'s answer when the pool refused its callable (its destruction has begun): from now on
  // wait() leaves that pool alone.
  [[noreturn]] void refused_by_pool() {
    refused_.store(true, std::memory_order_relaxed);
    throw SubmitRefused(
        "wslab::TaskGroup::run() from outside the pool after its destruction began; the callable "
        "was not queued");
  }

  // Runs a callable of the group unless the group is cancelled, keeping what it throws.
  template <class F>
  void invoke(F& fn) noexcept {
    if (is_cancelled()) return;
    try {
      fn();
    } catch (...) {
      record(std::current_exception());
    }
  }

  // Counts one more unfinished callable without touching pending_ each time: run() adds kCredit to
  // the count at once and uses the units one by one from credit_, a word on its own line. Thieves
  // finishing callables then have pending_'s line to themselves instead of fighting the spawner for
  // it on every run(). Unused credit keeps the count above the truth until the waiter hands it back
  // (hand_in_finished(), once it runs out of own work), so the group cannot look idle early. A
  // callable that run()s while its group is being waited for may take fresh credit after the waiter
  // handed its own back; the waiter hands that in too the next time it runs out of work (within its
  // 2 ms nap at worst).
  static constexpr std::size_t kCredit = 64;
  void take_credit() {
    std::size_t c = credit_.load(std::memory_order_relaxed);
    while (c != 0) {
      if (credit_.compare_exchange_weak(c, c - 1, std::memory_order_relaxed)) return;
    }
    add_pending(kCredit);
    credit_.fetch_add(kCredit - 1, std::memory_order_relaxed);
  }

  // Counts `n` more unfinished callables.
  void add_pending(std::size_t n = 1) {
    if (pending_.fetch_add(n, std::memory_order_acq_rel) == 0) {
      // The group was idle. The callable that took it there may still be between its decrement
      // and idle_.set(); let it finish (a few instructions) before re-arming the flag, or its
      // late set() would announce "all done" for the work we are adding now.
      while (!idle_.done())
        cpu_relax();
      idle_.reset();
    }
  }

  // The first exception of a round is kept by the callable that claims has_error_; the others
  // are counted. No lock: first_error_ has one writer per round, and it is read only once every
  // callable of the round has finished, after wait_for_all(), whose acquire on the count (or the
  // home's own order, for a group job run here) makes the write visible.
  void record(std::exception_ptr error) noexcept {
    if (!has_error_.exchange(true, std::memory_order_relaxed)) {
      first_error_ = std::move(error);
    } else {
      dropped_.fetch_add(1, std::memory_order_relaxed);
    }
  }

  // acq_rel: each callable's effects are released into the count, and the last decrement, which
  // acquires them all through the release sequence, publishes them with idle_.set().
  void finish_one() { finish(1); }
  void finish(std::size_t n) {
    if (pending_.fetch_sub(n, std::memory_order_acq_rel) == n) idle_.set();
  }

  // A callable of ours finished on this thread. The thread waiting for the group keeps the count
  // of those it ran and hands it in once it runs out of work (hand_in_finished()), so that a
  // group whose callables all run on its waiter (one worker, or no thief) never touches the
  // shared count on their way out. The count stays above the truth meanwhile: the group cannot
  // look idle early, and it cannot look idle late, because the waiter hands in before it helps,
  // spins or sleeps.
  void finish_here() {
    if (detail::this_fork_join_thread.waiting_for == this) {
      ++finished_by_waiter_;
    } else {
      finish_one();
    }
  }
  void hand_in_finished() {
    std::size_t n = std::exchange(finished_by_waiter_, 0);
    // A zero needs no exchange: credit taken after this look is handed in next time.
    if (credit_.load(std::memory_order_relaxed) != 0)
      n += credit_.exchange(0, std::memory_order_relaxed);
    if (holds_jobs_not_handed_in()) [[unlikely]]
      hand_in_taken();  // the home's group jobs that ran elsewhere
    if (n != 0) finish(n);
  }

  [[gnu::always_inline]] void wait_for_all() {
    // Nothing left (every empty group, and the destructor after wait()): the flag's acquire is
    // all a wait needs, as in help_until_done()'s first check, but the flag knows nothing of
    // group jobs.
    if (nothing_left()) return;
    wait_for_work();
  }
  // Flattened: the loop of run_own_on_home() is inlined, not called (one frame, not two, around
  // the callables it runs); everything past the common case is out of line, in wait_for_others(),
  // so that the frame stays small for a recursion that waits at every level.
  [[gnu::noinline, gnu::flatten]] void wait_for_work() {
    struct Waiting {  // nested waits on one thread: the innermost group keeps its count
      TaskGroup* saved;
      explicit Waiting(TaskGroup* g)
          : saved(std::exchange(detail::this_fork_join_thread.waiting_for, g)) {}
      ~Waiting() { detail::this_fork_join_thread.waiting_for = saved; }
    } waiting(this);
    // The common case first, on the worker that made the group: every callable it queued that
    // nobody stole runs here, in one loop, and the count of those is handed in; when nothing was
    // stolen the group is then done, with none of the waiting machinery below. Only a worker of
    // a live pool is the group's home, and the pool never refuses it, so this needs no look at
    // the pool's lifetime first; off the home it touches no pool.
    (void)work_.run_own_on_home();
    // Before any look at the flag, which knows nothing of the group jobs the home pushed; and not
    // the flag alone: a waiter on another thread than the home may find pushes made after its
    // hand-in (a window no test reaches: the later exits in help_until_done() are the ones the
    // tests catch).
    hand_in_finished();
    if (nothing_left()) return;
    wait_for_others();
  }
  // The rest of wait_for_work(), inside its Waiting: callables that are not on this thread's deque.
  [[gnu::noinline]] void wait_for_others() {
    // A pool that is gone (perhaps destroyed by a callable just run here, from its own task, which
    // completes the destruction before it returns), or refused us, is not helped: what is left
    // runs elsewhere.
    const bool help_pool = !refused_.load(std::memory_order_relaxed) && !lifetime_.expired();
    if (help_pool && waits_outside_workers()) {
      wait_beside_workers();
      return;
    }
    // A round first runs one of our unstarted callables here, if one is in reach.
    help_until_done(
        help_pool ? &pool_ : nullptr, &lifetime_, idle_,
        [this, help_pool] { return work_.run_own(help_pool); }, [this] { hand_in_finished(); },
        // A job pushed since the last hand-in may be out and uncounted: pushed by a callable that
        // ran elsewhere (the home, when this waiter is on another thread; a group job that a
        // batch steal moved off the home and the home's helping took back) and finished. Or the
        // flag is not yet reset after an add (more_than_the_flag_knows()).
        [this] { return more_than_the_flag_knows(); });
  }

  // The wait of a thread outside the scheduler's workers (README.md, step 'Guest seat'): it
  // leaves its callables to the workers and sleeps, so that N workers compute on N CPUs, not
  // N + 1. It runs one itself only when some wait unstarted while none runs, none has started
  // for kHandOverGrace and every worker is busy: with other work, or blocked, perhaps on this very
  // group (a task that waits for a callable of ours). A worker running one of ours is progress,
  // however long the callable takes, and a worker still searching is one the machine has not yet
  // scheduled.
  void wait_beside_workers() {
    std::size_t started = work_.listed_started();
    for (;;) {
      hand_in_finished();  // credit taken by run() on this thread, and any callable run here
      if (idle_.sleep_for(detail::kHandOverGrace) && !more_than_the_flag_knows()) return;
      const std::size_t now = work_.listed_started();
      if (now == started && every_worker_busy() && !work_.listed_running())
        (void)work_.run_listed();
      started = work_.listed_started();
    }
  }

  // What the two waits above ask of the pool itself, each inside a visit (PoolVisit): the waiter
  // may be a thread the pool's destructor does not wait for, so the pool may be destroyed while it
  // waits. Once the destructor has drained the pool (our callables with the rest) the answer is
  // false, and the wait ends with what help_until_done() finds left: nothing.
  bool waits_outside_workers() const noexcept {
    if (work_.homed_on_a_worker()) return false;  // made on a worker: no visit needed to know
    PoolVisit visit(lifetime_);
    return visit && work_.waits_outside_workers();
  }
  bool every_worker_busy() const noexcept {
    PoolVisit visit(lifetime_);
    return visit && work_.every_worker_busy();
  }

  IThreadPool& pool_;
  GroupWork<PoolHandle> work_;  // how the pool queues our callables and finds the unstarted ones
  PoolLifetime lifetime_;
  std::atomic<bool> cancelled_{false};
  std::atomic<bool> refused_{false};
  // Written by every thread that finishes a callable: a line of its own, away from the fields
  // run() and is_cancelled() read.
  alignas(kCacheLineSize) std::atomic<std::size_t> pending_{0};
  CompletionFlag idle_;                                         // done exactly when pending_ is 0
  std::atomic<std::int64_t> elsewhere_{0};                      // see finish_elsewhere()
  alignas(kCacheLineSize) std::atomic<std::size_t> credit_{0};  // units counted, not yet used
  std::size_t finished_by_waiter_ = 0;                          // the waiting thread's only
  std::atomic<std::size_t> home_pushed_{0};  // group jobs the home pushed, ever: its own writes
  std::size_t home_settled_ = 0;             // of those, the ones the waiter ran here or handed in

  // Set by the round's first record(), cleared by wait(): whether the round has an exception to
  // hand over, so that a round without one touches neither field below.
  std::atomic<bool> has_error_{false};
  std::exception_ptr first_error_;            // written by the record() that set has_error_
  std::atomic<std::size_t> dropped_{0};       // the round's other exceptions
  std::atomic<std::size_t> last_dropped_{0};  // discarded by the last wait()
};

}  // namespace wslab
