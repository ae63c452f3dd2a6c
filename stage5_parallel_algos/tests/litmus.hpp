// A two-thread litmus runner in the style of litmus7, for the protocols whose safety rests on a
// store-load fence: the same two short code sequences run against each other hundreds of
// thousands of times, each round started on both threads at the same instant of the time-stamp
// counter plus a small offset drawn per round, so that the sequences overlap in every alignment,
// the rare bad one included. A plain stress test spends almost all its time outside the few
// hundred cycles where a missing fence shows.
//
// Round r: thread A runs prepare(r) alone and publishes the round's start times; both threads
// spin until theirs and run their halves, a(r) on A and b(r) on B; A waits for B and runs
// check(r) alone. The publication and the end-of-round handshake are release/acquire, so
// prepare() and check() may read and write anything the halves use.
#pragma once

#include <pthread.h>
#include <sched.h>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <random>
#include <thread>

#include <gtest/gtest.h>

#include "common/config.hpp"

namespace wslab::test {

// True where offsets are TSC cycles, which the broken-variant tests are calibrated for (an
// x86-64 TSO machine). Elsewhere the runner works in nanoseconds.
#if defined(__x86_64__) || defined(__i386__)
inline constexpr bool kLitmusCalibrated = true;
inline std::uint64_t litmus_now() noexcept {
  return __rdtsc();
}
#else
inline constexpr bool kLitmusCalibrated = false;
inline std::uint64_t litmus_now() noexcept {
  return static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
}
#endif

struct LitmusShape {
  std::uint64_t rounds;
  // B starts this much later than A (earlier if negative), uniform in [min, max] per round.
  std::int64_t min_offset;
  std::int64_t max_offset;
  // Stores A makes before its own (StoreBufferFiller): more hold that store back longer.
  int filler_lines = 32;
  // A round starts this long after A publishes it: long enough for B to see the publication
  // (much longer under sanitizers, whose atomics are slow).
  std::uint64_t lead = kSanitized ? 100'000 : 4'000;
  // The run stops early past this (a loaded machine): the result says how many rounds ran.
  std::chrono::seconds budget{10};
};

struct LitmusRun {
  std::uint64_t rounds = 0;
  std::uint64_t late = 0;  // rounds a thread reached after its start time (it was preempted)
  double seconds = 0;
  std::uint64_t aligned() const noexcept { return rounds > late ? rounds - late : 0; }
};

// Fills A's store buffer: A's next store waits behind `lines` stores, each of which must fetch
// its line back from B's cache, so A's later loads run hundreds of cycles before that store is
// visible (as after a task that wrote shared memory). Without it the store drains within tens
// of cycles: the steal gate's window (which spans the thief's increment too) was not hit once in
// 600,000 rounds, the plain deque's 0 to 4 times in 200,000 (with 32 lines, hundreds to thousands
// of times in 300,000). B dirties the lines again after its half, outside the window.
class StoreBufferFiller {
 public:
  static constexpr int kMaxLines = 256;
  explicit StoreBufferFiller(int lines) noexcept : lines_(lines < kMaxLines ? lines : kMaxLines) {}
  void fill(std::uint64_t value) noexcept {  // A, just before its store
    for (int i = 0; i < lines_; ++i)
      line_[i].word.store(value, std::memory_order_relaxed);
  }
  void dirty() noexcept { fill(0); }  // B, after its half

