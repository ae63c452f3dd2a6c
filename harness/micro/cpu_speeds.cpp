// Whether the machine's CPUs run at the same speed: the same sequential fib, timed with the
// process pinned to each CPU in turn, round after round (so that a host whose speed drifts moves
// every CPU alike), then each CPU's median and its ratio to the fastest.
//
//   cpu_speeds [--rounds N] [--max-spread PERCENT]
//
// On a virtual machine they often differ: a vCPU whose host core is shared with another guest, or
// runs at a lower clock, can be a third slower than its neighbour for minutes at a time. A thread
// that lands on the slow one takes a third longer, so a one-thread cell moves between processes by
// as much, and a ratio of two programs timed on different CPUs is off by it. A call-heavy
// recursion, like the benchmarks' own work, rather than an arithmetic loop: how much a shared host
// core slows a CPU depends on what runs on it. Exits 1 when --max-spread is given and the slowest
// CPU is slower than the fastest by more than PERCENT; 0 otherwise, and 2 on bad arguments.
#include <pthread.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "cpu_pinning.hpp"

namespace {

[[gnu::noinline]] std::uint64_t fib(int n) {
  return n < 2 ? std::uint64_t(n) : fib(n - 1) + fib(n - 2);
}

// Seconds for fib(27), about 1 ms, on the CPU the thread runs on now.
double timed_fib() {
  volatile int n = 27;
  const auto t0 = std::chrono::steady_clock::now();
  const std::uint64_t v = fib(n);
  const auto t1 = std::chrono::steady_clock::now();
  if (v != 196418) std::abort();
  return std::chrono::duration<double>(t1 - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 15;
  double max_spread = -1;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--rounds" && i + 1 < argc) {
      rounds = std::atoi(argv[++i]);
    } else if (arg == "--max-spread" && i + 1 < argc) {
      max_spread = std::atof(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: cpu_speeds [--rounds N] [--max-spread PERCENT]\n");
      return 2;
    }
  }
  if (rounds < 1) rounds = 1;
  const std::vector<int> cpus = wslab::bench::allowed_cpus();
  cpu_set_t allowed;
  if (cpus.empty() || pthread_getaffinity_np(pthread_self(), sizeof allowed, &allowed) != 0) {
    std::printf("cpu_speeds: cannot read this process's CPUs; nothing measured\n");
    return 0;
  }
  std::vector<std::vector<double>> times(cpus.size());
  for (int r = 0; r < rounds; ++r) {
    for (std::size_t k = 0; k < cpus.size(); ++k) {
      if (!wslab::bench::pin(pthread_self(), cpus[k])) continue;
      timed_fib();  // the first after the move pays for it
      times[k].push_back(timed_fib());
    }
  }
  pthread_setaffinity_np(pthread_self(), sizeof allowed, &allowed);
  std::vector<double> medians;
  for (auto& t : times)
    medians.push_back(t.empty() ? 0 : median(t));
  const double fastest = *std::min_element(medians.begin(), medians.end());
  const double slowest = *std::max_element(medians.begin(), medians.end());
  if (fastest <= 0) {
    std::printf("cpu_speeds: could not pin this process to each CPU; nothing measured\n");
    return 0;
  }
  for (std::size_t k = 0; k < cpus.size(); ++k)
    std::printf("cpu %d: %.3f ms for fib(27), %.2fx the fastest\n", cpus[k], medians[k] * 1e3,
                medians[k] / fastest);
  const double spread = (slowest / fastest - 1) * 100;
  std::printf("slowest over fastest: +%.0f %% (%s)\n", spread,
              spread <= 5 ? "the CPUs run at the same speed"
                          : "the CPUs run at different speeds now: a one-thread time depends on "
                            "the CPU its thread lands on");
  return max_spread >= 0 && spread > max_spread ? 1 : 0;
}
