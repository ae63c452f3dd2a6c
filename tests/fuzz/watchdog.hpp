// The fuzzer's watchdog: turns a hang into a failure. A thread wakes every second and compares a
// progress count (work started, finished or dropped, and program steps) with the last one it saw;
// if nothing moved for `stall` seconds it prints the program that hangs (pool, seed, the command
// that replays it), what that program had in flight, and exits with status 3. A hang cannot be
// unwound (a pool stuck waiting cannot even be destroyed), so exiting is the only way out.
// With WSLAB_FUZZ_STOP_ON_HANG set in the environment it first stops the process (SIGSTOP), so
// that a debugger can attach and print every thread's stack (`gdb -p PID -batch -ex "thread apply
// all bt"`); continued, it exits as usual. A rare hang is often gone once a debugger runs the
// program from the start.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace wslab::fuzz {

class Watchdog {
 public:
  // `report` describes the current program and what it has in flight; called on the watchdog's
  // thread, racing with the program (it must only read atomics or data under its own lock).
  // Reports go to `out`, which must stay open (the fuzzer passes its copy of the original stderr,
  // so that a hang during a capture of stderr is still reported).
  Watchdog(std::chrono::seconds stall, std::function<std::string()> report, std::FILE* out)
      : stall_(stall), report_(std::move(report)), out_(out), thread_([this] { watch(); }) {}
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

  // Anything that shows the program is alive.
  void tick() noexcept { ticks_.fetch_add(1, std::memory_order_relaxed); }
  // The ledger's progress is added by the report's owner through this source.
  void set_progress_source(std::function<std::uint64_t()> source) {
    std::lock_guard<std::mutex> lock(mutex_);
    progress_source_ = std::move(source);
  }

 private:
  void watch() {
    std::uint64_t last = ~std::uint64_t{0};
    auto last_change = std::chrono::steady_clock::now();
    std::unique_lock<std::mutex> lock(mutex_);
    while (!stopping_) {
      cv_.wait_for(lock, std::chrono::seconds(1));
      if (stopping_) return;
      std::uint64_t now_progress = ticks_.load(std::memory_order_relaxed);
      if (progress_source_) now_progress += progress_source_();
      const auto now = std::chrono::steady_clock::now();
      if (now_progress != last) {
        last = now_progress;
        last_change = now;
        continue;
      }
      if (now - last_change >= stall_) {
        const std::string what = report_();
        std::fprintf(out_, "\nwslab_fuzz: FAILED: no progress for %lld s (a hang)\n%s\n",
                     static_cast<long long>(stall_.count()), what.c_str());
        std::fflush(out_);
        if (std::getenv("WSLAB_FUZZ_STOP_ON_HANG") != nullptr) std::raise(SIGSTOP);
        std::_Exit(3);
      }
    }
  }

  const std::chrono::seconds stall_;
  std::function<std::string()> report_;
  std::FILE* const out_;
  std::function<std::uint64_t()> progress_source_;  // guarded by mutex_
  std::atomic<std::uint64_t> ticks_{0};
  std::mutex mutex_;
  std::condition_variable cv_;
  bool stopping_ = false;  // guarded by mutex_
  std::thread thread_;     // last: starts once everything above exists
};

}  // namespace wslab::fuzz
