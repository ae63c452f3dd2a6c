// A task group's callables as claimable jobs (claimable_job.hpp) the group lists for its waiter:
// each goes to the pool as a trampoline task, and its entry in the list lets the waiter claim and
// run it itself, wherever the trampoline is queued. Whoever claims a job first runs it; the
// other side finds it claimed and drops it. This is how a waiter reaches its own unstarted work on
// a pool that knows nothing of groups, and on the scheduler from a thread that is none of its
// workers (whose submissions go to the injector, where nobody can search for a group's work).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <mutex>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

#include "../../common/thread_pool.hpp"
#include "../../common/worker_identity.hpp"
#include "claimable_job.hpp"
#include "stack_room.hpp"

namespace wslab {

class GroupCallList {
 public:
  GroupCallList() = default;
  GroupCallList(const GroupCallList&) = delete;
  GroupCallList& operator=(const GroupCallList&) = delete;

  // Queues call() on `pool` and lists it. Throws what submit() throws (the pool refuses once its
  // destruction has begun), or std::bad_alloc; call() then never runs.
  template <class Call>
  void spawn(IThreadPool& pool, Call&& call) {
    {
      // Room for the listing first, so that nothing can throw once the job is queued: a slot
      // for each spawn between here and its push_back, on any thread. The list grows
      // geometrically (reserve() alone would grow it by one slot, a copy of the whole list per
      // spawn).
      std::lock_guard<std::mutex> lock(mutex_);
      if (unstarted_.size() >= prune_at_) {
        // Jobs the pool already ran stay listed until the waiter pops them; drop them in bulk
        // here so a group that is fed for a long time without waiting stays small (those still
        // running are kept aside, for one_running()).
        keep_running(std::partition(unstarted_.begin(), unstarted_.end(),
                                    [](const JobRef<Listed>& j) { return !j->claimed(); }));
        prune_at_ = std::max<std::size_t>(64, unstarted_.size() * 2);
        listed_.store(unstarted_.size(), std::memory_order_relaxed);
      }
      const std::size_t needed = unstarted_.size() + reserved_ + 1;
      if (needed > unstarted_.capacity())
        unstarted_.reserve(std::max(needed, 2 * unstarted_.capacity()));
      ++reserved_;
    }
    Item<std::decay_t<Call>>* item = nullptr;
    try {
      item = new Item<std::decay_t<Call>>(std::forward<Call>(call), started_);
    } catch (...) {  // out of memory, or the callable's move threw
      give_back_reservation();
      throw;
    }
    JobRef<Listed> ours = JobRef<Listed>::adopt(item);  // ours + the queue's
    try {
      submit_trampoline(pool, JobRef<Listed>::adopt(item));
    } catch (...) {
      // Refused (the pool's destruction has begun) or out of memory: the trampoline is gone
      // and nobody else knows the job, so this claim wins and the call never runs.
      (void)ours->try_claim();
      give_back_reservation();
      throw;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    --reserved_;
    unstarted_.push_back(std::move(ours));  // within the capacity reserved above
    listed_.store(unstarted_.size(), std::memory_order_relaxed);
  }

  // Runs the newest listed callable nobody has started, here, as a task of `pool` (wait_idle()
  // inside it is refused, as on a worker), on a fresh stack if this one is nearly full
  // (stack_room.hpp): the recursion is the program's own. False when none is left. Whether the
  // pool is still usable does not matter: the claim decides who runs it.
  //
  // The waiter asks on every round of its wait, and the list is mostly empty (on the scheduler it
  // holds only what threads outside its workers run()): the empty case is one relaxed load and a
  // branch inlined into the wait loop, the lock and the rest out of line. A stale zero (an entry a
  // callable on another thread has just added) is seen on a later round.
  [[gnu::always_inline]] bool run_own(IThreadPool& pool) {
    if (listed_.load(std::memory_order_relaxed) == 0) return false;
    return run_newest_listed(pool);
  }

  // How many listed callables have started, wherever they run, and whether one is running now: a
  // waiter outside the pool's workers watches both to tell whether the workers are getting to its
  // work (TaskGroup::wait_beside_workers()).
  std::size_t started() const noexcept { return started_.load(std::memory_order_relaxed); }
  bool one_running() {
    std::lock_guard<std::mutex> lock(mutex_);
    std::erase_if(running_, [](const JobRef<Listed>& j) { return j->done(); });
    if (!running_.empty()) return true;
    return std::any_of(unstarted_.begin(), unstarted_.end(),
                       [](const JobRef<Listed>& j) { return j->claimed() && !j->done(); });
  }

 private:
  void give_back_reservation() noexcept {
    std::lock_guard<std::mutex> lock(mutex_);
    --reserved_;
  }

  [[gnu::noinline]] bool run_newest_listed(IThreadPool& pool) {
    for (;;) {
      JobRef<Listed> job;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (unstarted_.empty()) return false;
        job = std::move(unstarted_.back());
        unstarted_.pop_back();
        listed_.store(unstarted_.size(), std::memory_order_relaxed);
        if (job->claimed() && !job->done()) keep_aside(job);
      }
      if (job->try_claim()) {
        with_stack_room([&] {
          RunningTaskScope running(pool);
          job->run_claimed();
        });
        return true;
      }
    }
  }

