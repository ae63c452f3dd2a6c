// A task that keeps one worker of a pool busy until the test releases it, for scenarios that
// watch what the other workers do with one of them out of the way.
#pragma once

#include <atomic>
#include <memory>
#include <thread>

#include "common/thread_pool.hpp"

namespace wslab::test {

class BlockedTask {
 public:
  // Submits the task and returns once a worker runs it.
  explicit BlockedTask(IThreadPool& pool) : flags_(std::make_shared<Flags>()) {
    pool.submit([flags = flags_] {
      flags->started.store(true);
      while (!flags->released.load())
        std::this_thread::yield();
    });
    while (!flags_->started.load())
      std::this_thread::yield();
  }
  BlockedTask(const BlockedTask&) = delete;
  BlockedTask& operator=(const BlockedTask&) = delete;
  // Released at the latest here: a test that stops early leaves no worker spinning (the task
  // holds the flags, so it may outlive this object).
  ~BlockedTask() { release(); }

  // Lets the task return; any thread.
  void release() noexcept { flags_->released.store(true); }

 private:
  struct Flags {
    std::atomic<bool> started{false};
    std::atomic<bool> released{false};
  };
  std::shared_ptr<Flags> flags_;
};

}  // namespace wslab::test
