// CompletionFlag: "done", with room for one sleeping waiter, in one word (kPending, kDone, or the
// waiter's Parker). set() is the completer's last touch of the flag (it then only unparks the
// waiter's thread-local Parker), so the flag may live in the waiter's stack frame.
//
// Parker: a per-thread sleeping place. Only the owning thread parks on it, any thread may unpark
// it; a waiter puts its Parker in the flag's word, so that the completer knows whom to wake.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
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

class CompletionFlag {
 public:
  bool done() const noexcept { return word_.load(std::memory_order_acquire) == kDone; }

  // Publishes completion. release: whatever the completer wrote (a result, an exception) is
  // visible to a waiter whose acquire load sees kDone.
  void set() {
    const std::uintptr_t old = word_.exchange(kDone, std::memory_order_acq_rel);
    if (old != kPending && old != kDone) reinterpret_cast<Parker*>(old)->unpark();
  }

  // Sleeps until set(), with no timeout: for a waiter that has nothing to help with (a thread
  // outside the pool waiting for the task it handed over). Every timed wake-up would take a core
  // from a worker for nothing, and on a 2-core VM each one costs tens of microseconds of work.
  void wait() {
    if (done()) return;
    Parker& me = this_thread_parker();
    if (!enlist(me)) return;
    me.park();  // set() swaps our Parker out of the word, then unparks it
    // acquire: pairs with set()'s exchange, which published the results before unparking us.
    (void)word_.load(std::memory_order_acquire);
  }

  // Sets the flag with a plain store, for a flag no other thread can see yet (a group being made).
  void set_unshared() noexcept { word_.store(kDone, std::memory_order_relaxed); }

  // Makes a finished flag pending again. Only while nobody else can touch it (a group between
  // uses).
  void reset() noexcept { word_.store(kPending, std::memory_order_relaxed); }

  // Sleeps until set() or the timeout; returns done().
  bool sleep_for(std::chrono::microseconds timeout) {
    Parker& me = this_thread_parker();
    if (!enlist(me)) return true;
    if (me.park_for(timeout)) return done();
    std::uintptr_t expected = reinterpret_cast<std::uintptr_t>(&me);
    if (word_.compare_exchange_strong(expected, kPending, std::memory_order_acq_rel,
                                      std::memory_order_acquire)) {
      return false;  // timed out and withdrawn: the caller looks for work again
    }
    // The completer swapped us out and is about to unpark us: take that signal now, or it would
    // cut a later, unrelated park short.
    me.park();
    return done();
  }

 private:
  // Puts the caller's Parker in the word, for set() to unpark; false if the flag is already done.
  bool enlist(Parker& me) noexcept {
    std::uintptr_t expected = kPending;
    // acquire on failure: the flag is done and the caller reads the completer's writes next.
    return word_.compare_exchange_strong(expected, reinterpret_cast<std::uintptr_t>(&me),
                                         std::memory_order_acq_rel, std::memory_order_acquire);
  }

  static constexpr std::uintptr_t kPending = 0;
  static constexpr std::uintptr_t kDone = 1;
  std::atomic<std::uintptr_t> word_{kPending};
};

}  // namespace wslab
