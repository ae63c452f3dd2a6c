// The one interface every stage implements, so that one test suite and one harness drive them
// all. Read stage1_global_lock/global_lock_pool.hpp next: it is the simplest implementation.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>

#include "stats.hpp"
#include "task.hpp"
#include "worker_threads.hpp"

namespace wslab {

class IThreadPool {
 public:
  virtual ~IThreadPool() = default;

  // Queues one fire-and-forget task. Called from one of this pool's workers it is a recursive
  // submission (stages 2-4 keep it in that worker's own queue); from any other thread it is an
  // external one. Throws std::logic_error for an external submission once destruction has begun
  // (recursive submissions made while the destructor drains are accepted and run).
  virtual void submit(Task task) = 0;

  // Blocks until no task is queued or running, including tasks submitted by tasks, then rethrows
  // the first exception that escaped a task since the previous wait_idle(). Exceptions never kill
  // a worker or cancel other tasks. Throws std::logic_error when called from one of the pool's
  // own workers (it would wait for itself).
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
};

// More threads than this is taken for a mistake: most often a negative int converted to size_t.
inline constexpr std::size_t kMaxThreads = 1024;

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
