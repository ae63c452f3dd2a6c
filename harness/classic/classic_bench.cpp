// classic_bench: one classic fork-join workload on one system at one thread count, in this
// process, printed as one JSON line (scripts/classic.py runs many of these and tabulates them).
//
//   classic_bench --workload uts_t3 --system wslab --threads 2 --reps 5 --warmup 1 [--n N]
//   classic_bench --list         # the workloads and the systems this binary was built with
//   classic_bench --self-test    # SHA-1 test vectors, and both UTS trees' size and depth (seq)
//
// Systems: seq (the same recursion as plain calls), floor (wslab's program on a stand-in pool with
// no scheduler: no_scheduler.hpp), wslab (stage5_parallel_algos/threadpool.hpp),
// tbb (oneTBB) and, when built with -DWSLAB_LIBFORK_DIR, libfork. "--threads N" means N threads
// doing the work, and nothing else:
//   - seq and floor: main alone, whatever --threads says;
//   - wslab: a pool of N workers; the root is spawned onto it and main sleeps in wait_all();
//   - tbb: a task_arena of N slots, one of them main's (arena.execute), the global_control raised
//     to N so that TBB does not cap it;
//   - libfork: a lazy_pool of N workers; main sleeps in sync_wait.
// The pool or arena is built before the repetitions; the warm-ups start its threads.
//
// Output: workload, system, threads, n, reps_ms (each timed repetition's wall time), median_ms,
// cpus_busy (the process's CPU time over the wall time, both summed over the timed repetitions
// only: ~N when N threads are busy, less when some idle), and result (checked on every
// repetition, warm-ups included: a wrong one prints the error and exits with status 1).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/task_arena.h>

#include "harness/bench/cpu_time.hpp"
#include "harness/bench/statistics.hpp"
#include "harness/classic/fib.hpp"
#include "harness/classic/integrate.hpp"
#include "harness/classic/matmul.hpp"
#include "harness/classic/no_scheduler.hpp"
#include "harness/classic/nqueens.hpp"
#include "harness/classic/sha1.hpp"
#include "harness/classic/uts.hpp"
#include "stage5_parallel_algos/threadpool.hpp"

namespace {

constexpr std::string_view kWorkloads[] = {"fib",     "integrate", "matmul",
                                           "nqueens", "uts_t1",    "uts_t3"};
constexpr std::string_view kSystems[] = {"seq", "floor", "wslab", "tbb",
#ifdef WSLAB_CLASSIC_LIBFORK
                                         "libfork"
#endif
};

struct Options {
  std::string workload, system;
  int threads = 1;
  int reps = 5;
  int warmup = 1;
  std::optional<long> n;
};

[[noreturn]] void die(const std::string& message) {
  std::fprintf(stderr, "classic_bench: %s\n", message.c_str());
  std::exit(1);
}

bool known(std::string_view name, const auto& list) {
  return std::find(std::begin(list), std::end(list), name) != std::end(list);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) die(std::string(arg) + " needs a value");
      return argv[++i];
    };
    auto number = [&](long lo) {
      const std::string v = value();
      char* end = nullptr;
      const long x = std::strtol(v.c_str(), &end, 10);
      if (v.empty() || *end != '\0' || x < lo) die("bad value for " + std::string(arg) + ": " + v);
      return x;
    };
    if (arg == "--workload")
      o.workload = value();
    else if (arg == "--system")
      o.system = value();
    else if (arg == "--threads")
      o.threads = int(number(1));
    else if (arg == "--reps")
      o.reps = int(number(1));
    else if (arg == "--warmup")
      o.warmup = int(number(0));
    else if (arg == "--n")
      o.n = number(0);
    else
      die("unknown option " + std::string(arg) + " (see the comment at the top of the source)");
  }
  if (!known(o.workload, kWorkloads))
    die("--workload: one of fib integrate matmul nqueens uts_t1 uts_t3");
  if (!known(o.system, kSystems)) die("--system: not one of this binary's systems (--list)");
  // No threads but main's, whatever was asked.
  if (o.system == "seq" || o.system == "floor") o.threads = 1;
  return o;
}

void print_result(std::int64_t r) {
  std::printf("%lld", static_cast<long long>(r));
}
void print_result(std::uint64_t r) {
  std::printf("%llu", static_cast<unsigned long long>(r));
}
void print_result(double r) {
  std::printf("%.17g", r);
}

