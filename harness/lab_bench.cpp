// lab_bench: every registered pool, side by side with oneTBB and std::async, on the harness's
// workloads. Run `lab_bench --help`; harness/README.md explains the workloads and the tables.
//
// The driver never measures in its own process: each (workload cell, executor, thread count) is
// run in --processes fresh child processes (this same binary, in a hidden --child mode) that
// report their timed repetitions on stdout. The driver pools the samples, then prints the tables
// and writes JSON, CSV and plots.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <vector>

#include "harness/bench/child_process.hpp"
#include "harness/bench/cpu_model.hpp"
#include "harness/bench/executor.hpp"
#include "harness/bench/measurement.hpp"
#include "harness/bench/plot.hpp"
#include "harness/bench/reference_executors.hpp"
#include "harness/bench/report_files.hpp"
#include "harness/bench/spin_work.hpp"
#include "harness/bench/table.hpp"
#include "harness/workloads/catalogue.hpp"
#include "harness/workloads/synthetic_tree.hpp"
#include "registry/pools.hpp"

#if WSLAB_TRACING
#include "harness/trace/recorder.hpp"
#endif

#ifndef WSLAB_SOURCE_DIR
#define WSLAB_SOURCE_DIR "."
#endif

namespace wslab::bench {
namespace {

namespace fs = std::filesystem;

struct Options {
  std::vector<std::string> workloads{"grid", "fib", "mandelbrot", "dirscan"};
  std::vector<std::string> executors;  // empty: every registered pool + the references
  std::vector<std::size_t> threads;    // empty: 1, hardware_concurrency, 2 x hardware_concurrency
  std::size_t processes = 3;
  std::size_t reps = 2;
  std::size_t warmups = 1;
  bool quick = false;
  bool full = false;
  std::string out_dir = WSLAB_SOURCE_DIR "/results";
  std::string json_file, csv_file;  // empty: <out_dir>/lab_bench.{json,csv}; "-": stdout
  int stdout_fd = -1;               // with "-": the original stdout (fd 1 then points at stderr)
  bool plots = true;
  bool projector = false;               // --projector: also one large speedup plot per cell
  std::vector<std::string> grid_cells;  // "ExR"
  std::vector<std::string> grid_work;
  std::uint64_t fib_n = 0;
  std::uint64_t mandelbrot_size = 0, mandelbrot_iters = 0;
  std::string dirscan_path;
  std::uint64_t dirscan_dirs = 0;
  std::string dirscan_cache = fs::temp_directory_path().string();
  // ThreadSanitizer dies past 8128 threads in one process; std::async makes one per task.
  std::uint64_t async_cap = kSanitized ? 1'000 : 10'000;
  unsigned timeout_s = 600;
  bool list = false;
  std::string trace_file;  // --trace: record one configuration's scheduling events

