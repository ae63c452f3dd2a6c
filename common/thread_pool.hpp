// The one interface every stage implements, so that one test suite and one harness drive them
// all. Read stage1_global_lock/global_lock_pool.hpp next: it is the simplest implementation.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>

#include "stats.hpp"
#include "task.hpp"
#include "worker_identity.hpp"
#include "worker_threads.hpp"

namespace wslab {

namespace detail {

// One record per live pool, saying whether the pool it was lent to still exists. Records are
// recycled but never freed, so a PoolLifetime may read one long after its pool is gone: the
// generation tells the pools that held it apart.
struct LifetimeSlot {
  std::atomic<std::uint64_t> generation{0};
  // The visits (PoolVisit) open on the pool, in the low bits, and kClosedToVisits once its
  // destructor has drained it. One word, so that a visitor's admission and the destructor's closing
  // are read-modify-writes of the same atomic: one of the two comes first, and the other sees it.
  std::atomic<std::uint64_t> visits{0};
  LifetimeSlot* next_free = nullptr;  // guarded by the registry's mutex
};

inline constexpr std::uint64_t kClosedToVisits = std::uint64_t{1} << 63;

class LifetimeSlots {
 public:
  static LifetimeSlot* acquire() {
    LifetimeSlots& r = instance();
    std::lock_guard<std::mutex> lock(r.mutex_);
    if (r.free_ == nullptr) return new LifetimeSlot;
    LifetimeSlot* slot = r.free_;
    r.free_ = slot->next_free;
    return slot;
  }
  // release: whoever sees the new generation sees a pool whose destruction has completed. The
  // slot opens to visits again only after the generation moved on (release, paired with the
  // visitor's acquire RMW), so a visitor that still holds the old generation and finds the slot
  // open sees the new generation and leaves.
  static void release(LifetimeSlot* slot) noexcept {
    slot->generation.fetch_add(1, std::memory_order_release);
    slot->visits.fetch_and(~kClosedToVisits, std::memory_order_release);
    LifetimeSlots& r = instance();
    std::lock_guard<std::mutex> lock(r.mutex_);
    slot->next_free = r.free_;
    r.free_ = slot;
  }

 private:
  // Never destroyed: a pool may be destroyed during static destruction.
  static LifetimeSlots& instance() {
    static LifetimeSlots* registry = new LifetimeSlots;
    return *registry;
  }
  std::mutex mutex_;
  LifetimeSlot* free_ = nullptr;  // guarded by mutex_
};

}  // namespace detail

// A weak handle on a pool's lifetime (IThreadPool::lifetime()): expired() turns true once the
// pool's destructor has completed, and stays true. Any thread may ask at any time, also long
// after the pool is gone: it reads only a small record that is never freed. Two words, copied
// without any atomic read-modify-write, so a future or a task group can keep one for free.
// While the destructor runs (draining the last tasks) the pool is not expired: its tasks may
// still submit.
class PoolLifetime {
 public:
  // A handle that is expired from the start.
  PoolLifetime() noexcept = default;
  bool expired() const noexcept {
    return slot_ == nullptr || slot_->generation.load(std::memory_order_acquire) != generation_;
  }

 private:
  friend class IThreadPool;
  friend class PoolVisit;
  PoolLifetime(detail::LifetimeSlot* slot, std::uint64_t generation) noexcept
      : slot_(slot), generation_(generation) {}
  detail::LifetimeSlot* slot_ = nullptr;
  std::uint64_t generation_ = 0;
};

// A thread that holds a pool only through a PoolLifetime (a future's or a task group's waiter, a
// coroutine's resumption) and wants to call the pool: expired() answers for the moment it is
// asked, but the pool's destructor may complete on another thread right after. A visit closes
// that window: while one is open the pool's destructor does not free the pool (drain_and_join()
// waits for it). Visits are admitted until the destructor has drained the pool (every task run,
// tasks they submitted included), so a thread may go on helping it drain; from then on none is,
// and the calls a visit makes (run a queued task, queue one, ask the pool something) find nothing
// left to wait for, so a visit never holds the destructor for longer than its own call. Workers of
// the pool, which the destructor joins, need none.
//
// Admitted or not is known at construction (explicit operator bool). Lives on the stack of the
// thread that made it: the visits a thread holds form a list (ThreadIdentity::visits), so that a
// destructor called inside a visit (a task the visitor ran destroys the pool) does not wait for
// its own thread's visits.
class [[nodiscard]] PoolVisit {
 public:
  explicit PoolVisit(const PoolLifetime& lifetime) noexcept {
    detail::LifetimeSlot* slot = lifetime.slot_;
    if (slot == nullptr) return;
    // acq_rel: acquire pairs with release()'s reopening (so the generation read below is the new
    // one when the slot was reused); release orders nothing here, the RMW is what counts.
    const std::uint64_t before = slot->visits.fetch_add(1, std::memory_order_acq_rel);
    if ((before & detail::kClosedToVisits) != 0 ||
        slot->generation.load(std::memory_order_acquire) != lifetime.generation_) {
      slot->visits.fetch_sub(1, std::memory_order_release);
      return;
    }
    slot_ = slot;
    generation_ = lifetime.generation_;
    outer_ = this_thread_identity.visits;
    this_thread_identity.visits = this;
  }
  PoolVisit(const PoolVisit&) = delete;
  PoolVisit& operator=(const PoolVisit&) = delete;
  // release: what the visitor did to the pool happens-before the destructor's acquire load that
  // sees the visit gone.
  ~PoolVisit() {
    if (slot_ == nullptr) return;
    this_thread_identity.visits = outer_;
    if (!ended_by_destructor_) slot_->visits.fetch_sub(1, std::memory_order_release);
  }
  explicit operator bool() const noexcept { return slot_ != nullptr; }

