// A per-thread sleeping place: only the owning thread parks on it, any thread may unpark it.
// CompletionFlag (latch.hpp) puts a waiter's Parker in its word, so that the completer knows
// whom to wake.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <utility>

namespace wslab {

class Parker {
 public:
  // The notify happens under the lock: the parked thread cannot get past its wait (and perhaps
  // exit, destroying this thread_local) until we release the mutex, and we touch nothing after.
  void unpark() {
    std::lock_guard<std::mutex> lock(mutex_);
    signalled_ = true;
    cv_.notify_one();
  }
  // Returns true when woken by unpark(), false on timeout. Consumes the signal.
  bool park_for(std::chrono::microseconds timeout) {
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait_for(lock, timeout, [&] { return signalled_; });
    return std::exchange(signalled_, false);
  }
  void park() {
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait(lock, [&] { return signalled_; });
    signalled_ = false;
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool signalled_ = false;
};

inline Parker& this_thread_parker() {
  thread_local Parker parker;
  return parker;
}

}  // namespace wslab
