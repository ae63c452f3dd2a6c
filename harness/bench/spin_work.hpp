// The "work" every benchmark item does: eight independent chains of multiply-adds, stepped
// together, whose length is calibrated once to a target duration (tiny ~100 ns, small ~1 us,
// medium ~10 us).
//
// Why eight chains and not one. An item must take the same time whether it runs alone (as a
// pool's task does, between scheduler code) or right after another item (as in the sequential
// baselines); otherwise the baseline is credited with something no scheduler can give the
// parallel run. One dependent chain is latency-bound: the out-of-order core runs the start of the
// next item's chain while the last one finishes, so a one-chain item takes markedly longer when
// the next item depends on it than in a loop, and every pool's grid speedup is capped well below
// 2 before any scheduling cost. Eight chains keep the multipliers busy, leaving no room for that
// overlap: an item takes about as long chained as in a loop. The empty asm statements keep the
// compiler from folding the steps into a closed form, keep each chain in a register, and keep it
// from dropping a result nobody reads.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace wslab::bench {

// Makes `value` look used to the optimiser without costing a memory access.
inline void consume(std::uint64_t value) noexcept {
  asm volatile("" : : "r"(value));
}

// One step of one lane: Knuth's MMIX LCG. The empty asm makes each step opaque (no closed form,
// no unrolled shortcut) and keeps the lane in a register.
inline void lcg_step(std::uint64_t& lane) noexcept {
  lane = lane * 6364136223846793005ull + 1442695040888963407ull;
  asm volatile("" : "+r"(lane));
}

// Out of line, so that every caller (the calibration, the sequential baselines, the pools' tasks)
// runs the very same machine code.
[[gnu::noinline]] inline std::uint64_t spin_work(std::uint64_t iterations,
                                                 std::uint64_t seed) noexcept {
  std::uint64_t a = seed | 1u, b = a ^ 0x9E3779B97F4A7C15ull, c = a ^ 0xBF58476D1CE4E5B9ull,
                d = a ^ 0x94D049BB133111EBull, e = a + 1, f = a + 3, g = a + 5, h = a + 7;
  for (std::uint64_t i = 0; i < iterations; ++i) {
    lcg_step(a), lcg_step(b), lcg_step(c), lcg_step(d);
    lcg_step(e), lcg_step(f), lcg_step(g), lcg_step(h);
  }
  return a ^ b ^ c ^ d ^ e ^ f ^ g ^ h;
}

// Nanoseconds per item of a loop of `items` items of `iterations` each: the fastest of several
// timed batches, because on a shared machine interference only ever makes a batch slower.
inline double time_item_loop(std::uint64_t iterations, std::uint64_t items) {
  using clock = std::chrono::steady_clock;
  double best = 1e300;
  for (int attempt = 0; attempt < 7; ++attempt) {
    const auto start = clock::now();
    for (std::uint64_t i = 0; i < items; ++i)
      consume(spin_work(iterations, i));
    const std::chrono::duration<double, std::nano> took = clock::now() - start;
    best = std::min(best, took.count() / static_cast<double>(items));
  }
  return best;
}

// Nanoseconds one spin_work iteration takes on this machine, in one long chain.
inline double calibrate_spin_ns_per_iteration() {
  constexpr std::uint64_t kBatch = 2'000'000;
  return time_item_loop(kBatch, 1) / static_cast<double>(kBatch);
}

// The named work sizes of the harness.
struct WorkSize {
  std::string_view name;
  double nanoseconds;
};
inline constexpr WorkSize kWorkSizes[] = {
    {"none", 0.0}, {"tiny", 100.0}, {"small", 1'000.0}, {"medium", 10'000.0}};

inline double work_size_ns(std::string_view name) {
  for (const WorkSize& w : kWorkSizes) {
    if (w.name == name) return w.nanoseconds;
  }
  throw std::invalid_argument("unknown work size \"" + std::string(name) +
                              "\" (none, tiny, small, medium)");
}

// Iterations for target_ns at the rate of one long chain (the first guess below).
inline std::uint64_t iterations_for(double target_ns, double ns_per_iteration) {
  if (target_ns <= 0.0) return 0;
  return std::max<std::uint64_t>(
      1, static_cast<std::uint64_t>(std::llround(target_ns / ns_per_iteration)));
}

// Iterations for an item that takes target_ns when items run one after another, which is what
// "tiny ~100 ns" promises and what the sequential baselines measure. A short item is not a slice
// of one long run: it pays its own start (setting up the chains, the call) and may overlap its
// neighbours. So the item itself is timed in a loop at the long-run guess and at twice it, and
// the count is read off the line through the two points (time = slope x iterations + offset).
// A one-chain kernel gives a large negative offset (an item sized by the long-chain rate runs far
// shorter than its target in a loop); with eight chains the offset is a few nanoseconds.
inline std::uint64_t calibrate_item_iterations(double target_ns, double ns_per_iteration) {
  const std::uint64_t guess = iterations_for(target_ns, ns_per_iteration);
  if (guess == 0) return 0;
  const auto items = static_cast<std::uint64_t>(std::max(1000.0, 2'000'000.0 / target_ns));
  const double at_guess = time_item_loop(guess, items);
  const double at_double = time_item_loop(2 * guess, items / 2 + 1);
  const double slope = (at_double - at_guess) / static_cast<double>(guess);
  if (!(slope > 0.0)) return guess;  // a disturbed measurement: keep the plain estimate
  const double offset = at_guess - slope * static_cast<double>(guess);
  return std::max<std::uint64_t>(
      1, static_cast<std::uint64_t>(std::llround((target_ns - offset) / slope)));
}

}  // namespace wslab::bench