 private:
  friend class IThreadPool;
  detail::LifetimeSlot* slot_ = nullptr;
  std::uint64_t generation_ = 0;
  PoolVisit* outer_ = nullptr;
  bool ended_by_destructor_ = false;
};

class IThreadPool {
 public:
  IThreadPool()
      : lifetime_slot_(detail::LifetimeSlots::acquire()),
        lifetime_generation_(lifetime_slot_->generation.load(std::memory_order_relaxed)) {}
  IThreadPool(const IThreadPool&) = delete;
  IThreadPool& operator=(const IThreadPool&) = delete;
  // Runs after the implementation's destructor has drained and joined everything: from here on
  // every PoolLifetime of this pool is expired.
  virtual ~IThreadPool() { detail::LifetimeSlots::release(lifetime_slot_); }

  // Queues one fire-and-forget task. Called from one of this pool's workers it is a recursive
  // submission (stages 2-4 keep it in that worker's own queue); from any other thread it is an
  // external one. Throws std::invalid_argument for an empty task (require_task() below), and
  // SubmitRefused (a std::logic_error, below) for an external submission once destruction has
  // begun (recursive submissions made while the destructor drains are accepted and run); a refused
  // task is destroyed, and the pool is not touched after the refusal.
  virtual void submit(Task task) = 0;

  // Blocks until no task is queued or running, including tasks submitted by tasks, then rethrows
  // the first exception that escaped a task since the previous wait_idle(). Exceptions never kill
  // a worker or cancel other tasks. Throws std::logic_error when called from one of the pool's
  // own workers or from inside one of its tasks, whichever thread runs it (running_task_of() in
  // worker_identity.hpp): it would wait for itself.
  virtual void wait_idle() = 0;

  // Runs one queued task on the calling thread, if one can be found, and returns true; returns
  // false at once otherwise. A waiting thread calls this to help instead of blocking ("wait
  // inlining"). An exception from the task is recorded for wait_idle(), not thrown here.
  virtual bool try_run_one() = 0;

  virtual std::size_t thread_count() const noexcept = 0;
  // The stage's folder name, e.g. "stage1_global_lock".
  virtual std::string_view name() const noexcept = 0;
  virtual PoolStats stats() const = 0;
  // True when the calling thread is one of this pool's workers.
  virtual bool owns_current_thread() const noexcept = 0;

  // The destructor (in every implementation) runs every queued task, recursive ones included, to
  // completion and then joins the workers. Destroying a pool from inside one of its own tasks
  // prints a diagnostic, drains the other tasks, joins the other workers and detaches the
  // destroying one: no deadlock and no lost task.

  // A handle that tells whether this pool still exists (see PoolLifetime). Futures and task
  // groups keep one, so that using them after their pool is gone never touches the pool.
  PoolLifetime lifetime() const noexcept {
    return PoolLifetime(lifetime_slot_, lifetime_generation_);
  }

  // The two steps of a pool's destructor (drain_and_join(), pool_lifecycle.hpp) that concern
  // visits, once the pool is drained; no one else calls them. First: no PoolVisit is admitted
  // from here on.
  void close_to_visits() const noexcept {
    lifetime_slot_->visits.fetch_or(detail::kClosedToVisits, std::memory_order_acq_rel);
  }
  // For the destructor, before anything is freed: waits until every admitted visit has ended,
  // except those of the calling thread (the destructor runs inside them: they end without
  // touching the pool, and no longer count). A visit that remains is a call into a drained pool,
  // with nothing left to wait for, so yielding until it ends is enough.
  void wait_out_visits() const noexcept {
    std::uint64_t own = 0;
    for (PoolVisit* v = this_thread_identity.visits; v != nullptr; v = v->outer_) {
      if (v->slot_ == lifetime_slot_ && v->generation_ == lifetime_generation_ &&
          !v->ended_by_destructor_) {
        v->ended_by_destructor_ = true;
        ++own;
      }
    }
    if (own != 0) lifetime_slot_->visits.fetch_sub(own, std::memory_order_relaxed);
    // acquire: pairs with each visit's release decrement.
    while ((lifetime_slot_->visits.load(std::memory_order_acquire) & ~detail::kClosedToVisits) != 0)
      std::this_thread::yield();
  }