  // The hidden child mode.
  bool child = false;
  std::string child_workload, child_params, child_expect, child_executor;
};

constexpr std::string_view kTbb = TbbExecutor::kName;
constexpr std::string_view kAsync = AsyncExecutor::kName;

unsigned hardware_threads() {
  return std::max(1u, std::thread::hardware_concurrency());
}

std::unique_ptr<Executor> make_executor(const std::string& name, std::size_t threads) {
  if (name == kTbb) return std::make_unique<TbbExecutor>(threads);
  if (name == kAsync) return std::make_unique<AsyncExecutor>();
  return std::make_unique<PoolExecutor>(make_pool(name, threads));
}

// ---- child mode --------------------------------------------------------------------------------

// Per-repetition statistics: the pool's counters only ever grow, so a repetition's are the
// difference of two snapshots.
Sample sample_from(double seconds, const std::optional<PoolStats>& before,
                   const std::optional<PoolStats>& after) {
  Sample s;
  s.seconds = seconds;
  if (!before || !after) return s;
  s.has_stats = true;
  std::uint64_t busiest = 0;
  for (std::size_t i = 0; i < after->workers.size() && i < before->workers.size(); ++i) {
    const WorkerStats d = after->workers[i] - before->workers[i];
    s.totals += d;
    busiest = std::max(busiest, d.tasks_executed);
  }
  s.run_outside = after->tasks_run_outside - before->tasks_run_outside;
  if (s.totals.tasks_executed > 0) {
    s.busiest_share = static_cast<double>(busiest) / static_cast<double>(s.totals.tasks_executed);
  }
  return s;
}

// Runs one repetition of `cell` on `executor`: reset, time, verify. Returns the sample, or
// prints the failure and returns nullopt.
std::optional<Sample> run_repetition(CellRun& cell, Executor& executor) {
  cell.reset();
  const std::optional<PoolStats> before = executor.stats();
  const auto start = std::chrono::steady_clock::now();
  cell.run(executor);
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  const std::optional<PoolStats> after = executor.stats();
  const Verdict verdict = cell.verify();
  if (!verdict.ok) {
    fmt::print("fail {}\n", verdict.detail);
    return std::nullopt;
  }
  return sample_from(took.count(), before, after);
}

int child_main(const Options& o, std::size_t threads) {
  try {
    const Workload& workload = find_workload(o.child_workload);
    const Params params = Params::parse(o.child_params);
    const std::unique_ptr<CellRun> cell = workload.prepare(params, o.child_expect);
    // Warm-ups (threads started, allocator and caches primed) run an eighth of the cell when the
    // workload can shrink it, so they cost little; they are verified like every run.
    std::unique_ptr<CellRun> smaller_cell;
    if (o.warmups > 0) {
      const std::uint64_t tasks = workload.describe(params, o.child_expect).tasks;
      const auto smaller =
          workload.shrink(params, o.child_expect, std::max<std::uint64_t>(1, tasks / 8));
      if (smaller && smaller->to_string() != params.to_string()) {
        smaller_cell = workload.prepare(*smaller, workload.reference(*smaller));
      }
    }
    CellRun& warmup_cell = smaller_cell ? *smaller_cell : *cell;
    const std::unique_ptr<Executor> executor = make_executor(o.child_executor, threads);
    int status = 0;
    for (std::size_t i = 0; i < o.warmups + o.reps && status == 0; ++i) {
      const bool warmup = i < o.warmups;
      const std::optional<Sample> sample = run_repetition(warmup ? warmup_cell : *cell, *executor);
      if (!sample) {
        status = 3;
      } else if (!warmup) {
        fmt::print("{}\n", encode_sample(*sample));
      }
    }
    if (status == 0) fmt::print("done\n");
    std::fflush(stdout);
    return status;
  } catch (const std::exception& e) {
    fmt::print("fail exception: {}\n", e.what());
    std::fflush(stdout);
    return 3;
  }
}

// ---- the suite ---------------------------------------------------------------------------------

struct PlannedCell {
  const Workload* workload;
  Params params;
  std::string expected;
  CellInfo info;
};

std::vector<std::size_t> default_threads() {
  const std::size_t hw = hardware_threads();
  std::vector<std::size_t> t{1, hw, 2 * hw};
  std::sort(t.begin(), t.end());
  t.erase(std::unique(t.begin(), t.end()), t.end());
  return t;
}

// Every name --pools accepts, in table order: each stage followed by its lab variants
// ("stage2_per_thread_mutex:steal_one"), then the other variants (a student's "labs:..."), then
// the references.
std::vector<std::string> known_executors() {
  std::vector<std::string> all;
  const auto variants = variant_names();
  for (std::string_view stage : pool_names()) {
    all.emplace_back(stage);
    for (std::string_view v : variants) {
      if (v.size() > stage.size() && v.substr(0, stage.size()) == stage && v[stage.size()] == ':')
        all.emplace_back(v);
    }
  }
  for (std::string_view v : variants) {
    if (std::find(all.begin(), all.end(), v) == all.end()) all.emplace_back(v);
  }
  all.emplace_back(kTbb);
  all.emplace_back(kAsync);
  return all;
}

std::vector<std::string> resolve_executors(const std::vector<std::string>& requested) {
  const std::vector<std::string> all = known_executors();
  if (requested.empty()) {  // the default suite: the stages and the references, no variants
    std::vector<std::string> defaults;
    for (std::string_view n : pool_names())
      defaults.emplace_back(n);
    defaults.emplace_back(kTbb);
    defaults.emplace_back(kAsync);
    return defaults;
  }
  std::vector<std::string> chosen;
  for (const std::string& r : requested) {
    std::string name = r;
    if (r == "tbb" || r == "onetbb") name = std::string(kTbb);
    if (r == "async") name = std::string(kAsync);
    if (r == "pools") {
      for (std::string_view n : pool_names())
        chosen.emplace_back(n);
      continue;
    }
    if (std::find(all.begin(), all.end(), name) == all.end()) {
      std::string known;
      for (const std::string& a : all)
        known += (known.empty() ? "" : ", ") + a;
      throw std::invalid_argument("unknown pool \"" + r + "\"; known: " + known +
                                  " (aliases: tbb, async, pools)");
    }
    chosen.push_back(name);
  }
  // Registry order, so the baseline comes first and tables read in stage order.
  std::vector<std::string> ordered;
  for (const std::string& a : all) {
    if (std::find(chosen.begin(), chosen.end(), a) != chosen.end()) ordered.push_back(a);
  }
  return ordered;
}

std::pair<std::uint64_t, std::uint64_t> parse_grid_cell(const std::string& text) {
  const std::size_t x = text.find('x');
  Params p;
  try {
    if (x == std::string::npos) throw std::invalid_argument("");
    p.set("E", text.substr(0, x)).set("R", text.substr(x + 1));
    return {p.u64("E"), p.u64("R")};
  } catch (const std::exception&) {
    throw std::invalid_argument("grid cell \"" + text + "\" is not ExR, e.g. 10000x100");
  }
}

std::vector<PlannedCell> plan_cells(const Options& o, double spin_ns_per_iteration) {
  std::vector<PlannedCell> cells;
  auto add = [&](const Workload& w, Params p) {
    fmt::print(stderr, "lab_bench: preparing {} {} (expected result)\n", w.name(), p.to_string());
    std::string expected = w.reference(p);
    CellInfo info = w.describe(p, expected);
    cells.push_back({&w, std::move(p), std::move(expected), std::move(info)});
  };
  for (const std::string& name : o.workloads) {
    const Workload& w = find_workload(name);
    if (name == "grid") {
      for (const std::string& work : o.grid_work) {
        const std::uint64_t iters =
            calibrate_item_iterations(work_size_ns(work), spin_ns_per_iteration);
        for (const std::string& c : o.grid_cells) {
          const auto [e, r] = parse_grid_cell(c);
          add(w, GridWorkload::make_params(e, r, work, iters));
        }
      }
    } else if (name == "fib") {
      add(w, FibWorkload::make_params(o.fib_n));
    } else if (name == "mandelbrot") {
      add(w, MandelbrotWorkload::make_params(o.mandelbrot_size, o.mandelbrot_iters));
    } else if (name == "dirscan") {
      std::string root = o.dirscan_path;
      if (root.empty()) {
        TreeShape shape;
        shape.dirs = o.dirscan_dirs;
        fmt::print(stderr, "lab_bench: dirscan: synthetic tree of {} directories under {}\n",
                   shape.dirs, o.dirscan_cache);
        root = ensure_synthetic_tree(shape, o.dirscan_cache).string();
      }
      add(w, DirscanWorkload::make_params(fs::absolute(root).lexically_normal().string()));
    }
  }
  return cells;
}

std::string now_utc() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M UTC", &tm);
  return buf;
}

double load_average() {
  std::ifstream in("/proc/loadavg");
  double one_minute = 0;
  in >> one_minute;
  return one_minute;
}

// `--json -` / `--csv -`: that document is the only thing on stdout. For the whole run fd 1 points
// at stderr, so the tables, the summary lines and whatever gnuplot or a library prints land there;
// the document goes, at the end, to this copy of the original stdout (close-on-exec, so children
// and gnuplot never hold it).
int divert_stdout_to_stderr() {
  std::fflush(stdout);
  const int saved = ::fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
  if (saved < 0 || ::dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
    throw std::system_error(errno, std::generic_category(), "redirecting stdout to stderr");
  }
  return saved;
}

// Writes a whole output document to `path`, or to the original stdout when `path` is "-".
void write_output(const std::string& path, const std::string& text, int stdout_fd) {
  if (path != "-") {
    std::ofstream out(path);
    out << text;
    out.close();
    if (!out) throw std::runtime_error("cannot write " + path);
    return;
  }
  std::string_view left = text;
  while (!left.empty()) {
    const ssize_t n = ::write(stdout_fd, left.data(), left.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw std::system_error(errno, std::generic_category(), "writing to stdout");
    left.remove_prefix(static_cast<std::size_t>(n));
  }
}

// Runs one configuration in one child process and adds what it reported to `m`.
void run_one_process(const Options& o, const PlannedCell& cell, Measurement& m) {
  std::vector<std::string> args{"--child",
                                "--child-workload",
                                std::string(cell.workload->name()),
                                "--child-params",
                                m.params,
                                "--child-expect",
                                cell.expected,
                                "--child-executor",
                                m.executor,
                                "--threads",
                                std::to_string(m.threads == 0 ? 1 : m.threads),
                                "--reps",
                                std::to_string(o.reps),
                                "--warmup",
                                std::to_string(o.warmups)};
  const ChildOutcome outcome = run_child("/proc/self/exe", args, std::chrono::seconds(o.timeout_s));
  std::istringstream lines(outcome.output);
  std::string line, failure;
  bool done = false;
  std::vector<Sample> samples;
  while (std::getline(lines, line)) {
    if (line.rfind("fail ", 0) == 0) failure = line.substr(5);
    if (line == "done") done = true;
    if (line.rfind("sample ", 0) == 0) {
      if (const auto s = decode_sample(line)) samples.push_back(*s);
    }
  }
  if (failure.empty() && !outcome.succeeded())
    failure = "the child process " + outcome.describe_failure();
  if (failure.empty() && (!done || samples.size() != o.reps)) {
    failure = "the child process reported " + std::to_string(samples.size()) + " of " +
              std::to_string(o.reps) + " samples";
  }
  if (!failure.empty()) {
    m.status = Status::failed;
    m.failure = failure;
    fmt::print(stderr, "\nlab_bench: *** FAILED *** {} {} on {} ({} threads): {}\n\n", m.workload,
               m.cell, m.executor, m.threads, failure);
    return;
  }
  ++m.processes;
  m.samples.insert(m.samples.end(), samples.begin(), samples.end());
}

std::string describe_threads(std::size_t t) {
  if (t == 0) return "one thread per task";
  return fmt::format("{} thread{}", t, t == 1 ? "" : "s");
}

// --trace: one configuration, run in this process (a recorder cannot see into a child), a
// verified warm-up, then one recorded repetition written as a Chrome trace plus a timeline.
int trace_main(const Options& o, const std::vector<std::string>& executors,
               const std::vector<std::size_t>& threads) {
#if WSLAB_TRACING
  const std::vector<PlannedCell> cells = plan_cells(o, calibrate_spin_ns_per_iteration());
  if (cells.size() != 1 || executors.size() != 1 || threads.size() != 1) {
    throw std::invalid_argument(fmt::format(
        "--trace records one configuration; this selection has {} workload cell(s), {} pool(s) "
        "and {} thread count(s). Narrow it, e.g. -w grid --grid-cells 100x10000 --grid-work "
        "tiny -p stage3_lock_wsq -t 2 --trace grid.json",
        cells.size(), executors.size(), threads.size()));
  }
  const PlannedCell& cell = cells.front();
  const auto run = cell.workload->prepare(cell.params, cell.expected);
  const std::unique_ptr<Executor> executor = make_executor(executors.front(), threads.front());
  const std::string label = fmt::format("{} {} on {} ({})", cell.workload->name(), cell.info.label,
                                        executors.front(), describe_threads(threads.front()));
  if (!run_repetition(*run, *executor)) return 1;  // warm-up; the failure is already printed
  trace::Recorder recorder({.label = label});
  recorder.start();
  const std::optional<Sample> sample = run_repetition(*run, *executor);
  recorder.stop();
  if (!sample) return 1;
  const fs::path json = o.trace_file;
  fs::path csv = json, png = json;
  csv.replace_extension(".csv");
  png.replace_extension(".png");
  recorder.write_chrome_trace(json.string());
  recorder.write_timeline_csv(csv.string());
  fmt::print("{}: {:.3f} ms, {} events recorded, {} dropped; verified\n", label,
             sample->seconds * 1e3, recorder.recorded_events(), recorder.dropped_events());
  fmt::print("trace:    {} (chrome://tracing or https://ui.perfetto.dev)\n", json.string());
  if (o.plots) {
    trace::render_timeline(csv.string(), png.string(), label);
    fmt::print("timeline: {}\n", png.string());
  }
  return 0;
#else
  (void)o;
  (void)executors;
  (void)threads;
  throw std::invalid_argument(
      "--trace needs the trace hooks, which this lab_bench was built without so that they cost "
      "the pools nothing; build one with them in a directory of its own: cmake --preset release "
      "-B build/traced -DWSLAB_TRACING=ON && cmake --build build/traced --target lab_bench");
#endif
}

int driver_main(const Options& o, const std::string& command_line) {
  const std::vector<std::string> executors = resolve_executors(o.executors);
  const std::vector<std::size_t> threads = o.threads.empty() ? default_threads() : o.threads;
  for (std::size_t t : threads) {
    validate_thread_count(t, "lab_bench --threads");
  }
  if (!o.trace_file.empty()) return trace_main(o, executors, threads);

  RunInfo info;
  info.date_utc = now_utc();
  info.cpu_model = cpu_model();
  info.hardware_threads = hardware_threads();
  info.command_line = command_line;
  info.processes = o.processes;
  info.repetitions = o.reps;
  info.warmups = o.warmups;
  info.async_cap = o.async_cap;
  info.load_average_start = load_average();
  for (std::string_view n : pool_names()) {
    if (std::find(executors.begin(), executors.end(), n) != executors.end()) {
      info.baseline = std::string(n);
      break;
    }
  }
  if (std::find(o.workloads.begin(), o.workloads.end(), "grid") != o.workloads.end()) {
    info.spin_ns_per_iteration = calibrate_spin_ns_per_iteration();
  }

  const std::vector<PlannedCell> cells = plan_cells(o, info.spin_ns_per_iteration);

  // Every configuration, in the order the tables show them.
  std::vector<Measurement> results;
  std::vector<const PlannedCell*> cell_of;
  for (const PlannedCell& cell : cells) {
    for (const std::string& ex : executors) {
      const bool is_async = ex == kAsync;
      for (std::size_t t : is_async ? std::vector<std::size_t>{0} : threads) {
        Measurement m;
        m.workload = std::string(cell.workload->name());
        m.cell = cell.info.label;
        m.executor = ex;
        m.threads = t;
        m.unit = cell.info.unit;
        m.units_per_run = cell.info.units_per_run;
        m.params = cell.params.to_string();
        if (is_async) {
          m.note =
              "one new thread per task, whatever the column's thread count (the same run "
              "is shown in every column)";
          if (cell.info.tasks > o.async_cap) {
            const auto smaller = cell.workload->shrink(cell.params, cell.expected, o.async_cap);
            if (!smaller) {
              m.status = Status::skipped;
              m.note = fmt::format(
                  "skipped: {} tasks per run, above --async-cap {}, and this "
                  "workload cannot shrink",
                  cell.info.tasks, o.async_cap);
            } else {
              m.params = smaller->to_string();
              const std::string smaller_expected = cell.workload->reference(*smaller);
              const CellInfo smaller_info = cell.workload->describe(*smaller, smaller_expected);
              m.units_per_run = smaller_info.units_per_run;
              m.note = fmt::format(
                  "capped at --async-cap {} tasks: ran {} ({} tasks) instead of {} tasks; "
                  "throughput is per {} so it stays comparable",
                  o.async_cap, smaller_info.label, smaller_info.tasks, cell.info.tasks,
                  m.unit.substr(0, m.unit.size() - 1));
            }
          }
        }
        results.push_back(std::move(m));
        cell_of.push_back(&cell);
      }
    }
  }

  // Rounds: every configuration once per round, so slow drift of a shared machine spreads over
  // all of them instead of landing on whichever ran last.
  std::size_t total = 0;
  for (const Measurement& m : results)
    total += m.status == Status::skipped ? 0 : o.processes;
  std::size_t launched = 0;
  const auto suite_start = std::chrono::steady_clock::now();
  for (std::size_t round = 0; round < o.processes; ++round) {
    for (std::size_t i = 0; i < results.size(); ++i) {
      Measurement& m = results[i];
      if (m.status != Status::ok) continue;
      // The async reference runs its possibly smaller cell, with its own expected result.
      PlannedCell cell = *cell_of[i];
      if (m.params != cell.params.to_string()) {
        cell.params = Params::parse(m.params);
        cell.expected = cell.workload->reference(cell.params);
      }
      ++launched;
      const double elapsed =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - suite_start).count();
      fmt::print(stderr, "[{:>4}/{}] {:>6.0f}s  {} {} | {} | {} | process {}/{}\n", launched, total,
                 elapsed, m.workload, m.cell, m.executor, describe_threads(m.threads), round + 1,
                 o.processes);
      run_one_process(o, cell, m);
    }
  }

  // Tables.
  TableLayout layout{threads, executors, info.baseline};
  bool any_failed = false;
  std::vector<std::pair<std::string, std::vector<std::string>>> cells_by_workload;
  for (const PlannedCell& cell : cells) {
    const std::string w(cell.workload->name());
    if (cells_by_workload.empty() || cells_by_workload.back().first != w) {
      cells_by_workload.push_back({w, {}});
    }
    cells_by_workload.back().second.push_back(cell.info.label);
  }
  info.load_average_end = load_average();
  const double suite_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - suite_start).count();
  fmt::print(
      "\nlab_bench · {} · {} · {} hardware threads · {} process(es) x {} repetition(s) "
      "(+{} warm-up) per configuration · {:.0f} s · load average {:.1f} -> {:.1f}\n",
      info.date_utc, info.cpu_model, info.hardware_threads, o.processes, o.reps, o.warmups,
      suite_seconds, info.load_average_start, info.load_average_end);
  if (info.load_average_end > info.hardware_threads ||
      info.load_average_start > info.hardware_threads) {
    fmt::print(
        "note: the load average exceeded the hardware threads: other work shared this "
        "machine, so compare rows within a column rather than absolute numbers\n");
  }
  for (const auto& [w, labels] : cells_by_workload) {
    for (const std::string& label : labels) {
      fmt::print("{}", render_cell_tables(results, w, label, layout));
    }
  }
  for (const Measurement& m : results) {
    any_failed = any_failed || m.status == Status::failed;
  }

