// The reference rows: oneTBB and naive std::async, adapted to the harness's Executor interface.
// Neither is an IThreadPool; each adapter does the closest equivalent of the same submissions.
#pragma once

#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/task_group.h>

#include <cstddef>
#include <future>
#include <mutex>
#include <string_view>
#include <utility>
#include <vector>

#include "harness/bench/executor.hpp"

namespace wslab::bench {

// oneTBB doing what the pools do: a task_arena with exactly `threads` worker threads, no slot
// reserved for the submitting thread (the pools' submitters do not work either), one task_group
// collecting everything. An external submission is enqueued into the arena (TBB's equivalent of
// a global queue push); a submission from a running task is task_group::run, which pushes onto
// the running worker's own deque. wait() joins the group from inside the arena.
class TbbExecutor final : public Executor {
 public:
  static constexpr std::string_view kName = "oneTBB";

  explicit TbbExecutor(std::size_t threads)
      // TBB caps its worker count at hardware_concurrency - 1 by default; the limit includes
      // the main thread, hence + 1, so oversubscribed runs really get `threads` workers.
      : limit_(tbb::global_control::max_allowed_parallelism, threads + 1),
        arena_(static_cast<int>(threads), /*reserved_for_masters=*/0) {
    arena_.initialize();
  }
  // task_group's destructor may throw (when destroyed unwaited); every run here waits, and an
  // escaping exception at this point would be a harness bug, so terminate is the right outcome.
  ~TbbExecutor() noexcept override = default;

  std::string_view name() const noexcept override { return kName; }

  void submit(Task task) override {
    Job job{std::move(task), this};
    if (running_in_ == this) {
      group_.run(std::move(job));
    } else {
      arena_.enqueue(group_.defer(std::move(job)));
    }
  }

  void wait() override {
    arena_.execute([this] { group_.wait(); });
  }

 private:
  // TBB stores the functor as const and calls it as const; a Task runs through a mutable member.
  struct Job {
    mutable Task task;
    TbbExecutor* owner;
    void operator()() const {
      TbbExecutor* const outer = std::exchange(running_in_, owner);
      task();
      running_in_ = outer;
    }
  };
  static inline thread_local TbbExecutor* running_in_ = nullptr;

  tbb::global_control limit_;
  tbb::task_arena arena_;
  tbb::task_group group_;
};

// The naive baseline: one new thread per task (std::launch::async), no pool at all. Thread
// creation costs tens of microseconds, so the driver caps how many tasks a cell may give it
// (--async-cap) and runs a proportionally smaller problem; throughput stays comparable because
// it is counted per item.
class AsyncExecutor final : public Executor {
 public:
  static constexpr std::string_view kName = "std::async";

  std::string_view name() const noexcept override { return kName; }

  void submit(Task task) override {
    std::future<void> done =
        std::async(std::launch::async, [task = std::move(task)]() mutable { task(); });
    std::lock_guard<std::mutex> lock(mutex_);
    futures_.push_back(std::move(done));
  }

  // A task pushes its children's futures before its own future is ready, so once a batch has
  // been collected, every child of it is already in futures_: an empty swap means all done.
  void wait() override {
    for (;;) {
      std::vector<std::future<void>> batch;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        batch.swap(futures_);
      }
      if (batch.empty()) return;
      for (std::future<void>& f : batch)
        f.get();
    }
  }

 private:
  std::mutex mutex_;
  std::vector<std::future<void>> futures_;
};

}  // namespace wslab::bench