 private:
  detail::LifetimeSlot* lifetime_slot_;
  std::uint64_t lifetime_generation_;
};

// True on a thread that continues the work of a blocked worker of the pool
// (stands_in_for_worker_of(), worker_identity.hpp). A pool's workers name it by the address of the
// complete object, hence the cast (which needs no RTTI); the list is almost always empty, so it is
// tested first.
inline bool stands_in_for_a_worker_of(const IThreadPool& pool) noexcept {
  return this_thread_identity.stands_in != nullptr &&
         stands_in_for_worker_of(dynamic_cast<const void*>(&pool));
}

// True on one of the pool's workers, asked of the thread alone, never of the pool (which may be
// gone: no virtual call, no dynamic_cast). A pool's workers carry the address of its complete
// object (common/worker_threads.hpp); this compares the address of the IThreadPool base, the same
// for every pool of the lab. Where the two differ the answer is false, and a caller that would
// have skipped a visit (PoolVisit) on a worker merely takes one it did not need.
inline bool on_a_worker_of(const IThreadPool& pool) noexcept {
  return is_worker_of(static_cast<const void*>(&pool));
}

// True on one of the pool's workers, inside any of its tasks whichever thread runs it
// (running_task_of()), and on a thread that stands in for one of its workers: where waiting for
// the pool to go idle would wait for itself.
inline bool waiting_would_wait_for_itself(const IThreadPool& pool) noexcept {
  return pool.owns_current_thread() || running_task_of(pool) || stands_in_for_a_worker_of(pool);
}

// What a pool throws when it refuses a submission because its destruction has begun: a
// std::logic_error of its own type, so that a caller that queues a user's callable (spawn(),
// TaskGroup::run()) tells the refusal apart from a std::logic_error the callable's own copy or
// move throws, which it passes on unchanged.
class SubmitRefused : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

// The error for submitting an empty task; `call` names what the caller called, e.g.
// "stage1_global_lock: submit()" or "wslab::ThreadPool::spawn()".
[[noreturn, gnu::cold, gnu::noinline]] inline void throw_empty_task(std::string_view call) {
  throw std::invalid_argument(std::string(call) +
                              " of an empty task (a default-constructed or moved-from Task, a "
                              "null function pointer or an empty std::function); nothing was "
                              "queued");
}

// The same for a pool's submit(): "<pool_name>: submit()". The name is joined in here, out of
// line, so that no caller inlines a string's construction on its path.
[[noreturn, gnu::cold, gnu::noinline]] inline void throw_empty_submit(std::string_view pool_name) {
  throw_empty_task(std::string(pool_name) + ": submit()");
}

// Every pool's submit() starts here: an empty task is refused at the call, not dereferenced
// later by a worker.
inline void require_task(const Task& task, std::string_view pool_name) {
  if (!task) [[unlikely]] {
    throw_empty_submit(pool_name);
  }
}

// More threads than this is taken for a mistake: most often a negative int converted to size_t.
inline constexpr std::size_t kMaxThreads = 1024;

// One worker per hardware thread, for a pool whose size is not given: at least one
// (hardware_concurrency() answers 0 when it cannot tell) and at most kMaxThreads, so that a
// default-constructed pool starts on any host rather than throwing on a very large one.
inline std::size_t default_thread_count(
    unsigned hardware_threads = std::thread::hardware_concurrency()) noexcept {
  return std::clamp<std::size_t>(hardware_threads, 1, kMaxThreads);
}

// Every pool constructor validates its thread count here, so the message is the same everywhere.
inline std::size_t validate_thread_count(std::size_t threads, std::string_view pool_name) {
  if (threads == 0) {
    throw std::invalid_argument(
        std::string(pool_name) +
        ": a pool needs at least one worker thread (make_pool(name, 0) picks "
        "std::thread::hardware_concurrency())");
  }
  if (threads > kMaxThreads) {
    throw std::invalid_argument(std::string(pool_name) + ": " + std::to_string(threads) +
                                " worker threads is beyond the limit of " +
                                std::to_string(kMaxThreads) +
                                " (was a negative number converted to size_t?)");
  }
  return threads;
}

}  // namespace wslab