 private:
  struct alignas(kCacheLineSize) Line {
    std::atomic<std::uint64_t> word{0};
  };
  int lines_;
  Line line_[kMaxLines];
};

// The shapes a litmus test runs, in order: `base`, then two whose filler holds A's store back
// behind more stores than current x86 store buffers take (48 to 114 entries; A stalls until some
// drain, and its store then waits behind a full buffer), with B's start spread later to match.
// A window that spans the other thread's locked RMW closes, on some machines, before 32 lines
// drain: one CI machine ran the steal gate's broken variant 300,000 rounds in `base` without a
// double take while the plain deque's was caught 39,892 times. A sound variant must pass every
// shape; a broken one is caught as soon as one shape shows it.
inline std::array<LitmusShape, 3> deepening(const LitmusShape& base) noexcept {
  LitmusShape deeper = base;
  deeper.rounds = base.rounds / 3;
  deeper.filler_lines = 128;
  deeper.max_offset = base.max_offset + 1'500;
  LitmusShape deepest = deeper;
  deepest.filler_lines = 256;
  deepest.max_offset = base.max_offset + 3'000;
  return {base, deeper, deepest};
}

// The rounds a broken variant ran through every shape without being caught.
struct LitmusMiss {
  std::uint64_t rounds = 0;
  std::uint64_t aligned = 0;
};

// Runs run(shape) for each shape of deepening(base) until caught(result); the rounds of a broken
// variant never caught, or nothing.
template <class Run, class Caught>
std::optional<LitmusMiss> first_catch(const LitmusShape& base, Run run, Caught caught) {
  LitmusMiss miss;
  for (const LitmusShape& shape : deepening(base)) {
    const auto result = run(shape);
    if (caught(result)) return std::nullopt;
    miss.rounds += result.run.rounds;
    miss.aligned += result.run.aligned();
  }
  return miss;
}

// What a miss means: a skip when too few rounds started together (a loaded machine), or when the
// window spans the other thread's locked RMW, which some machines finish before any shape's
// filler drains (`rmw_window` says what outran what; the sound variant's pass then means nothing
// on that machine); otherwise a failure.
inline void judge_miss(const LitmusMiss& miss, std::uint64_t min_aligned, const char* rmw_window) {
  if (miss.aligned < min_aligned) {
    GTEST_SKIP() << "machine too loaded: only " << miss.aligned << " of " << miss.rounds
                 << " rounds started together";
  }
  if (rmw_window != nullptr) {
    GTEST_SKIP() << "not caught in " << miss.rounds << " rounds of any shape: on this machine "
                 << rmw_window << " every time";
  }
  ADD_FAILURE() << "the broken variant was not caught in " << miss.rounds << " rounds";
}

namespace detail {
// Pins A and B to two different CPUs of the process's set for the run (and restores A's set
// after), so that the scheduler never puts both halves on one core, where no round could
// start together; litmus7 does the same.
class TwoCpus {
 public:
  TwoCpus() noexcept {
    if (sched_getaffinity(0, sizeof(saved_), &saved_) != 0) return;
    for (int cpu = 0, found = 0; cpu < CPU_SETSIZE && found < 2; ++cpu) {
      if (CPU_ISSET(cpu, &saved_)) cpus_[found++] = cpu;
    }
    pinned_ = cpus_[1] >= 0 && pin(pthread_self(), cpus_[0]);
  }
  ~TwoCpus() {
    if (pinned_) pthread_setaffinity_np(pthread_self(), sizeof(saved_), &saved_);
  }
  void pin_partner(pthread_t partner) const noexcept {
    if (pinned_) pin(partner, cpus_[1]);
  }

 private:
  static bool pin(pthread_t thread, int cpu) noexcept {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    return pthread_setaffinity_np(thread, sizeof(one), &one) == 0;
  }
  cpu_set_t saved_{};
  int cpus_[2] = {-1, -1};
  bool pinned_ = false;
};

inline void spin_until(std::uint64_t when) noexcept {
  while (litmus_now() < when) {
  }
}
// Spins until `word` differs from `old` and returns it; yields now and then, so that a partner
// preempted on a loaded machine gets the core back.
inline std::uint64_t wait_change(const std::atomic<std::uint64_t>& word,
                                 std::uint64_t old) noexcept {
  for (std::uint32_t spins = 1;; ++spins) {
    const std::uint64_t v = word.load(std::memory_order_acquire);
    if (v != old) return v;
    if (spins % 4096 == 0) {
      std::this_thread::yield();
    } else {
      cpu_relax();
    }
  }
}
}  // namespace detail

template <class Prepare, class A, class B, class Check>
LitmusRun run_litmus(const LitmusShape& shape, Prepare prepare, A a, B b, Check check) {
  constexpr std::uint64_t kStop = ~std::uint64_t{0};
  struct alignas(kCacheLineSize) Word {
    std::atomic<std::uint64_t> value{0};
  };
  Word published;  // r + 1 once round r's start time is set; kStop at the end
  Word finished;   // r + 1 once B has run b(r)
  std::uint64_t start_b = 0;
  std::atomic<std::uint64_t> late_b{0};

  const detail::TwoCpus cpus;
  std::thread partner([&] {
    for (std::uint64_t seen = 0;;) {
      seen = detail::wait_change(published.value, seen);
      if (seen == kStop) return;
      const std::uint64_t when = start_b;
      if (litmus_now() > when) late_b.fetch_add(1, std::memory_order_relaxed);
      detail::spin_until(when);
      b(seen - 1);
      finished.value.store(seen, std::memory_order_release);
    }
  });

  cpus.pin_partner(partner.native_handle());
  const auto began = std::chrono::steady_clock::now();
  LitmusRun run;
  std::minstd_rand rng(12345);
  std::uniform_int_distribution<std::int64_t> offset(shape.min_offset, shape.max_offset);
  for (std::uint64_t r = 0; r < shape.rounds; ++r) {
    if (r % 1024 == 1023 && std::chrono::steady_clock::now() - began > shape.budget) break;
    prepare(r);
    const std::int64_t off = offset(rng);
    const std::uint64_t start = litmus_now() + shape.lead;
    const std::uint64_t start_a = start + static_cast<std::uint64_t>(off < 0 ? -off : 0);
    start_b = start + static_cast<std::uint64_t>(off > 0 ? off : 0);
    published.value.store(r + 1, std::memory_order_release);
    if (litmus_now() > start_a) ++run.late;
    detail::spin_until(start_a);
    a(r);
    detail::wait_change(finished.value, r);
    check(r);
    ++run.rounds;
  }
  published.value.store(kStop, std::memory_order_release);
  partner.join();
  run.late += late_b.load(std::memory_order_relaxed);
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  return run;
}

}  // namespace wslab::test
