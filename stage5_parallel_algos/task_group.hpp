// TaskGroup: run(f) any number of callables on a pool, then wait() for all of them.
//
//   TaskGroup group(pool);
//   for (auto& part : parts) group.run([&part] { process(part); });
//   group.wait();  // helps while waiting; rethrows the first exception
//
// wait() never just blocks a worker: it first runs the group's own callables that nobody has
// started (newest first, for cache locality), then helps the pool within the bounds of
// help_bounds.hpp (help_until_done.hpp), and sleeps only when its remaining callables are all
// running elsewhere. That is why groups nest freely, from outside the pool or inside tasks, even on
// a 1-thread pool: a waiter can always run its own unstarted work itself.
//
// Exceptions: every callable runs, whatever the others throw (nothing is skipped, so nothing is
// lost). wait() rethrows the first exception recorded and discards the later ones, which
// dropped_exceptions() counts. A group destroyed without wait() waits in its destructor and
// reports an exception nobody collected on stderr.
//
// run() may be called by the owner and by the group's own callables (a callable may add work to
// its group); wait() by the owner only, which may reuse the group afterwards.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdio>
#include <exception>
#include <mutex>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "../common/thread_pool.hpp"
#include "claimable_job.hpp"
#include "help_until_done.hpp"
#include "latch.hpp"
#include "stack_room.hpp"

namespace wslab {

class TaskGroup {
 public:
  explicit TaskGroup(IThreadPool& pool) : pool_(pool) { idle_.set(); }
  TaskGroup(const TaskGroup&) = delete;
  TaskGroup& operator=(const TaskGroup&) = delete;

  ~TaskGroup() {
    if (pending_.load(std::memory_order_acquire) != 0) wait_for_all();
    std::lock_guard<std::mutex> lock(mutex_);
    if (first_error_) {
      std::fprintf(stderr,
                   "wslab: TaskGroup destroyed with an exception nobody collected with wait()\n");
    }
  }

  template <class F>
  requires std::invocable < std::decay_t<F>
  & > void run(F&& fn) {
    auto* item = new Item<std::decay_t<F>>(*this, std::forward<F>(fn));  // refs: ours + queue's
    JobRef<ClaimableJob> ours = JobRef<ClaimableJob>::adopt(item);
    if (pending_.fetch_add(1, std::memory_order_acq_rel) == 0) {
      // The group was idle. The callable that took it there may still be between its decrement
      // and idle_.set(); let it finish (a few instructions) before re-arming the flag, or its
      // late set() would announce "all done" for the work we are adding now.
      while (!idle_.done())
        cpu_relax();
      idle_.reset();
    }
    try {
      submit_trampoline(pool_, JobRef<ClaimableJob>::adopt(item));
    } catch (...) {
      // The pool refused it (shutting down): the item will never run from the queue.
      if (ours->try_claim()) finish_one();
      throw;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    if (unstarted_.size() >= prune_at_) {
      // Items the pool already ran stay listed until the owner's wait() pops them; drop them in
      // bulk here so a group that is fed for a long time without waiting stays small.
      std::erase_if(unstarted_, [](const JobRef<ClaimableJob>& j) { return j->claimed(); });
      prune_at_ = std::max<std::size_t>(64, unstarted_.size() * 2);
    }
    unstarted_.push_back(std::move(ours));
  }

  // Waits until every callable run() so far has finished, then rethrows the first exception one
  // of them threw (and forgets it).
  void wait() {
    wait_for_all();
    std::exception_ptr error;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      error = std::exchange(first_error_, nullptr);
    }
    if (error) std::rethrow_exception(error);
  }

  // Exceptions thrown by this group's callables that wait() did not rethrow.
  std::size_t dropped_exceptions() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return dropped_;
  }

 private:
  template <class F>
  class Item final : public ClaimableJob {
   public:
    template <class G>
    Item(TaskGroup& group, G&& fn) : ClaimableJob(2), group_(group), fn_(std::forward<G>(fn)) {}
    void run_claimed() noexcept override {
      try {
        (*fn_)();
      } catch (...) {
        group_.record(std::current_exception());
      }
      fn_.reset();          // captures die before the owner can see the group idle
      group_.finish_one();  // last touch of the group
    }

   private:
    TaskGroup& group_;
    std::optional<F> fn_;
  };

  void record(std::exception_ptr error) noexcept {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!first_error_) {
      first_error_ = std::move(error);
    } else {
      ++dropped_;
    }
  }

  // acq_rel: each callable's effects are released into the count, and the last decrement, which
  // acquires them all through the release sequence, publishes them with idle_.set().
  void finish_one() {
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) idle_.set();
  }

  // Pops our newest unstarted callable and runs it here; false when none is left.
  bool run_own_unstarted() {
    for (;;) {
      JobRef<ClaimableJob> job;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (unstarted_.empty()) return false;
        job = std::move(unstarted_.back());
        unstarted_.pop_back();
      }
      if (job->try_claim()) {
        with_stack_room([&] { job->run_claimed(); });
        return true;
      }
    }
  }

  void wait_for_all() {
    help_until_done(&pool_, idle_, [this] { return run_own_unstarted(); });
  }

  IThreadPool& pool_;
  std::atomic<std::size_t> pending_{0};
  CompletionFlag idle_;  // done exactly when pending_ is 0

  mutable std::mutex mutex_;
  std::vector<JobRef<ClaimableJob>> unstarted_;  // guarded by mutex_; may hold started ones
  std::size_t prune_at_ = 64;
  std::exception_ptr first_error_;  // guarded by mutex_
  std::size_t dropped_ = 0;         // guarded by mutex_
};

}  // namespace wslab