  // Files.
  fs::create_directories(o.out_dir);
  const std::string json =
      o.json_file.empty() ? (fs::path(o.out_dir) / "lab_bench.json").string() : o.json_file;
  const std::string csv =
      o.csv_file.empty() ? (fs::path(o.out_dir) / "lab_bench.csv").string() : o.csv_file;
  {
    std::ostringstream out;
    write_json(out, info, results);
    write_output(json, out.str(), o.stdout_fd);
  }
  {
    std::ostringstream out;
    write_csv(out, info, results);
    write_output(csv, out.str(), o.stdout_fd);
  }
  auto where = [](const std::string& path, std::string_view what) {
    return path == "-" ? fmt::format("{} on stdout", what) : path;
  };
  fmt::print("\nresults: {}\n         {}\n", where(json, "JSON"), where(csv, "CSV"));
  if (o.plots) {
    const PlotOptions plot_options{info.hardware_threads, {std::string(kTbb), std::string(kAsync)}};
    for (const auto& [w, labels] : cells_by_workload) {
      const fs::path png = plot_workload(o.out_dir, results, w, labels, layout, plot_options);
      if (!png.empty()) fmt::print("plot:    {}\n", png.string());
      if (!o.projector) continue;
      for (const fs::path& p : plot_projector(o.out_dir, results, w, labels, layout, plot_options))
        fmt::print("plot:    {}\n", p.string());
    }
    if (o.projector && threads.size() < 2) {
      fmt::print(stderr,
                 "lab_bench: --projector draws speedups over the smallest thread count, so it "
                 "needs two thread counts or more (-t 1,2); none drawn\n");
    }
  }
  if (any_failed) {
    fmt::print(
        "\n*** FAILED: at least one configuration lost or repeated tasks, crashed or hung; "
        "see the FAILED cells and their footnotes above ***\n");
    return 1;
  }
  fmt::print("\nevery run verified its result ({} child processes)\n", launched);
  return 0;
}

}  // namespace
}  // namespace wslab::bench

