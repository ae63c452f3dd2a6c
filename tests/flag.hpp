// A one-shot flag: one thread raises it, others wait for it. Shared by the conformance suite and
// the named scenarios, whose tests hand control between a pool's workers and the test's thread.
#pragma once

#include <atomic>
#include <chrono>
#include <thread>

namespace wslab::test {

class Flag {
 public:
  // release/acquire: whatever the raising thread wrote before raise() is visible to a waiter.
  void raise() {
    raised_.store(true, std::memory_order_release);
    raised_.notify_all();
  }
  // Blocks in atomic::wait, neither sleeping nor spinning.
  void wait() const { raised_.wait(false, std::memory_order_acquire); }
  bool raised() const { return raised_.load(std::memory_order_acquire); }
  // True if raised within `limit`. Polls: only the timeout path of a failing run ever waits long.
  bool wait_for(std::chrono::milliseconds limit) const {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (!raised()) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return true;
  }

 private:
  std::atomic<bool> raised_{false};
};

}  // namespace wslab::test