  // A listed job says when it has run: the job outlives its call (the runner holds a reference),
  // the group and this list may not.
  class Listed : public ClaimableJob {
   public:
    bool done() const noexcept { return done_.load(std::memory_order_acquire); }

   protected:
    using ClaimableJob::ClaimableJob;
    void mark_done() noexcept { done_.store(true, std::memory_order_release); }

   private:
    std::atomic<bool> done_{false};
  };

  template <class Call>
  class Item final : public Listed {
   public:
    template <class C>
    Item(C&& call, std::atomic<std::size_t>& started)
        : Listed(2), call_(std::forward<C>(call)), started_(&started) {}
    void run_claimed() noexcept override {
      // Before the call: its end may let the group, and this list with it, go.
      started_->fetch_add(1, std::memory_order_relaxed);
      call_();
      mark_done();
    }

   private:
    Call call_;
    std::atomic<std::size_t>* started_;
  };

  // Moves the claimed entries from `first` to the end of the list aside, keeping those still
  // running. Under mutex_.
  void keep_running(std::vector<JobRef<Listed>>::iterator first) {
    for (auto it = first; it != unstarted_.end(); ++it) {
      if (!(*it)->done()) keep_aside(std::move(*it));
    }
    unstarted_.erase(first, unstarted_.end());
  }
  // Keeps a started job in sight until it is done; the finished ones go in bulk, so that a group
  // waited for round after round keeps only a few. Under mutex_. Out of memory, the job is left
  // out of sight: one_running() may then miss it, which costs at most a callable taken back early.
  void keep_aside(JobRef<Listed> job) noexcept {
    if (running_.size() >= running_prune_at_) {
      std::erase_if(running_, [](const JobRef<Listed>& j) { return j->done(); });
      running_prune_at_ = std::max<std::size_t>(16, running_.size() * 2);
    }
    try {
      running_.push_back(std::move(job));
    } catch (const std::bad_alloc&) {
    }
  }

  std::mutex mutex_;
  std::vector<JobRef<Listed>> unstarted_;  // guarded by mutex_; may hold started ones
  std::vector<JobRef<Listed>> running_;    // guarded by mutex_: started, perhaps not yet done
  std::size_t running_prune_at_ = 16;      // guarded by mutex_
  std::size_t prune_at_ = 64;              // guarded by mutex_
  std::size_t reserved_ = 0;  // guarded by mutex_: spawns between their reserve and push_back
  std::atomic<std::size_t> listed_{0};   // unstarted_.size(), for a look without the lock
  std::atomic<std::size_t> started_{0};  // listed callables started, by anyone
};

}  // namespace wslab
