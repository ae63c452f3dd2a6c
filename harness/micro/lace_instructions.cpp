// Lace's instructions per fork and per spawned task, for callgrind: the same shapes that
// fork_instructions (fib) and group_instructions (rounds of k empty callables, spawned, then all
// synced) count for wslab, written against Lace (trolando/lace, v1.4.2: a C11 work-stealing
// runtime with a split deque and task frames in the deque; the frontier NOTES.md measures stage 5
// against). Not part of the build: Lace is not a dependency. scripts/lace_instructions.sh compiles
// it beside a Lace source tree and counts the worker's instructions inside the measured tasks.
//
//   lace_instructions fib N | lace_instructions spawn K ROUNDS
//
// Lace runs a task only on its own workers: main starts one and hands it the measured task with
// RUN, so the counted thread is that worker, where nobody steals.
#include <lace.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {
int sink = 0;
}

// One step of fib: SPAWN one half, CALL the other, SYNC; no cut-off, as wslab's fib_join.
TASK_1(long, lace_fib, int, n) {
  if (n < 2) return n;
  SPAWN(lace_fib, n - 1);
  const long b = CALL(lace_fib, n - 2);
  const long a = SYNC(lace_fib);
  return a + b;
}

// An empty callable's work, as group_instructions' callables do.
VOID_TASK_0(lace_child) {
  ++sink;
}

// What the script counts (callgrind --toggle-collect='measured_*_WRAP*'): Lace compiles a task
// into functions named after it, a worker running its _WRAP, which calls (or inlines) its body,
// the _CALL. Only the _WRAP may match: callgrind switches counting on and off at each function
// that matches, and the children's functions are named after lace_fib and lace_child.
TASK_1(long, measured_fib, int, n) {
  return CALL(lace_fib, n);
}

VOID_TASK_2(measured_spawns, int, k, int, rounds) {
  for (int r = 0; r < rounds; ++r) {
    for (int i = 0; i < k; ++i)
      SPAWN(lace_child);
    for (int i = 0; i < k; ++i)
      SYNC(lace_child);
  }
}

int main(int argc, char** argv) {
  const bool fib = argc == 3 && std::strcmp(argv[1], "fib") == 0;
  const bool spawn = argc == 4 && std::strcmp(argv[1], "spawn") == 0;
  if (!fib && !spawn) {
    std::fprintf(stderr, "usage: lace_instructions fib N | lace_instructions spawn K ROUNDS\n");
    return 2;
  }
  lace_start(1, 0);
  if (fib) {
    const int n = std::atoi(argv[2]);
    long a = 0, b = 1;  // fib(n) by iteration, to check the recursion
    for (int i = 0; i < n; ++i) {
      const long next = a + b;
      a = b;
      b = next;
    }
    const long got = RUN(measured_fib, n);
    lace_stop();
    if (got != a) {
      std::fprintf(stderr, "lace_instructions: fib(%d) = %ld, expected %ld\n", n, got, a);
      return 1;
    }
    return 0;
  }
  const int k = std::atoi(argv[2]);
  const int rounds = std::atoi(argv[3]);
  RUN(measured_spawns, k, rounds);
  lace_stop();
  if (sink != k * rounds) {
    std::fprintf(stderr, "lace_instructions: %d children ran, expected %d\n", sink, k * rounds);
    return 1;
  }
  return 0;
}
