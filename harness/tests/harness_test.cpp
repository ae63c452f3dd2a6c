// Tests of the harness's own logic: the statistics it reports, the verification every workload
// performs (it must catch a lost or a repeated task), and the files it writes.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <filesystem>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "harness/bench/child_process.hpp"
#include "harness/bench/cpu_model.hpp"
#include "harness/bench/measurement.hpp"
#include "harness/bench/params.hpp"
#include "harness/bench/reference_executors.hpp"
#include "harness/bench/report_files.hpp"
#include "harness/bench/statistics.hpp"
#include "harness/bench/table.hpp"
#include "harness/workloads/catalogue.hpp"
#include "harness/workloads/synthetic_tree.hpp"
#include "tests/test_scale.hpp"

namespace wslab::bench {
namespace {

Sample sample(double seconds, bool has_stats = false, WorkerStats totals = {}) {
  Sample s;
  s.seconds = seconds;
  s.has_stats = has_stats;
  s.totals = totals;
  return s;
}

// ---- statistics ----

TEST(Statistics, OddCountMedianIsTheMiddleValue) {
  const Summary s = summarize({5.0, 1.0, 3.0});
  EXPECT_EQ(s.median, 3.0);
  EXPECT_EQ(s.min, 1.0);
  EXPECT_EQ(s.max, 5.0);
  EXPECT_EQ(s.count, 3u);
}

TEST(Statistics, EvenCountMedianIsTheMeanOfTheMiddleTwo) {
  const Summary s = summarize({4.0, 1.0, 10.0, 2.0});
  EXPECT_EQ(s.median, 3.0);
  EXPECT_EQ(s.min, 1.0);
  EXPECT_EQ(s.max, 10.0);
}

TEST(Statistics, SingleValueAndEmptyInput) {
  const Summary s = summarize({7.5});
  EXPECT_EQ(s.median, 7.5);
  EXPECT_EQ(s.min, 7.5);
  EXPECT_EQ(s.max, 7.5);
  EXPECT_THROW(summarize({}), std::invalid_argument);
}

TEST(Statistics, ThroughputSummaryUsesEverySample) {
  Measurement m;
  m.units_per_run = 100;
  for (double s : {1.0, 2.0, 4.0})
    m.samples.push_back(sample(s));
  const Summary t = m.throughput();
  EXPECT_EQ(t.median, 50.0);
  EXPECT_EQ(t.min, 25.0);
  EXPECT_EQ(t.max, 100.0);
}

// ---- executors that misbehave on purpose ----

// Runs tasks one at a time on the waiting thread, in submission order. `drop` loses the n-th
// task, `repeat` runs the n-th task twice: the two faults a broken pool can have.
class ScriptedExecutor final : public Executor {
 public:
  explicit ScriptedExecutor(long drop = -1, long repeat = -1) : drop_(drop), repeat_(repeat) {}
  std::string_view name() const noexcept override { return "scripted"; }
  void submit(Task task) override {
    const long n = submitted_++;
    if (n == drop_) return;
    if (n == repeat_) {
      auto shared = std::make_shared<Task>(std::move(task));
      task = Task([shared] {
        (*shared)();
        (*shared)();
      });
    }
    queue_.push_back(std::move(task));
  }
  void wait() override {
    while (!queue_.empty()) {
      Task t = std::move(queue_.front());
      queue_.pop_front();
      t();
    }
  }
  long submitted() const noexcept { return submitted_; }

