// A piece of forked work that runs exactly once, either where it was queued or inline in the
// thread that waits for it, whichever claims it first.
//
// This is what makes help-while-waiting safe and cheap. When a thread forks work it also queues a
// small "trampoline" task that points to the job; when the forker later waits, it tries to claim
// the job itself and, if nobody has started it, runs it inline (Duffy's "wait inlining"). The
// trampoline that eventually comes out of the queue finds the job claimed and does nothing.
// Because a queued trampoline can outlive the waiter's frame, the job is reference counted (one
// reference for the forker, one for the trampoline) and freed by whoever lets go last.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "../../common/task.hpp"
#include "../../common/thread_pool.hpp"

namespace wslab {

class ClaimableJob {
 public:
  ClaimableJob(const ClaimableJob&) = delete;
  ClaimableJob& operator=(const ClaimableJob&) = delete;

  // True for exactly one caller. The plain load first spares the locked exchange when the job
  // is obviously taken (the common case for a trampoline whose job was inlined). acquire on the
  // exchange pairs with nothing today (the job's state was published by the queue hand-off or
  // is our own) but keeps the claim an ordering point if a job is ever re-armed.
  bool try_claim() noexcept {
    return !claimed_.load(std::memory_order_relaxed) &&
           !claimed_.exchange(true, std::memory_order_acquire);
  }
  bool claimed() const noexcept { return claimed_.load(std::memory_order_relaxed); }

  // Runs the job; only the thread whose try_claim() returned true calls it. Never throws: a job
  // stores what its callable threw for whoever waits on it.
  virtual void run_claimed() noexcept = 0;

  void add_ref() noexcept { refs_.fetch_add(1, std::memory_order_relaxed); }
  // acq_rel: every holder's last use of the job happens-before the delete by the last one.
  void release() noexcept {
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }

 protected:
  explicit ClaimableJob(std::uint32_t initial_refs = 1) noexcept : refs_(initial_refs) {}
  virtual ~ClaimableJob() = default;

 private:
  std::atomic<std::uint32_t> refs_;
  std::atomic<bool> claimed_{false};
};

// An owning reference to a job (intrusive, so that the trampoline task stays 8 bytes and inline).
template <class Job>
class JobRef {
 public:
  JobRef() noexcept = default;
  // Adopts one reference the caller already holds.
  static JobRef adopt(Job* job) noexcept {
    JobRef r;
    r.job_ = job;
    return r;
  }
  // Takes a new reference to a job someone else keeps alive.
  static JobRef share(Job* job) noexcept {
    job->add_ref();
    return adopt(job);
  }
  JobRef(const JobRef& o) noexcept : job_(o.job_) {
    if (job_ != nullptr) job_->add_ref();
  }
  JobRef(JobRef&& o) noexcept : job_(std::exchange(o.job_, nullptr)) {}
  template <class Derived>
    requires std::is_convertible_v<Derived*, Job*>
  JobRef(JobRef<Derived>&& o) noexcept : job_(o.release_ownership()) {}  // NOLINT: like a pointer
  // Gives up the reference without releasing it.
  Job* release_ownership() noexcept { return std::exchange(job_, nullptr); }
  JobRef& operator=(JobRef o) noexcept {
    std::swap(job_, o.job_);
    return *this;
  }
  ~JobRef() {
    if (job_ != nullptr) job_->release();
  }
  Job* get() const noexcept { return job_; }
  Job* operator->() const noexcept { return job_; }
  Job& operator*() const noexcept { return *job_; }
  explicit operator bool() const noexcept { return job_ != nullptr; }

 private:
  Job* job_ = nullptr;
};

namespace detail {
// How long a join that a thread outside the pool handed to the workers waits, between looks, for
// one of them to start it: a parked worker wakes within tens of microseconds. The thread takes it
// back only once a look finds every worker busy, elsewhere or blocked, perhaps on work under its
// frame. An outside task group's waiter looks as often (and hands in its credit each time).
inline constexpr std::chrono::milliseconds kHandOverGrace{1};
}  // namespace detail

// Queues the trampoline for `job`, which takes over one reference. Throws what submit() throws
// (the trampoline, and with it that reference, is then destroyed). One function for every kind
// of job (run_claimed() is virtual), so that each file compiles one trampoline task.
inline void submit_trampoline(IThreadPool& pool, JobRef<ClaimableJob> job) {
  pool.submit(Task([job = std::move(job)] {
    if (job->try_claim()) job->run_claimed();
  }));
}

}  // namespace wslab