int main(int argc, char** argv) {
  using namespace wslab::bench;
  Options o;
  CLI::App app{
      "lab_bench: the wslab thread pools side by side with oneTBB and std::async on\n"
      "recursive-queueing workloads. Each configuration runs in several fresh processes;\n"
      "tables show the median and the [min, max] of all their timed repetitions. Every run\n"
      "verifies its result: a lost or repeated task marks the row FAILED and the exit code 1."};
  app.get_formatter()->column_width(34);
  app.footer(
      "Environment: WSLAB_LAB_BENCH_SMOKE=1 makes any run 1 process x 1 repetition with no\n"
      "warm-up, whatever the options say: a check that a command works, not a measurement.");

  std::string pool_help = "Pools to run (default: every stage and both references). Stages:";
  for (const wslab::PoolEntry& e : wslab::registry())
    pool_help += fmt::format(" {},", e.name);
  pool_help += " the lab variants (a stage with one knob turned):";
  for (const wslab::PoolEntry& e : wslab::lab_variants())
    pool_help += fmt::format(" {},", e.name);
  pool_help +=
      " plus the references oneTBB (alias tbb) and std::async (alias async); 'pools' = "
      "every registered stage. Variants run only when named.";

  app.add_option("-w,--workloads", o.workloads, "Workloads to run: grid, fib, mandelbrot, dirscan")
      ->delimiter(',')
      ->check(CLI::IsMember({"grid", "fib", "mandelbrot", "dirscan"}))
      ->capture_default_str();
  app.add_option("-p,--pools", o.executors, pool_help)->delimiter(',');
  app.add_option("-t,--threads", o.threads,
                 "Worker-thread counts, e.g. 1,2,4 (default: 1, hardware_concurrency and twice "
                 "that)")
      ->delimiter(',')
      ->check(CLI::Range(std::size_t{1}, wslab::kMaxThreads));
  app.add_option("--processes", o.processes, "Child processes per configuration")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  app.add_option("-r,--reps", o.reps, "Timed repetitions in each child process")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  app.add_option("--warmup", o.warmups,
                 "Untimed (but verified) warm-up repetitions before them, on an eighth of the "
                 "cell where the workload can shrink")
      ->check(CLI::Range(0, 100))
      ->capture_default_str();
  auto* quick_flag =
      app.add_flag("--quick", o.quick,
                   "Small sizes, 2 processes x 1 repetition: seconds, for CI (every result still "
                   "verified)");
  app.add_flag("--full", o.full,
               "The full suite: grid work tiny and small, a 1024x1024 Mandelbrot (about 10 "
               "minutes on 2 cores; the default run takes about 3)")
      ->excludes(quick_flag);
  app.add_option("-o,--out-dir", o.out_dir, "Where JSON, CSV and plots go")->capture_default_str();
  app.add_option("--json", o.json_file,
                 "JSON output file, '-' for stdout (then nothing else goes to stdout; the "
                 "tables go to stderr) (default: <out-dir>/lab_bench.json)");
  app.add_option("--csv", o.csv_file,
                 "CSV output file, '-' for stdout, as for --json (default: "
                 "<out-dir>/lab_bench.csv)");
  bool no_plots = false;
  app.add_flag("--no-plots", no_plots, "Do not run gnuplot");
  app.add_flag("--projector", o.projector,
               "Also draw each cell for a projector: <workload>-<cell>-projector.png, the speedup "
               "of each pool over its own run at the smallest thread count, large fonts, "
               "oversubscribed columns shaded, oneTBB dashed, std::async left out");
  app.add_option("--grid-cells", o.grid_cells,
                 "grid cells ExR (default and full 1000000x0,10000x100,100x10000; quick "
                 "10000x0,100x100,10x1000)")
      ->delimiter(',');
  app.add_option("--grid-work", o.grid_work,
                 "grid work per item: none, tiny (~100 ns), small (~1 us), medium (~10 us) "
                 "(default tiny; full tiny,small; quick tiny)")
      ->delimiter(',')
      ->check(CLI::IsMember({"none", "tiny", "small", "medium"}));
  app.add_option("--fib-n", o.fib_n, "fib: n (default and full 30; quick 20)")
      ->check(CLI::Range(0, 60));
  app.add_option("--mandelbrot-size", o.mandelbrot_size,
                 "mandelbrot: image side (default 512; full 1024; quick 256)")
      ->check(CLI::Range(1, 16384));
  app.add_option("--mandelbrot-iters", o.mandelbrot_iters,
                 "mandelbrot: iteration limit (default and full 1000; quick 200)")
      ->check(CLI::Range(1, 65535));
  app.add_option("--dirscan-path", o.dirscan_path,
                 "dirscan: scan this directory instead of the synthetic tree")
      ->check(CLI::ExistingDirectory);
  app.add_option("--dirscan-dirs", o.dirscan_dirs,
                 "dirscan: directories in the synthetic tree (default and full 4000, ~40k files; "
                 "quick 300)")
      ->check(CLI::Range(1, 1'000'000));
  app.add_option("--dirscan-cache", o.dirscan_cache, "dirscan: where synthetic trees are kept")
      ->capture_default_str();
  app.add_option("--async-cap", o.async_cap,
                 "std::async: most tasks per run; larger cells run a smaller problem (grid: "
                 "fewer items, fib: smaller n) or are skipped")
      ->capture_default_str();
  app.add_option("--timeout", o.timeout_s, "Seconds before a child process counts as hung")
      ->check(CLI::Range(1, 86400))
      ->capture_default_str();
  app.add_flag("--list", o.list, "List workloads and pools, then exit");
  app.add_option("--trace", o.trace_file,
                 "Record one configuration (one cell, pool and thread count) in this process "
                 "and write a Chrome trace to FILE, a timeline .csv and .png next to it (needs "
                 "a build with -DWSLAB_TRACING=ON)");

  // The child mode: not for people, hence no help group.
  auto* child = app.add_flag("--child", o.child)->group("");
  app.add_option("--child-workload", o.child_workload)->group("")->needs(child);
  app.add_option("--child-params", o.child_params)->group("")->needs(child);
  app.add_option("--child-expect", o.child_expect)->group("")->needs(child);
  app.add_option("--child-executor", o.child_executor)->group("")->needs(child);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  o.plots = !no_plots;

  if (o.child) {
    if (o.threads.size() != 1) {
      fmt::print(stderr, "lab_bench --child needs exactly one --threads value\n");
      return 2;
    }
    return child_main(o, o.threads.front());
  }

  if (o.list) {
    fmt::print("workloads:\n");
    for (const auto& w : workloads())
      fmt::print("  {:<12} {}\n", w->name(), w->summary());
    fmt::print("pools (registry/pools.hpp, in stage order; the first is the speedup baseline):\n");
    for (const wslab::PoolEntry& e : wslab::registry())
      fmt::print("  {:<26} {}\n", e.name, e.summary);
    fmt::print("lab variants (run only when named with --pools):\n");
    for (const wslab::PoolEntry& e : wslab::lab_variants())
      fmt::print("  {:<34} {}\n", e.name, e.summary);
    fmt::print("references:\n  {:<26} {}\n  {:<26} {}\n", "oneTBB",
               "tbb::task_group in a tbb::task_arena of the same thread count", "std::async",
               "one new thread per task (capped by --async-cap)");
    return 0;
  }

  // Sizes: the default run (a class's three minutes), --full or --quick, unless given
  // explicitly. The default keeps every cell shape and thread count of the full suite and drops
  // the cells that cost the most time without telling anything new (small work, a large image).
  auto choose = [&](const char* option, std::uint64_t& value, std::uint64_t normal,
                    std::uint64_t full, std::uint64_t quick) {
    if (app.count(option) == 0) value = o.quick ? quick : o.full ? full : normal;
  };
  if (o.grid_cells.empty()) {
    o.grid_cells = o.quick ? std::vector<std::string>{"10000x0", "100x100", "10x1000"}
                           : std::vector<std::string>{"1000000x0", "10000x100", "100x10000"};
  }
  if (o.grid_work.empty()) {
    o.grid_work =
        o.full ? std::vector<std::string>{"tiny", "small"} : std::vector<std::string>{"tiny"};
  }
  choose("--fib-n", o.fib_n, 30, 30, 20);
  choose("--mandelbrot-size", o.mandelbrot_size, 512, 1024, 256);
  choose("--mandelbrot-iters", o.mandelbrot_iters, 1000, 1000, 200);
  choose("--dirscan-dirs", o.dirscan_dirs, 4000, 4000, 300);
  if (o.quick) {
    if (app.count("--processes") == 0) o.processes = 2;
    if (app.count("--reps") == 0) o.reps = 1;
  }
  // The documentation check (scripts/check_doc_commands.py) runs the lab's commands as written to
  // show that each one works, not to measure: there, one process of one repetition per
  // configuration, every result still verified.
  if (const char* smoke = std::getenv("WSLAB_LAB_BENCH_SMOKE");
      smoke != nullptr && std::string_view(smoke) == "1") {
    o.processes = 1;
    o.reps = 1;
    o.warmups = 0;
    fmt::print(stderr,
               "lab_bench: WSLAB_LAB_BENCH_SMOKE=1: 1 process x 1 repetition per configuration, "
               "a check that the command runs, not a measurement\n");
  }

  std::string command_line;
  for (int i = 0; i < argc; ++i)
    command_line += (i ? " " : "") + std::string(argv[i]);
  try {
    if (o.json_file == "-" && o.csv_file == "-") {
      throw std::invalid_argument("--json - and --csv - cannot both have stdout; give one a file");
    }
    if (o.json_file == "-" || o.csv_file == "-") o.stdout_fd = divert_stdout_to_stderr();
    return driver_main(o, command_line);
  } catch (const std::exception& e) {
    fmt::print(stderr, "lab_bench: {}\n", e.what());
    return 2;
  }
}