// Warm-ups, then the timed repetitions of run() (each after an untimed w.reset()), every result
// checked; prints the JSON line.
template <class W, class Run>
int measure(const Options& o, W& w, Run run) {
  using Clock = std::chrono::steady_clock;
  auto verify = [&](const typename W::Result& r, const char* what) {
    if (w.check(r)) return;
    std::fprintf(stderr,
                 "classic_bench: WRONG RESULT in a %s repetition of %s on %s (%d threads): ", what,
                 o.workload.c_str(), o.system.c_str(), o.threads);
    std::fflush(stderr);
    print_result(r);
    std::printf("\n");
    std::exit(1);
  };
  for (int i = 0; i < o.warmup; ++i) {
    w.reset();
    verify(run(), "warm-up");
  }
  std::vector<double> ms;
  double cpu = 0, wall = 0;
  typename W::Result last{};
  for (int i = 0; i < o.reps; ++i) {
    w.reset();
    // CPU time read outside the wall-clock window, so the window holds nothing but run().
    const double cpu0 = wslab::bench::process_cpu_seconds();
    const auto t0 = Clock::now();
    last = run();
    const auto t1 = Clock::now();
    cpu += wslab::bench::process_cpu_seconds() - cpu0;
    const double seconds = std::chrono::duration<double>(t1 - t0).count();
    wall += seconds;
    ms.push_back(seconds * 1e3);
    verify(last, "timed");
  }
  const double median = wslab::bench::summarize(ms).median;
  std::printf(
      "{\"workload\": \"%s\", \"system\": \"%s\", \"threads\": %d, \"n\": %lld, \"reps_ms\": [",
      o.workload.c_str(), o.system.c_str(), o.threads, static_cast<long long>(w.size()));
  for (std::size_t i = 0; i < ms.size(); ++i)
    std::printf("%s%.3f", i ? ", " : "", ms[i]);
  std::printf("], \"median_ms\": %.3f, \"cpus_busy\": %.3f, \"result\": ", median, cpu / wall);
  print_result(last);
  std::printf("}\n");
  return 0;
}

// The system's side: build its pool once, then time the workload's entry point for it.
template <class W>
int run_on_system(const Options& o, W& w) {
  if (o.system == "seq") return measure(o, w, [&] { return w.seq(); });
  if (o.system == "floor") {
    classic::no_scheduler::Pool pool;
    return measure(o, w, [&] { return w.wslab(pool); });
  }
  if (o.system == "wslab") {
    wslab::ThreadPool pool(std::size_t(o.threads));
    return measure(o, w, [&] {
      // The root is a task of the pool, so main computes nothing: N workers, N CPUs.
      typename W::Result r{};
      pool.spawn([&] { r = w.wslab(pool); });
      pool.wait_all();
      return r;
    });
  }
  if (o.system == "tbb") {
    tbb::global_control cap(tbb::global_control::max_allowed_parallelism, std::size_t(o.threads));
    tbb::task_arena arena(o.threads);
    arena.initialize();
    return measure(o, w, [&] { return arena.execute([&] { return w.tbb(); }); });
  }
#ifdef WSLAB_CLASSIC_LIBFORK
  if (o.system == "libfork") {
    lf::lazy_pool pool(std::size_t(o.threads));
    return measure(o, w, [&] { return w.libfork(pool); });
  }
#endif
  die("unknown system " + o.system);
}

int self_test() {
  bool ok = classic::sha1_self_check();
  std::printf("sha1 test vectors: %s\n", ok ? "ok" : "WRONG");
  for (const auto* t : {&classic::uts::kT1, &classic::uts::kT3}) {
    const auto root = classic::uts::root(*t);
    const std::uint64_t nodes = classic::uts::count_seq(*t, root);
    const int depth = classic::uts::depth_seq(*t, root);
    const bool tree_ok = nodes == t->nodes && depth == t->depth;
    std::printf("uts %s: %llu nodes, depth %d: %s\n", t == &classic::uts::kT1 ? "T1" : "T3",
                static_cast<unsigned long long>(nodes), depth, tree_ok ? "ok" : "WRONG");
    ok = ok && tree_ok;
  }
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], "--list") == 0) {
    std::printf("{\"workloads\": [");
    for (auto w : kWorkloads)
      std::printf("%s\"%s\"", w == kWorkloads[0] ? "" : ", ", w.data());
    std::printf("], \"systems\": [");
    for (auto s : kSystems)
      std::printf("%s\"%s\"", s == kSystems[0] ? "" : ", ", s.data());
    std::printf("]}\n");
    return 0;
  }
  if (argc == 2 && std::strcmp(argv[1], "--self-test") == 0) return self_test();
  // The UTS trees are defined by SHA-1: a wrong digest would make every traversal count a
  // different tree, so no run starts without the test vectors.
  if (!classic::sha1_self_check()) die("SHA-1 fails its test vectors");

  const Options o = parse(argc, argv);
  const auto& wl = o.workload;
  if (wl == "fib") {
    classic::fib::Bench w;
    if (o.n) w.n = int(*o.n);
    if (w.n > 92) die("fib: n <= 92 (64-bit result)");
    return run_on_system(o, w);
  }
  if (wl == "integrate") {
    classic::integrate::Bench w;
    if (o.n) w.n = int(*o.n);
    return run_on_system(o, w);
  }
  if (wl == "matmul") {
    const auto n = std::size_t(o.n.value_or(1024));
    if (n == 0 || (n & (n - 1)) != 0) die("matmul: n must be a power of two");
    classic::matmul::Bench w(n);
    return run_on_system(o, w);
  }
  if (wl == "nqueens") {
    classic::nqueens::Bench w;
    if (o.n) w.n = int(*o.n);
    if (w.n > classic::nqueens::kMaxN) die("nqueens: n <= 16 (the known counts)");
    return run_on_system(o, w);
  }
  // A UTS tree is fixed by its parameters; its published node count is the check, and its n.
  if (o.n) die("uts: --n does not apply (the tree is fixed; n reports its node count)");
  classic::uts::Bench w{wl == "uts_t1" ? classic::uts::kT1 : classic::uts::kT3};
  return run_on_system(o, w);
}