 private:
  long drop_, repeat_;
  long submitted_ = 0;
  std::deque<Task> queue_;
};

std::filesystem::path small_tree() {
  TreeShape shape;
  shape.dirs = 40;
  shape.max_files_per_dir = 5;
  shape.seed = 7;
  return ensure_synthetic_tree(shape, std::filesystem::temp_directory_path() /
                                          ("wslab-harness-test-" + std::to_string(::getpid())));
}

struct SmallCell {
  std::string workload;
  Params params;
};

std::vector<SmallCell> small_cells() {
  return {{"grid", GridWorkload::make_params(20, 5, "tiny", 3)},
          {"grid", GridWorkload::make_params(100, 0, "none", 0)},
          {"fib", FibWorkload::make_params(12)},
          {"mandelbrot", MandelbrotWorkload::make_params(24, 50)},
          {"dirscan", DirscanWorkload::make_params(small_tree().string())}};
}

Verdict run_with(ScriptedExecutor& ex, const SmallCell& c) {
  const Workload& w = find_workload(c.workload);
  const std::string expected = w.reference(c.params);
  auto run = w.prepare(c.params, expected);
  run->reset();
  run->run(ex);
  return run->verify();
}

TEST(Verification, EveryWorkloadPassesWithACorrectExecutor) {
  for (const SmallCell& c : small_cells()) {
    ScriptedExecutor ex;
    const Verdict v = run_with(ex, c);
    EXPECT_TRUE(v.ok) << c.workload << " " << c.params.to_string() << ": " << v.detail;
  }
}

TEST(Verification, EveryWorkloadCatchesALostTask) {
  for (const SmallCell& c : small_cells()) {
    ScriptedExecutor probe;
    run_with(probe, c);
    // Drop the last task submitted, and separately the first: both must be noticed.
    for (long victim : {probe.submitted() - 1, 0L}) {
      ScriptedExecutor lossy(victim, -1);
      const Verdict v = run_with(lossy, c);
      EXPECT_FALSE(v.ok) << c.workload << " did not notice task " << victim << " was lost";
      EXPECT_FALSE(v.detail.empty());
    }
  }
}

TEST(Verification, EveryWorkloadCatchesARepeatedTask) {
  for (const SmallCell& c : small_cells()) {
    ScriptedExecutor probe;
    run_with(probe, c);
    ScriptedExecutor doubling(-1, probe.submitted() - 1);
    const Verdict v = run_with(doubling, c);
    EXPECT_FALSE(v.ok) << c.workload << " did not notice a task ran twice";
  }
}

// libtbb.so is not built with ThreadSanitizer, so TSan cannot see the synchronisation inside it
// and reports the hand-off of every task to a TBB worker as a race. (The harness is not part of
// the sanitizer presets; this is for a hand-made TSan build of it.)
#define WSLAB_SKIP_TBB_UNDER_TSAN()                                  \
  if (WSLAB_TSAN)                                                    \
  GTEST_SKIP() << "libtbb is not instrumented: TSan cannot see its " \
                  "internal hand-offs"

TEST(Verification, WorkloadsRunCorrectlyOnTheReferences) {
  WSLAB_SKIP_TBB_UNDER_TSAN();
  TbbExecutor tbb(2);
  AsyncExecutor async;
  for (Executor* ex : {static_cast<Executor*>(&tbb), static_cast<Executor*>(&async)}) {
    for (const SmallCell& c : small_cells()) {
      const Workload& w = find_workload(c.workload);
      const std::string expected = w.reference(c.params);
      auto run = w.prepare(c.params, expected);
      for (int rep = 0; rep < 2; ++rep) {
        run->reset();
        run->run(*ex);
        const Verdict v = run->verify();
        EXPECT_TRUE(v.ok) << ex->name() << " " << c.workload << ": " << v.detail;
      }
    }
  }
}

// The oneTBB row must really run on the requested number of threads, oversubscribed counts
// included (TBB caps its workers at hardware_concurrency - 1 unless told otherwise). Each task
// waits until `threads` distinct tasks are running at once, which only that many threads can do.
TEST(References, OneTbbRunsOnTheRequestedThreadCount) {
  WSLAB_SKIP_TBB_UNDER_TSAN();
  for (std::size_t threads : {std::size_t{1}, std::size_t{3}, std::size_t{6}}) {
    TbbExecutor tbb(threads);
    std::atomic<std::size_t> running{0};
    std::atomic<bool> all_met{true};
    for (std::size_t i = 0; i < threads; ++i) {
      tbb.submit([&] {
        running.fetch_add(1);
        if (!test::eventually([&] { return running.load() >= threads; })) all_met = false;
      });
    }
    tbb.wait();
    EXPECT_TRUE(all_met.load()) << "oneTBB did not run " << threads << " tasks at once";
  }
}

TEST(Verification, FibTaskCountMatchesASequentialRun) {
  for (std::uint64_t n : {0, 1, 2, 3, 4, 10, 15}) {
    ScriptedExecutor ex;
    run_with(ex, {"fib", FibWorkload::make_params(n)});
    EXPECT_EQ(static_cast<std::uint64_t>(ex.submitted()), FibWorkload::tasks_for(n)) << n;
  }
  EXPECT_EQ(FibWorkload::fib(30), 832040u);
}

TEST(Verification, ShrinkKeepsTasksUnderTheCap) {
  const Workload& grid = find_workload("grid");
  const Params big = GridWorkload::make_params(1'000'000, 0, "tiny", 1);
  const auto small =
      grid.shrink(big, grid.reference(GridWorkload::make_params(1, 0, "tiny", 1)), 10'000);
  ASSERT_TRUE(small.has_value());
  EXPECT_EQ(GridWorkload::items_of(*small), 10'000u);
  const Workload& fib = find_workload("fib");
  const auto fib_small = fib.shrink(FibWorkload::make_params(30), "", 10'000);
  ASSERT_TRUE(fib_small.has_value());
  EXPECT_LE(FibWorkload::tasks_for(fib_small->u64("n")), 10'000u);
  EXPECT_GT(FibWorkload::tasks_for(fib_small->u64("n") + 1), 10'000u);
}

TEST(SyntheticTree, IsDeterministicAndHasTheRequestedShape) {
  const std::filesystem::path root = small_tree();
  const ScanCounts a = scan_sequential(root.string());
  EXPECT_EQ(a.dirs, 40u);
  EXPECT_EQ(a.errors, 0u);
  EXPECT_GT(a.files, 0u);
  // Building it again elsewhere gives the same counts.
  TreeShape shape;
  shape.dirs = 40;
  shape.max_files_per_dir = 5;
  shape.seed = 7;
  const auto other_dir = std::filesystem::temp_directory_path() /
                         ("wslab-harness-test-b-" + std::to_string(::getpid()));
  const ScanCounts b = scan_sequential(ensure_synthetic_tree(shape, other_dir).string());
  EXPECT_EQ(a, b);
  std::filesystem::remove_all(other_dir);
  std::filesystem::remove_all(root.parent_path());
}

// ---- the child protocol and parameters ----

TEST(Protocol, SampleRoundTrips) {
  Sample s;
  s.seconds = 0.0123456;
  s.has_stats = true;
  s.totals = WorkerStats{10, 4, 6, 3, 2, 1, 2};
  s.run_outside = 5;
  s.busiest_share = 0.75;
  const auto back = decode_sample(encode_sample(s));
  ASSERT_TRUE(back.has_value());
  EXPECT_DOUBLE_EQ(back->seconds, s.seconds);
  EXPECT_EQ(back->totals, s.totals);
  EXPECT_EQ(back->run_outside, 5u);
  EXPECT_DOUBLE_EQ(back->busiest_share, 0.75);
  EXPECT_FALSE(decode_sample("sample nonsense").has_value());
  EXPECT_FALSE(decode_sample("fail grid lost tasks").has_value());
}

TEST(Protocol, AStealOfSeveralTasksIsOneStealOperation) {
  WorkerCounters c;
  c.bump(Counter::steals, 5);
  const WorkerStats before = c.snapshot();
  c.bump(Counter::steals);
  c.bump(Counter::parks);
  const WorkerStats s = c.snapshot();
  EXPECT_EQ(s.steals, 6u);
  EXPECT_EQ(s.steal_ops, 2u);
  // A repetition's statistics are the difference of two snapshots.
  EXPECT_EQ(s - before, (WorkerStats{0, 0, 0, 1, 0, 1, 1}));
}

TEST(Protocol, ParamsRoundTripAndRejectBadInput) {
  Params p;
  p.set("E", 10).set("work", "tiny");
  EXPECT_EQ(Params::parse(p.to_string()).to_string(), p.to_string());
  EXPECT_EQ(Params::parse("E=10,R=3").u64("R"), 3u);
  EXPECT_THROW(Params::parse("E10"), std::invalid_argument);
  EXPECT_THROW(Params::parse("E=-1").u64("E"), std::invalid_argument);
  EXPECT_THROW(Params::parse("E=12abc").u64("E"), std::invalid_argument);
  EXPECT_THROW(Params().set("path", "/a,b"), std::invalid_argument);
  EXPECT_THROW(parse_numbers("1 2", 3, "test"), std::invalid_argument);
  EXPECT_EQ(parse_numbers("1 2 3", 3, "test")[2], 3u);
}

// ---- child processes: a hung or crashed child is reported, never waited for forever ----

TEST(ChildProcess, CapturesStdoutAndExitCode) {
  const ChildOutcome ok =
      run_child("/bin/sh", {"-c", "echo sample; exit 0"}, std::chrono::seconds(30));
  EXPECT_TRUE(ok.succeeded());
  EXPECT_EQ(ok.output, "sample\n");
  const ChildOutcome bad = run_child("/bin/sh", {"-c", "exit 3"}, std::chrono::seconds(30));
  EXPECT_FALSE(bad.succeeded());
  EXPECT_EQ(bad.exit_code, 3);
}

TEST(ChildProcess, AHungChildIsKilledAtTheTimeLimit) {
  const auto start = std::chrono::steady_clock::now();
  const ChildOutcome hung =
      run_child("/bin/sh", {"-c", "echo started; exec sleep 60"}, std::chrono::seconds(1));
  EXPECT_TRUE(hung.timed_out);
  EXPECT_FALSE(hung.succeeded());
  EXPECT_EQ(hung.output, "started\n");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
}

TEST(ChildProcess, ACrashIsReportedWithItsSignal) {
  const ChildOutcome crashed =
      run_child("/bin/sh", {"-c", "kill -SEGV $$"}, std::chrono::seconds(30));
  EXPECT_FALSE(crashed.succeeded());
  EXPECT_EQ(crashed.signal, SIGSEGV);
  EXPECT_NE(crashed.describe_failure().find("signal"), std::string::npos);
}

// ---- output files ----

std::vector<Measurement> example_results() {
  Measurement ok;
  ok.workload = "grid";
  ok.cell = "tiny 10x1";
  ok.executor = "stage1_global_lock";
  ok.threads = 2;
  ok.unit = "items";
  ok.units_per_run = 1000;
  ok.processes = 2;
  ok.samples = {sample(0.5, true, WorkerStats{1000, 0, 1000, 0, 0, 3}),
                sample(0.25, true, WorkerStats{1000, 0, 1000, 0, 0, 5})};
  Measurement bad = ok;
  bad.executor = "stage9_broken";
  bad.status = Status::failed;
  bad.failure = "grid 10x1: 999 items ran, expected 1000, \"lost\"";
  bad.samples.clear();
  Measurement faster = ok;
  faster.executor = "oneTBB";
  faster.note = "a note, with a comma";
  for (Sample& s : faster.samples) {
    s.seconds /= 2;
    s.has_stats = false;
  }
  return {ok, bad, faster};
}

std::size_t csv_fields(const std::string& line) {
  std::size_t fields = 1;
  bool quoted = false;
  for (char c : line) {
    if (c == '"') quoted = !quoted;
    if (c == ',' && !quoted) ++fields;
  }
  return fields;
}

TEST(Output, CsvHasOneRowPerConfigurationAndAlignedColumns) {
  RunInfo info;
  info.baseline = "stage1_global_lock";
  std::ostringstream out;
  write_csv(out, info, example_results());
  std::istringstream lines(out.str());
  std::string line;
  std::vector<std::string> rows;
  while (std::getline(lines, line))
    rows.push_back(line);
  ASSERT_EQ(rows.size(), 4u);
  const std::size_t columns = csv_fields(rows[0]);
  for (const std::string& r : rows)
    EXPECT_EQ(csv_fields(r), columns) << r;
  EXPECT_NE(rows[1].find("stage1_global_lock,2,ok"), std::string::npos);
  EXPECT_NE(rows[2].find("FAILED"), std::string::npos);
  EXPECT_NE(rows[3].find("\"a note, with a comma\""), std::string::npos);
  EXPECT_NE(rows[3].find(",2,"), std::string::npos);  // speedup 2x over the baseline
  EXPECT_EQ(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
}

TEST(Output, JsonIsEscapedAndMarksFailures) {
  RunInfo info;
  info.baseline = "stage1_global_lock";
  info.cpu_model = "AMD \"EPYC\"";
  std::ostringstream out;
  write_json(out, info, example_results());
  const std::string json = out.str();
  EXPECT_EQ(json.rfind(fmt::format("{{\n  \"schema_version\": {},", kJsonSchemaVersion), 0), 0u);
  EXPECT_NE(json.find("\"cpu_model\": \"AMD \\\"EPYC\\\"\""), std::string::npos);
  EXPECT_NE(json.find("\"status\": \"FAILED\""), std::string::npos);
  EXPECT_NE(json.find("\\\"lost\\\""), std::string::npos);
  EXPECT_NE(json.find("\"speedup_over_baseline\": 2"), std::string::npos);
  EXPECT_NE(json.find("\"samples_seconds\": [0.5, 0.25]"), std::string::npos);
  // Balanced braces and brackets (no string here contains one).
  int depth = 0;
  for (char c : json) {
    if (c == '{' || c == '[') ++depth;
    if (c == '}' || c == ']') --depth;
    ASSERT_GE(depth, 0);
  }
  EXPECT_EQ(depth, 0);
  EXPECT_EQ(json_escape("a\nb\x01"), "a\\nb\\u0001");
}

// The run's CPU names its family and model: "AMD EPYC" alone covers several generations.
TEST(CpuModel, NamesTheFamilyAndModelOfTheFirstProcessor) {
  std::istringstream x86(
      "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 26\nmodel\t\t: 2\n"
      "model name\t: AMD EPYC\nflags\t\t: fpu\n\n"
      "processor\t: 1\ncpu family\t: 25\nmodel\t\t: 17\nmodel name\t: AMD EPYC\n");
  EXPECT_EQ(cpu_model_from(x86), "AMD EPYC (family 26, model 2)");
  std::istringstream arm(
      "processor\t: 0\nBogoMIPS\t: 50.00\nCPU implementer\t: 0x41\nCPU architecture: 8\n"
      "CPU part\t: 0xd0c\n\nprocessor\t: 1\nCPU part\t: 0xd40\n");
  EXPECT_EQ(cpu_model_from(arm), "CPU (implementer 0x41, part 0xd0c)");
  std::istringstream named_only("model name\t: Some CPU\n");
  EXPECT_EQ(cpu_model_from(named_only), "Some CPU");
  std::istringstream empty("");
  EXPECT_EQ(cpu_model_from(empty), "unknown CPU");
}

TEST(Output, TableMarksFailedRowsAndShowsSpeedups) {
  const std::vector<Measurement> all = example_results();
  const TableLayout layout{
      {2}, {"stage1_global_lock", "stage9_broken", "oneTBB"}, "stage1_global_lock"};
  const std::string table = render_cell_tables(all, "grid", "tiny 10x1", layout);
  EXPECT_NE(table.find("*** FAILED ***"), std::string::npos) << table;
  EXPECT_NE(table.find("stage9_broken at 2 threads FAILED"), std::string::npos) << table;
  EXPECT_NE(table.find("2.00x"), std::string::npos) << table;
  EXPECT_NE(table.find("1.00x"), std::string::npos) << table;
  EXPECT_EQ(si(1234567), "1.23M");
  EXPECT_EQ(si(950), "950");
}

}  // namespace
}  // namespace wslab::bench
