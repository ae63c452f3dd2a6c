// Help-while-waiting, and the policy that keeps it from eating the stack.
//
// A thread that waits for a forked piece of work (TaskGroup::wait, join, Future::get) should not
// block a worker: it first runs its *own* pending work inline if nobody has started it yet, then
// helps the pool with try_run_one(), and only sleeps when there is nothing to do.
//
// The trap is the second step. try_run_one() runs an arbitrary task on top of the waiting frame;
// that task may itself wait and help, and so on: without a bound, a 1-thread pool with a backlog
// of waiting tasks nests them all on one stack. Two bounds stop that, both per thread:
//   - help depth: at most kMaxHelpDepth try_run_one() frames nested on one thread;
//   - stack headroom: no helping once more than half of the thread's stack is in use.
// Past either bound a waiter still runs its own unstarted work inline (that recursion is the
// program's own, and skipping it could deadlock a 1-thread pool), but takes no foreign task: it
// spins, then sleeps until its work is done. Its work is then running on another thread, which
// makes progress, so the wait ends.
#pragma once

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>
#include <type_traits>
#include <utility>

#include "common/config.hpp"
#include "common/thread_pool.hpp"

namespace wslab {

// Foreign tasks nested on one thread's stack by helping. Deep enough that helping keeps every
// worker busy in practice (a helper rarely nests more than a few levels), small enough that even
// tasks with large frames cannot exhaust a stack through it.
inline constexpr std::size_t kMaxHelpDepth = 64;

namespace detail {

// Where this thread's stack pointer must stay above: help_floor (half the stack used) for
// helping, overflow_floor (three quarters used) before the program's own recursion moves to a
// fresh stack. Constant-initialised to zero and filled on first use, so the hot check is one TLS
// load and one compare.
struct StackFloors {
  std::uintptr_t help_floor = 0;
  std::uintptr_t overflow_floor = 0;
};

inline thread_local StackFloors stack_floors{};

[[gnu::cold]] inline void measure_stack_floors() noexcept {
  StackFloors f{1, 1};  // bounds unknown: the floors never trigger, the depth bound still does
  pthread_attr_t attr;
  if (pthread_getattr_np(pthread_self(), &attr) == 0) {
    void* addr = nullptr;
    std::size_t size = 0;
    if (pthread_attr_getstack(&attr, &addr, &size) == 0 && size != 0) {
      const auto low = reinterpret_cast<std::uintptr_t>(addr);
      f.help_floor = low + size / 2;
      f.overflow_floor = low + size / 4;
    }
    pthread_attr_destroy(&attr);
  }
  stack_floors = f;
}

inline const StackFloors& this_thread_stack_floors() noexcept {
  if (stack_floors.help_floor == 0) [[unlikely]]
    measure_stack_floors();
  return stack_floors;
}

// The frame address, not a local's: under AddressSanitizer locals may live on a fake stack.
inline std::uintptr_t stack_pointer() noexcept {
  return reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0));
}

inline thread_local std::size_t help_depth = 0;

// True on a thread started by with_stack_room(): the recursion it continues must stay on it (a
// hand-off to a worker could wait for the very worker that is blocked until this thread ends).
inline thread_local bool on_overflow_stack = false;

}  // namespace detail

// Foreign tasks currently nested on this thread by helping (0 outside any wait).
inline std::size_t current_help_depth() noexcept {
  return detail::help_depth;
}

// True when this thread may run one more foreign task on top of its current stack.
inline bool help_allowed() noexcept {
  return detail::help_depth < kMaxHelpDepth &&
         detail::stack_pointer() > detail::this_thread_stack_floors().help_floor;
}

// True when more than three quarters of this thread's stack are in use.
inline bool stack_nearly_full() noexcept {
  return detail::stack_pointer() < detail::this_thread_stack_floors().overflow_floor;
}

// The program's own recursion (a join inside a join inside a join...) is not helping and cannot
// be refused, but it can be moved: when the stack is nearly full, f runs on a fresh thread with a
// fresh stack of the default size while this thread blocks in join(). That thread is not a worker,
// so what it forks is an external submission; it claims its own forked work inline, so a pool
// whose only worker is the blocked one still makes progress. The cost, one thread start per
// few tens of thousands of nested levels, is negligible next to the recursion itself.
template <class F>
auto with_stack_room(F&& f) -> decltype(f()) {
  if (!stack_nearly_full()) return f();
  using R = decltype(f());
  std::exception_ptr error;
  std::optional<std::conditional_t<std::is_void_v<R>, bool, R>> result;
  std::thread overflow([&] {
    detail::on_overflow_stack = true;
    try {
      if constexpr (std::is_void_v<R>) {
        f();
        result.emplace(true);
      } else {
        result.emplace(f());
      }
    } catch (...) {
      error = std::current_exception();
    }
  });
  overflow.join();
  if (error) std::rethrow_exception(error);
  if constexpr (!std::is_void_v<R>) return std::move(*result);
}

// Runs run() as one more foreign frame on this thread's stack: counted in the help depth while it
// runs (also if it throws). The caller checks help_allowed() first.
template <class Run>
decltype(auto) run_as_helper(Run&& run) {
  ++detail::help_depth;
  struct Leave {
    ~Leave() { --detail::help_depth; }
  } leave;
  return run();
}

// Runs one queued task of `pool` as a (counted) helper, if the policy allows it.
inline bool help_once(IThreadPool& pool) {
  if (!help_allowed()) return false;
  return run_as_helper([&] { return pool.try_run_one(); });
}

// A per-thread sleeping place. Only the owning thread parks on it; any thread may unpark it.
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

// "Done" with room for one sleeping waiter, in one word: kPending, kDone, or the waiter's Parker.
// set() is the completer's last touch of the flag (it then only unparks the waiter's thread-local
// Parker), so the flag may live in the waiter's stack frame.
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

// The waiting loop shared by every fork-join primitive: until `flag` is done, run own work
// (`run_own` returns true when it ran something), else help the pool within the policy, else
// spin a little, else sleep. The sleep has a timeout so that a waiter on a worker thread wakes to
// look for new work even if its own work takes long; a waiter with no pool to help (pool ==
// nullptr) sleeps until the flag is set.
template <class RunOwn>
void help_until_done(IThreadPool* pool, CompletionFlag& flag, RunOwn&& run_own) {
  constexpr int kSpinRounds = 12;
  int idle_rounds = 0;
  auto nap = std::chrono::microseconds(50);
  for (;;) {
    if (flag.done()) return;
    if (run_own()) {
      idle_rounds = 0;
      continue;
    }
    if (pool != nullptr && help_once(*pool)) {
      idle_rounds = 0;
      continue;
    }
    if (idle_rounds < kSpinRounds) {
      // Short exponential spin: the awaited work is usually nearly done when we get here.
      for (int i = 0; i < (1 << (idle_rounds / 2)); ++i)
        cpu_relax();
      ++idle_rounds;
      continue;
    }
    if (pool == nullptr) {  // nothing to help with: no timed wake-ups (CompletionFlag::wait)
      flag.wait();
      return;
    }
    if (flag.sleep_for(nap)) return;
    nap = std::min(nap * 2, std::chrono::microseconds(2000));
  }
}

// Identifies the calling thread cheaply (the address of a thread_local): a forked job compares
// it with the forker's to tell whether it was stolen.
inline const void* this_thread_tag() noexcept {
  thread_local const char tag = 0;
  return &tag;
}

}  // namespace wslab
