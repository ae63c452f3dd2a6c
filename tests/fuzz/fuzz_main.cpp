// wslab_fuzz: the program fuzzer. Runs random programs (random_program.hpp) one after another,
// on every registered pool and lab variant in turn (through IThreadPool) and on wslab::ThreadPool,
// each with a random worker count, plus the pool-lifetime episodes below, until the time budget is
// spent. Seeded: the run's seed is printed first, and a failure prints the command that replays
// the failing program alone. A hang is turned into a failure by the watchdog (watchdog.hpp).
//
//   wslab_fuzz [--seconds N] [--seed S] [--pool NAME]... [--stall SECONDS]
//   wslab_fuzz --pool NAME --program-seed S [--repeat N]   # replay one program
//
// Exit status: 0 no failure, 1 a failed check, 2 bad arguments, 3 a hang (watchdog); a sanitizer
// report exits with the sanitizer's status after printing the program it happened in.
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <memory>
#include <mutex>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common/config.hpp"
#include "registry/pools.hpp"
#include "stage5_parallel_algos/threadpool.hpp"
#include "tests/fuzz/random_program.hpp"
#include "tests/fuzz/watchdog.hpp"

#include "tests/sanitizer_reports.hpp"
#include "tests/until_refused.hpp"

#if WSLAB_SANITIZED
#include <sanitizer/common_interface_defs.h>
#endif

namespace wslab::fuzz {
namespace {

constexpr std::string_view kThreadPoolName = "ThreadPool";  // wslab::ThreadPool, the wrapper

// Where failures are reported: a copy of the original stderr, which stays put while an episode
// captures fd 2 (the expected diagnostics of a pool destroyed by its own task).
std::FILE* report_stream() {
  static std::FILE* out = [] {
    const int fd = ::dup(2);
    std::FILE* f = fd >= 0 ? ::fdopen(fd, "w") : nullptr;
    if (f == nullptr) return stderr;
    std::setvbuf(f, nullptr, _IONBF, 0);
    return f;
  }();
  return out;
}

// Redirects fd 2 into a temporary file for its lifetime; text() then returns what was written.
class StderrCapture {
 public:
  StderrCapture() : file_(std::tmpfile()) {
    std::fflush(stderr);
    saved_ = ::dup(2);
    if (file_ != nullptr && saved_ >= 0) ::dup2(::fileno(file_), 2);
  }
  StderrCapture(const StderrCapture&) = delete;
  StderrCapture& operator=(const StderrCapture&) = delete;
  ~StderrCapture() { restore(); }
  std::string text() {
    restore();
    std::string s;
    if (file_ == nullptr) return s;
    std::rewind(file_);
    char buf[4096];
    std::size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, file_)) > 0)
      s.append(buf, n);
    return s;
  }

 private:
  void restore() {
    if (saved_ < 0) return;
    std::fflush(stderr);
    ::dup2(saved_, 2);
    ::close(saved_);
    saved_ = -1;
  }
  std::FILE* file_;
  int saved_ = -1;
};

// What is running now, for failure reports; written by the main thread between programs.
struct Current {
  std::mutex mutex;
  std::string description;  // "program #i on <pool> (<threads> threads), replay: ..."
  const WorkLedger* ledger = nullptr;
};
Current& current() {
  static Current* c = new Current;  // never destroyed: read by the watchdog and by fail()
  return *c;
}

std::string describe_current() {
  std::lock_guard<std::mutex> lock(current().mutex);
  std::string s = current().description;
  if (current().ledger != nullptr) s += "\n  in flight: " + current().ledger->in_flight(20);
  return s;
}

void set_current(std::string description, const WorkLedger* ledger) {
  std::lock_guard<std::mutex> lock(current().mutex);
  current().description = std::move(description);
  current().ledger = ledger;
}

#if WSLAB_SANITIZED
void on_sanitizer_death() {
  std::fprintf(report_stream(), "\nwslab_fuzz: FAILED (sanitizer report above) in %s\n",
               current().description.c_str());
}
#endif

