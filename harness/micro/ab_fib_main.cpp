// scripts/ab_fib.sh's program: fib(n) by pool.join from two builds of the library (a and b,
// ab_fib_side.cpp), alternating pool by pool. Each pair makes a pool of one build, runs fib once
// to warm it and `runs` more times, keeps the fastest, frees the pool, then does the same with
// the other build (which goes first alternates). Prints each build's median and fastest, and
// the median of the pairs' ratios b / a with the count of pairs where b was faster: a host that
// drifts moves both halves of a pair alike. On one thread the process is pinned to one CPU first
// (its pools' threads inherit the mask), so that both halves of every pair run there: the CPUs of
// a virtual machine can differ in speed by a third for minutes at a time (harness/cpu_speeds),
// and a pair whose halves landed on different ones would carry that difference.
//
//   ab_fib THREADS PAIRS [N=30] [RUNS=3] [FORK=pool.join]   (FORK: the report's name of the fork;
//   TaskGroup when the builds run N rounds of a group of 1,000 empty callables instead of fib)
#include <sched.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "cpu_pinning.hpp"

void* ab_make_a(int threads);
void ab_free_a(void* pool);
double ab_run_a(void* pool, int n);
void* ab_make_b(int threads);
void ab_free_b(void* pool);
double ab_run_b(void* pool, int n);

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// The fastest of `runs` runs of fib(n) on a fresh pool of one build, after one to warm it.
double best_of(bool build_a, int threads, int n, int runs) {
  void* pool = build_a ? ab_make_a(threads) : ab_make_b(threads);
  double best = 0;
  for (int r = 0; r <= runs; ++r) {
    const double ns = build_a ? ab_run_a(pool, n) : ab_run_b(pool, n);
    if (ns < 0) {
      std::fprintf(stderr, "ab_fib: build %c computed a wrong fib(%d)\n", build_a ? 'a' : 'b', n);
      std::exit(1);
    }
    if (r == 1 || (r > 1 && ns < best)) best = ns;
  }
  (build_a ? ab_free_a : ab_free_b)(pool);
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: ab_fib THREADS PAIRS [N=30] [RUNS=3] [FORK=pool.join]\n");
    return 2;
  }
  const int threads = std::atoi(argv[1]);
  const int pairs = std::atoi(argv[2]);
  const int n = argc > 3 ? std::atoi(argv[3]) : 30;
  const int runs = argc > 4 ? std::atoi(argv[4]) : 3;
  const char* fork = argc > 5 ? argv[5] : "pool.join";
  if (threads == 1) {
    const int cpu = sched_getcpu();
    if (cpu < 0 || !wslab::bench::pin(pthread_self(), cpu)) {
      std::fprintf(stderr, "ab_fib: could not pin the process to one CPU; pairs may mix CPUs\n");
    }
  }
  std::vector<double> a, b, ratio;
  int b_faster = 0;
  for (int p = 0; p < pairs; ++p) {
    const bool a_first = p % 2 == 0;
    const double first = best_of(a_first, threads, n, runs);
    const double second = best_of(!a_first, threads, n, runs);
    a.push_back(a_first ? first : second);
    b.push_back(a_first ? second : first);
    ratio.push_back(b.back() / a.back());
    b_faster += b.back() < a.back();
  }
  const bool group = std::strcmp(fork, "TaskGroup") == 0;
  std::printf(group ? "%d rounds of 1,000 empty callables by %s" : "fib(%d) by %s", n, fork);
  std::printf(
      ", %d thread(s), %d pairs: ns per %s a %.3f (fastest %.3f), b %.3f "
      "(fastest %.3f); b / a: median of the pairs %.3f, b faster in %d of %d\n",
      threads, pairs, group ? "callable" : "fork", median(a), *std::min_element(a.begin(), a.end()),
      median(b), *std::min_element(b.begin(), b.end()), median(ratio), b_faster, pairs);
}