Limits limits_for_build() {
  if (kSanitized) return {400, 4, 12'000};
  return {2'000, 5, 40'000};
}

std::string hex(std::uint64_t x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%016" PRIx64, x);
  return buf;
}

// A pool under test: the IThreadPool view, and the ThreadPool when the wrapper is tested.
struct PoolUnderTest {
  std::unique_ptr<ThreadPool> wrapper;
  std::unique_ptr<IThreadPool> pool;
  IThreadPool& view() { return wrapper ? wrapper->scheduler() : *pool; }
};

PoolUnderTest make(std::string_view name, std::size_t threads) {
  PoolUnderTest p;
  if (name == kThreadPoolName) {
    p.wrapper = std::make_unique<ThreadPool>(threads);
  } else {
    p.pool = make_pool(name, threads);
  }
  return p;
}

// Objects that outlive their pool (docs/reference.md, "Lifetimes"): a future keeps working and
// its then() throws; a group's wait() works and its run() throws; when_all combines on the
// calling thread.
void outliving_episode(PoolUnderTest& p, Rng& r) {
  IThreadPool& pool = p.view();
  const int a = static_cast<int>(r.below(1000)), b = static_cast<int>(r.below(1000));
  Future<int> fa = async(pool, [a] { return a; });
  Future<int> fb = async(pool, [b] { return b; });
  Future<int> fc = async(pool, [a, b] { return a + b; });
  TaskGroup group(pool);
  std::atomic<int> ran{0};
  for (int i = 0; i < 5; ++i)
    group.run([&ran] { ran.fetch_add(1); });
  p.wrapper.reset();
  p.pool.reset();  // the destructor runs every queued job first
  WSLAB_FUZZ_CHECK(fa.is_ready() && fa.get() == a, "a future outlives its pool");
  expect_throw<std::logic_error>([&] { (void)fb.then([](int x) { return x; }); },
                                 "then() once the pool is gone");
  WSLAB_FUZZ_CHECK(fb.valid(), "a refused then() leaves the future valid");
  std::vector<Future<int>> both;
  both.push_back(std::move(fb));
  both.push_back(std::move(fc));
  const std::vector<int> values = when_all(std::move(both)).get();
  WSLAB_FUZZ_CHECK(values.size() == 2 && values[0] == b && values[1] == a + b,
                   "when_all on the calling thread once the pool is gone");
  expect_throw<std::logic_error>([&] { group.run([] {}); },
                                 "TaskGroup::run() once the pool is gone");
  group.wait();
  WSLAB_FUZZ_CHECK(ran.load() == 5, "the group's callables ran before the pool was gone");
}

// An outside thread submits tasks and then one that destroys the pool: every task runs, and the
// submitter may still be inside submit() when the destructor finishes its drain.
void self_destruction_episode(std::string_view name, std::size_t threads, Rng& r) {
  IThreadPool* pool =
      make_pool(name == kThreadPoolName ? Scheduler::kName : name, threads).release();
  const std::size_t before = r.below(50);
  std::atomic<std::size_t> ran{0};
  std::atomic<bool> destroyed{false};
  StderrCapture capture;  // the pool's diagnostic is expected; anything else is passed on
  for (std::size_t i = 0; i < before; ++i)
    pool->submit([&ran] { ran.fetch_add(1); });
  pool->submit([pool, &destroyed] {
    delete pool;
    destroyed.store(true);
    destroyed.notify_all();
  });
  destroyed.wait(false);
  const std::string said = capture.text();
  WSLAB_FUZZ_CHECK(ran.load() == before, "a pool destroyed by its own task drains the others");
  WSLAB_FUZZ_CHECK(said.find("destroyed from inside one of its own tasks") != std::string::npos,
                   "the diagnostic of a pool destroyed by its own task; stderr was: " + said);
}

// Submissions from outside while the destructor drains are refused, and every accepted one runs.
void refusal_episode(std::string_view name, std::size_t threads) {
  auto pool = make_pool(name == kThreadPoolName ? Scheduler::kName : name, threads);
  std::atomic<bool> refused{false};
  std::atomic<std::size_t> ran{0};
  pool->submit([&refused] { refused.wait(false); });  // keeps the destructor draining
  IThreadPool* raw = pool.get();
  std::thread destroyer([&pool] { pool.reset(); });
  const std::size_t accepted = test::submit_until_refused([raw, &ran] {
                                 raw->submit([&ran] { ran.fetch_add(1); });
                               }).accepted;
  refused.store(true);
  refused.notify_all();
  destroyer.join();
  WSLAB_FUZZ_CHECK(ran.load() == accepted, "every accepted submission runs");
}

// Work that starts only once the destructor has begun (an outsider's submission was refused): a
// join recursion deep enough for the stack guard to move it to fresh threads, each level also
// submitting a task. Every level, every b and every submission runs: a running task's submissions
// are never refused, on whatever thread it runs (docs/reference.md, "~ThreadPool").
struct DrainingRecursion {
  IThreadPool& pool;
  std::atomic<int>& halves;
  std::atomic<int>& submitted;
  int levels;
  void operator()(int level) const {
    std::array<char, 16 * 1024> pad;  // pins stack, so that the guard moves after a few hundred
    pad[0] = static_cast<char>(level);
    asm volatile("" : : "r"(pad.data()) : "memory");
    if (level == levels) return;
    pool.submit([this] { submitted.fetch_add(1); });
    join(pool, [&] { (*this)(level + 1); }, [this] { halves.fetch_add(1); });
  }
};

void draining_work_episode(std::string_view name, std::size_t threads, Rng& r) {
  auto pool = make_pool(name == kThreadPoolName ? Scheduler::kName : name, threads);
  IThreadPool* raw = pool.get();
  const int levels = 400 + static_cast<int>(r.below(800));
  std::atomic<int> halves{0}, submitted{0};
  std::atomic<bool> refused{false};
  const DrainingRecursion recursion{*raw, halves, submitted, levels};
  raw->submit([&refused, &recursion] {
    refused.wait(false);
    recursion(0);
  });
  std::thread outsider([raw, &refused] {
    test::submit_until_refused([raw] { raw->submit([] {}); });
    refused.store(true);
    refused.notify_all();
  });
  pool.reset();
  outsider.join();
  WSLAB_FUZZ_CHECK(halves.load() == levels && submitted.load() == levels,
                   "work done during the destructor's drain, also on fresh stacks, all runs (" +
                       std::to_string(halves.load()) + " and " + std::to_string(submitted.load()) +
                       " of " + std::to_string(levels) + ")");
}

// Objects waited on outside the pool while another thread destroys it (docs/reference.md, "Objects
// that outlive their pool"): two outside threads get futures (one through when_any, one chaining a
// then()), a third feeds a task group and waits on it, while the test thread destroys the pool.
// Each call they make into the pool is a PoolVisit, so they help it drain and never touch it once
// freed. Every job runs exactly once and every value is right; run() refused (SubmitRefused) or
// made after the pool is gone (std::logic_error) queues nothing, and a then() either runs its
// continuation or throws because the pool is gone. No job touches the pool: a job an outside
// waiter runs inline may outlive it.
void waited_during_destruction_episode(PoolUnderTest& p, Rng& r) {
  IThreadPool& pool = p.view();
  const std::size_t jobs = 2 + r.below(63);
  const std::size_t callables = r.below(400);
  std::vector<std::atomic<int>> job_runs(jobs), callable_runs(callables);
  std::vector<Future<std::size_t>> futures;
  for (std::size_t i = 0; i < jobs; ++i)
    futures.push_back(async(pool, [i, &job_runs] {
      job_runs[i].fetch_add(1);
      return i * i;
    }));
  const std::size_t half = jobs / 2;
  std::vector<Future<std::size_t>> first(std::make_move_iterator(futures.begin()),
                                         std::make_move_iterator(futures.begin() + half));
  std::vector<Future<std::size_t>> second(std::make_move_iterator(futures.begin() + half),
                                          std::make_move_iterator(futures.end()));
  TaskGroup group(pool);
  std::atomic<int> started{0};
  std::atomic<bool> values_right{true}, then_ok{true};
  std::atomic<std::size_t> accepted{0};
  auto begin = [&started] { started.fetch_add(1); };

  std::thread by_when_any([&] {  // when_any, then every value, newest first
    begin();
    if (!first.empty()) (void)when_any(first);
    for (std::size_t k = first.size(); k-- > 0;)
      if (first[k].get() != k * k) values_right.store(false);
  });
  std::thread by_then([&] {  // each value in order, the last one through then()
    begin();
    for (std::size_t k = 0; k + 1 < second.size(); ++k)
      if (second[k].get() != (half + k) * (half + k)) values_right.store(false);
    const std::size_t last = half + second.size() - 1;
    Future<std::size_t>& f = second.back();
    try {
      Future<std::size_t> next = f.then([](std::size_t x) { return x + 1; });
      if (next.get() != last * last + 1) then_ok.store(false);
    } catch (const std::logic_error&) {
      // The pool was gone: the future stays valid and holds its value.
      if (!f.valid() || f.get() != last * last) then_ok.store(false);
    }
  });
  std::thread feeder([&] {  // run() until refused or done, then wait
    begin();
    for (std::size_t k = 0; k < callables; ++k) {
      try {
        group.run([k, &callable_runs] { callable_runs[k].fetch_add(1); });
      } catch (const std::logic_error&) {  // SubmitRefused, or the pool is gone
        break;
      }
      accepted.fetch_add(1);
    }
    group.wait();
  });
  while (started.load() < 3)
    std::this_thread::yield();
  for (std::uint64_t spin = r.below(20'000); spin > 0; --spin)
    asm volatile("");
  p.wrapper.reset();
  p.pool.reset();
  by_when_any.join();
  by_then.join();
  feeder.join();

  for (std::size_t i = 0; i < jobs; ++i)
    WSLAB_FUZZ_CHECK(job_runs[i].load() == 1, "a future's job runs exactly once (job " +
                                                  std::to_string(i) + " ran " +
                                                  std::to_string(job_runs[i].load()) + " times)");
  WSLAB_FUZZ_CHECK(values_right.load(), "futures waited on during destruction give their values");
  WSLAB_FUZZ_CHECK(then_ok.load(),
                   "a then() during destruction runs, or throws and keeps the value");
  const std::size_t n = accepted.load();
  for (std::size_t k = 0; k < callables; ++k)
    WSLAB_FUZZ_CHECK(callable_runs[k].load() == (k < n ? 1 : 0),
                     "a group's accepted callables run once, the others never (callable " +
                         std::to_string(k) + " of " + std::to_string(n) + " accepted ran " +
                         std::to_string(callable_runs[k].load()) + " times)");
}

struct Options {
  double seconds = 60;
  std::uint64_t seed = 0;
  bool seed_given = false;
  std::vector<std::string> pools;
  std::optional<std::uint64_t> program_seed;
  std::size_t repeat = 1;
  int stall = kSanitized ? 300 : 120;
};

[[noreturn]] void usage(const char* error) {
  std::fprintf(stderr,
               "wslab_fuzz: %s\nusage: wslab_fuzz [--seconds N] [--seed S] [--pool NAME]... "
               "[--stall SECONDS]\n       wslab_fuzz --pool NAME --program-seed S [--repeat N]\n"
               "pools: every registered pool and lab variant, and %s\n",
               error, std::string(kThreadPoolName).c_str());
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  auto value = [&](int& i) -> std::string {
    if (i + 1 >= argc) usage((std::string(argv[i]) + " needs a value").c_str());
    return argv[++i];
  };
  auto number = [&](int& i) -> std::uint64_t {
    const std::string v = value(i);
    try {
      std::size_t used = 0;
      const std::uint64_t x = std::stoull(v, &used, 0);
      if (used != v.size()) throw std::invalid_argument(v);
      return x;
    } catch (const std::exception&) {
      usage(("not a number: " + v).c_str());
    }
  };
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--seconds") {
      o.seconds = static_cast<double>(number(i));
    } else if (a == "--minutes") {
      o.seconds = 60.0 * static_cast<double>(number(i));
    } else if (a == "--seed") {
      o.seed = number(i);
      o.seed_given = true;
    } else if (a == "--pool") {
      const std::string name = value(i);
      if (name != kThreadPoolName && find_pool(name) == nullptr)
        usage(("unknown pool " + name).c_str());
      o.pools.push_back(name);
    } else if (a == "--program-seed") {
      o.program_seed = number(i);
    } else if (a == "--repeat") {
      o.repeat = number(i);
    } else if (a == "--stall") {
      o.stall = static_cast<int>(number(i));
    } else if (a == "--help" || a == "-h") {
      usage("help");
    } else {
      usage(("unknown argument " + a).c_str());
    }
  }
  if (o.program_seed && o.pools.size() != 1) usage("--program-seed needs exactly one --pool");
  return o;
}

// One program and, drawn from the same seed, perhaps a lifetime episode.
// Returns how many units of work the program ran.
std::size_t run_one(std::string_view pool_name, std::uint64_t program_seed, std::size_t index,
                    Watchdog& watchdog) {
  Rng r(program_seed ^ 0x706f6f6cull);
  const std::size_t threads = 1 + r.below(4);
  const std::string replay =
      "wslab_fuzz --pool " + std::string(pool_name) + " --program-seed " + hex(program_seed);
  const std::string where = "program #" + std::to_string(index) + " on " + std::string(pool_name) +
                            " (" + std::to_string(threads) + " threads), seed " +
                            hex(program_seed) + "; replay: " + replay;
  PoolUnderTest p = make(pool_name, threads);
  std::size_t units = 0;
  {
    RandomProgram program(p.view(), p.wrapper.get(), program_seed, limits_for_build());
    set_current(where, &program.ledger());
    program.run();
    set_current(where, nullptr);
    units = program.ledger().used();
  }
  watchdog.tick();
  const std::uint64_t episode = r.below(24);
  if (episode == 23 && pool_name != kThreadPoolName) {
    const PoolEntry* entry = find_pool(pool_name);
    expect_throw<std::invalid_argument>([&] { entry->make(0); }, "a pool of 0 threads");
    expect_throw<std::invalid_argument>([&] { entry->make(kMaxThreads + 1); },
                                        "a pool of more than kMaxThreads threads");
  } else if (episode < 3) {
    set_current(where + " (episode: objects outliving their pool)", nullptr);
    outliving_episode(p, r);
  } else if (episode == 3) {
    set_current(where + " (episode: a task destroys its pool)", nullptr);
    self_destruction_episode(pool_name, threads, r);
  } else if (episode == 4) {
    set_current(where + " (episode: submissions refused during destruction)", nullptr);
    refusal_episode(pool_name, threads);
  } else if (episode == 5) {
    set_current(where + " (episode: a deep recursion during destruction)", nullptr);
    draining_work_episode(pool_name, threads, r);
  } else if (episode == 6) {
    set_current(where + " (episode: futures and a group waited on during destruction)", nullptr);
    waited_during_destruction_episode(p, r);
  }
  set_current(where + " (destroying the pool)", nullptr);
  p.wrapper.reset();
  p.pool.reset();
  watchdog.tick();
  return units;
}

int fuzz_main(int argc, char** argv) {
  Options o = parse(argc, argv);
  report_stream();
  test::keep_sanitizer_reports_on_stderr();
#if WSLAB_SANITIZED
  __sanitizer_set_death_callback(on_sanitizer_death);
#endif
  Watchdog watchdog(std::chrono::seconds(o.stall), describe_current, report_stream());
  watchdog.set_progress_source([] {
    std::lock_guard<std::mutex> lock(current().mutex);
    return current().ledger != nullptr ? current().ledger->progress() : 0;
  });

  if (o.program_seed) {
    std::fprintf(stderr, "wslab_fuzz: replaying program seed %s on %s, %zu time(s)\n",
                 hex(*o.program_seed).c_str(), o.pools[0].c_str(), o.repeat);
    for (std::size_t i = 0; i < o.repeat; ++i)
      run_one(o.pools[0], *o.program_seed, i, watchdog);
    std::fprintf(stderr, "wslab_fuzz: PASSED: %zu replay(s)\n", o.repeat);
    return 0;
  }

  if (!o.seed_given)
    o.seed = (std::uint64_t{std::random_device{}()} << 32) ^ std::random_device{}();
  std::vector<std::string> pools = o.pools;
  if (pools.empty()) {
    for (auto n : pool_names())
      pools.emplace_back(n);
    for (auto n : variant_names())
      pools.emplace_back(n);
    pools.emplace_back(kThreadPoolName);
  }
  std::fprintf(stderr, "wslab_fuzz: seed %s, %.0f s, %zu pools%s (replay the run: --seed %s)\n",
               hex(o.seed).c_str(), o.seconds, pools.size(), kSanitized ? ", sanitized build" : "",
               hex(o.seed).c_str());
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  std::size_t programs = 0, units = 0;
  double next_report = 30;
  while (elapsed() < o.seconds) {
    const std::uint64_t program_seed = mix(o.seed + programs);
    units += run_one(pools[programs % pools.size()], program_seed, programs, watchdog);
    ++programs;
    if (elapsed() >= next_report) {
      std::fprintf(stderr, "wslab_fuzz: %zu programs, %zu units of work, %.0f s\n", programs, units,
                   elapsed());
      next_report += 60;
    }
  }
  std::fprintf(stderr,
               "wslab_fuzz: PASSED: %zu programs (%zu units of work) on %zu pools in %.0f s, "
               "seed %s\n",
               programs, units, pools.size(), elapsed(), hex(o.seed).c_str());
  return 0;
}

}  // namespace

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(report_stream(), "\nwslab_fuzz: FAILED: %s\n  in %s\n", what.c_str(),
               describe_current().c_str());
  std::fflush(report_stream());
  std::_Exit(1);
}

}  // namespace wslab::fuzz

int main(int argc, char** argv) {
  return wslab::fuzz::fuzz_main(argc, argv);
}
