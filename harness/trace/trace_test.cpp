// The trace recorder: what it records, what it drops, what it exports, and that it records nothing
// when stopped. Built with WSLAB_TRACING=1 (see trace_off_test.cpp for the compiled-out build).
#include <gtest/gtest.h>

#include <atomic>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <latch>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common/config.hpp"
#include "harness/trace/recorder.hpp"
#include "registry/pools.hpp"

static_assert(wslab::trace::kCompiledIn, "trace_test must be built with WSLAB_TRACING=1");

namespace wslab::trace {
namespace {

using wslab::trace::Event;

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("wslab_trace_test_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// ---- a small JSON reader: enough to check that the export parses and to count what is in it ----

struct Json {
  enum Kind { null, boolean, number, string, array, object } kind = null;
  double num = 0;
  std::string str;
  std::vector<Json> items;
  std::map<std::string, Json> fields;

  const Json& at(const std::string& key) const {
    auto it = fields.find(key);
    if (it == fields.end()) throw std::runtime_error("missing key " + key);
    return it->second;
  }
  bool has(const std::string& key) const { return fields.count(key) != 0; }
};

class JsonReader {
 public:
  explicit JsonReader(const std::string& text) : s_(text) {}
  Json document() {
    Json v = value();
    skip_space();
    if (pos_ != s_.size()) fail("trailing characters");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error("JSON: " + what + " at offset " + std::to_string(pos_));
  }
  void skip_space() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_])))
      ++pos_;
  }
  char peek() {
    skip_space();
    if (pos_ >= s_.size()) fail("unexpected end");
    return s_[pos_];
  }
  void expect(char c) {
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++pos_;
  }
  bool literal(const char* word) {
    const std::string w(word);
    if (s_.compare(pos_, w.size(), w) != 0) return false;
    pos_ += w.size();
    return true;
  }
  Json value() {
    Json v;
    const char c = peek();
    if (c == '{') {
      v.kind = Json::object;
      ++pos_;
      if (peek() == '}') return ++pos_, v;
      for (;;) {
        if (peek() != '"') fail("expected a key");
        std::string key = string_body();
        expect(':');
        if (!v.fields.emplace(key, value()).second) fail("duplicate key " + key);
        if (peek() == ',') {
          ++pos_;
          continue;
        }
        expect('}');
        return v;
      }
    }
    if (c == '[') {
      v.kind = Json::array;
      ++pos_;
      if (peek() == ']') return ++pos_, v;
      for (;;) {
        v.items.push_back(value());
        if (peek() == ',') {
          ++pos_;
          continue;
        }
        expect(']');
        return v;
      }
    }
    if (c == '"') {
      v.kind = Json::string;
      v.str = string_body();
      return v;
    }
    if (literal("true") || literal("false")) return v.kind = Json::boolean, v;
    if (literal("null")) return v;
    // A number, strictly: -?digits(.digits)?([eE][+-]?digits)?
    const std::size_t start = pos_;
    if (s_[pos_] == '-') ++pos_;
    auto digits = [&] {
      const std::size_t from = pos_;
      while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_])))
        ++pos_;
      if (pos_ == from) fail("expected digits");
    };
    digits();
    if (pos_ < s_.size() && s_[pos_] == '.') ++pos_, digits();
    if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
      ++pos_;
      if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
      digits();
    }
    v.kind = Json::number;
    v.num = std::stod(s_.substr(start, pos_ - start));
    return v;
  }
  std::string string_body() {
    expect('"');
    std::string out;
    while (pos_ < s_.size() && s_[pos_] != '"') {
      const char c = s_[pos_++];
      if (static_cast<unsigned char>(c) < 0x20) fail("raw control character in a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= s_.size()) fail("unfinished escape");
      const char e = s_[pos_++];
      if (e == 'u') {
        if (pos_ + 4 > s_.size()) fail("short \\u escape");
        out += static_cast<char>(std::stoi(s_.substr(pos_, 4), nullptr, 16));
        pos_ += 4;
      } else if (std::string("\"\\/bfnrt").find(e) != std::string::npos) {
        out += e;
      } else {
        fail("bad escape");
      }
    }
    expect('"');
    return out;
  }

  const std::string& s_;
  std::size_t pos_ = 0;
};

Json read_json_file(const std::string& path) {
  const std::string text = read_file(path);
  return JsonReader(text).document();
}

// ---- the grid workload, small ----

// E external items, each submitting R recursive ones; returns how many ran (must be E * (1 + R)).
std::uint64_t run_grid(IThreadPool& pool, std::size_t external, std::size_t recursive) {
  std::atomic<std::uint64_t> ran{0};
  for (std::size_t e = 0; e < external; ++e) {
    pool.submit([&pool, &ran, recursive] {
      ran.fetch_add(1, std::memory_order_relaxed);
      for (std::size_t r = 0; r < recursive; ++r) {
        pool.submit([&ran] { ran.fetch_add(1, std::memory_order_relaxed); });
      }
    });
  }
  pool.wait_idle();
  return ran.load();
}

std::size_t count_task_spans(const std::vector<ThreadTrace>& threads, std::uint64_t stop_ns) {
  std::size_t n = 0;
  for (const ThreadTrace& t : threads) {
    for (const Span& s : spans_of(t.events, stop_ns))
      n += s.kind != SpanKind::park;
  }
  return n;
}

// ---- tests ----

TEST(TraceRecorder, StoppedRecorderRecordsNothing) {
  auto pool = make_pool(pool_names().front(), 2);
  Recorder recorder;
  ASSERT_EQ(run_grid(*pool, 20, 20), 20u * 21u);  // before start(): not recorded
  EXPECT_EQ(trace::detail::sink.load(), nullptr) << "the hook must be off until start()";
  recorder.start();
  EXPECT_NE(trace::detail::sink.load(), nullptr);
  recorder.stop();
  EXPECT_EQ(trace::detail::sink.load(), nullptr) << "stop() must switch the hook off";
  ASSERT_EQ(run_grid(*pool, 20, 20), 20u * 21u);  // after stop(): not recorded
  event(Event::steal, 1);
  EXPECT_EQ(recorder.recorded_events(), 0u);
  EXPECT_TRUE(recorder.threads().empty());
}

TEST(TraceRecorder, EventsRecordedPerThreadInOrder) {
  constexpr int kThreads = 4;
  constexpr std::uint32_t kEvents = 5000;
  Recorder recorder;
  recorder.start();
  std::latch ready(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      ready.arrive_and_wait();  // all threads record at once
      for (std::uint32_t i = 0; i < kEvents; ++i) {
        event(i % 2 == 0 ? Event::steal : Event::steal_failed, i);
      }
    });
  }
  for (std::thread& t : threads)
    t.join();
  recorder.stop();

  const std::vector<ThreadTrace> traced = recorder.threads();
  ASSERT_EQ(traced.size(), static_cast<std::size_t>(kThreads));
  for (std::size_t t = 0; t < traced.size(); ++t) {
    const ThreadTrace& tt = traced[t];
    EXPECT_EQ(tt.pool, nullptr) << "these threads are not pool workers";
    EXPECT_EQ(tt.outside_ordinal, t) << "outside threads are numbered in order";
    EXPECT_EQ(tt.dropped, 0u);
    ASSERT_EQ(tt.events.size(), kEvents) << "thread " << t;
    for (std::uint32_t i = 0; i < kEvents; ++i) {
      ASSERT_EQ(tt.events[i].arg, i) << "thread " << t << ": events out of order";
      ASSERT_EQ(tt.events[i].event, i % 2 == 0 ? Event::steal : Event::steal_failed);
      if (i > 0) {
        ASSERT_GE(tt.events[i].ns, tt.events[i - 1].ns) << "time ran backwards";
      }
      ASSERT_LE(tt.events[i].ns, recorder.duration_ns()) << "stamped after stop()";
    }
  }
  EXPECT_EQ(recorder.recorded_events(), std::uint64_t{kThreads} * kEvents);
}

TEST(TraceRecorder, DropsAreCountedAtTheCap) {
  constexpr std::size_t kCap = 64;
  constexpr std::uint32_t kEmitted = 200;
  Recorder recorder({.max_events_per_thread = kCap, .label = "cap"});
  recorder.start();
  for (std::uint32_t i = 0; i < kEmitted; ++i)
    event(Event::steal, i);
  std::thread([] {
    for (std::uint32_t i = 0; i < 10; ++i)
      event(Event::steal, i);  // under the cap: no drops
  }).join();
  recorder.stop();

  const std::vector<ThreadTrace> traced = recorder.threads();
  ASSERT_EQ(traced.size(), 2u);
  ASSERT_EQ(traced[0].events.size(), kCap);
  EXPECT_EQ(traced[0].dropped, kEmitted - kCap);
  for (std::uint32_t i = 0; i < kCap; ++i)
    EXPECT_EQ(traced[0].events[i].arg, i) << "kept the first";
  EXPECT_EQ(traced[1].events.size(), 10u);
  EXPECT_EQ(traced[1].dropped, 0u);
  EXPECT_EQ(recorder.dropped_events(), kEmitted - kCap);

  // The export reports the drops too.
  const std::string path = temp_path("cap.json");
  recorder.write_chrome_trace(path);
  const Json doc = read_json_file(path);
  EXPECT_EQ(doc.at("otherData").at("dropped_events").num, double{kEmitted - kCap});
  EXPECT_EQ(doc.at("otherData").at("recorded_events").num, double{kCap + 10});
  std::filesystem::remove(path);
}

TEST(TraceRecorder, SpanOriginsFollowStealsAndGlobalPops) {
  auto rec = [](std::uint64_t ns, Event e, std::uint32_t arg = 0) { return Record{ns, arg, e}; };
  const std::vector<Record> events{
      rec(5, Event::task_end),  // began before start(): a span from 0
      rec(10, Event::steal, 3), rec(11, Event::task_begin), rec(20, Event::task_end),
      rec(21, Event::steal_failed, 1), rec(22, Event::global_pop), rec(23, Event::task_begin),
      // a task that helps while it waits: another task runs inside it
      rec(25, Event::task_begin), rec(28, Event::task_end), rec(30, Event::task_end),
      rec(40, Event::park_begin), rec(50, Event::park_end),
      rec(60, Event::task_begin),  // still running at stop()
  };
  const std::vector<Span> spans = spans_of(events, 100);
  ASSERT_EQ(spans.size(), 6u);
  EXPECT_EQ(spans[0].begin_ns, 0u);
  EXPECT_EQ(spans[0].end_ns, 5u);
  EXPECT_EQ(spans[0].kind, SpanKind::local_task);
  EXPECT_EQ(spans[1].begin_ns, 11u);
  EXPECT_EQ(spans[1].kind, SpanKind::stolen_task);
  EXPECT_EQ(spans[1].victim, 3);
  EXPECT_EQ(spans[2].begin_ns, 23u);
  EXPECT_EQ(spans[2].end_ns, 30u);
  EXPECT_EQ(spans[2].kind, SpanKind::global_task);
  EXPECT_EQ(spans[3].begin_ns, 25u);
  EXPECT_EQ(spans[3].end_ns, 28u);
  EXPECT_EQ(spans[3].kind, SpanKind::local_task) << "the origin is used up by the outer task";
  EXPECT_EQ(spans[4].kind, SpanKind::park);
  EXPECT_EQ(spans[4].end_ns - spans[4].begin_ns, 10u);
  EXPECT_EQ(spans[5].begin_ns, 60u);
  EXPECT_EQ(spans[5].end_ns, 100u) << "an open task ends at stop()";
}

TEST(TraceRecorder, TimelineBoxesClipMergeAndOrder) {
  using K = SpanKind;
  // 10 ns a pixel: narrow means under 30 ns, "close" under 10 ns apart.
  const std::vector<Span> spans{
      {0, 100, K::park, -1},           // clipped to the window's start, 50
      {120, 125, K::local_task, -1},   // three narrow tasks 3 and 4 ns apart: one box
      {128, 133, K::local_task, -1},   //
      {137, 140, K::local_task, -1},   //
      {200, 260, K::local_task, -1},   // two wide tasks back to back: two boxes, a pixel apart
      {260, 320, K::local_task, -1},   //
      {150, 152, K::stolen_task, 1},   // a 2 ns steal: widened to two pixels, drawn last
      {400, 900, K::global_task, -1},  // clipped to the window's end, 500
      {600, 700, K::local_task, -1},   // outside the window
  };
  const std::vector<TimelineBox> boxes = timeline_boxes(spans, 50, 500, 10);
  ASSERT_EQ(boxes.size(), 6u);
  auto expect_box = [&](std::size_t i, std::uint64_t begin, std::uint64_t end, K kind) {
    EXPECT_EQ(boxes[i].begin_ns, begin) << "box " << i;
    EXPECT_EQ(boxes[i].end_ns, end) << "box " << i;
    EXPECT_EQ(boxes[i].kind, kind) << "box " << i;
  };
  expect_box(0, 50, 90, K::park);  // 50 ns wide: 4+ pixels, so one pixel shorter
  expect_box(1, 120, 140, K::local_task);
  expect_box(2, 200, 250, K::local_task);
  expect_box(3, 260, 310, K::local_task);
  expect_box(4, 400, 490, K::global_task);
  expect_box(5, 150, 170, K::stolen_task);
}

class TracedPool : public ::testing::TestWithParam<std::string> {};

// Every task that ran while recording appears exactly once as a task span, on a track of one of
// the pool's workers (or of the thread that helped from outside).
TEST_P(TracedPool, EveryTaskIsOneSpan) {
  constexpr std::size_t kThreads = 2;
  const std::size_t external = kSanitized ? 20 : 200;
  const std::size_t recursive = kSanitized ? 20 : 50;
  const std::size_t tasks = external * (1 + recursive);
  auto pool = make_pool(GetParam(), kThreads);
  Recorder recorder({.label = GetParam()});
  recorder.start();
  ASSERT_EQ(run_grid(*pool, external, recursive), tasks);
  recorder.stop();

  const std::vector<ThreadTrace> traced = recorder.threads();
  EXPECT_EQ(recorder.dropped_events(), 0u);
  EXPECT_EQ(count_task_spans(traced, recorder.duration_ns()), tasks);
  std::size_t begins = 0, ends = 0;
  for (const ThreadTrace& t : traced) {
    if (t.pool != nullptr) {
      EXPECT_LT(t.worker_index, kThreads);
    }
    for (const Record& r : t.events) {
      begins += r.event == Event::task_begin;
      ends += r.event == Event::task_end;
    }
  }
  EXPECT_EQ(begins, tasks);
  EXPECT_EQ(ends, tasks);

  // The Chrome export parses, names every track, and holds exactly one "X" task event per task.
  const std::string path = temp_path(GetParam() + ".json");
  recorder.write_chrome_trace(path);
  const Json doc = read_json_file(path);
  ASSERT_EQ(doc.kind, Json::object);
  const Json& events = doc.at("traceEvents");
  ASSERT_EQ(events.kind, Json::array);
  std::size_t task_events = 0, named_threads = 0;
  for (const Json& e : events.items) {
    const std::string& ph = e.at("ph").str;
    ASSERT_TRUE(ph == "M" || ph == "X" || ph == "i") << ph;
    ASSERT_EQ(e.at("pid").kind, Json::number);
    if (ph == "M") {
      named_threads += e.at("name").str == "thread_name";
      continue;
    }
    ASSERT_EQ(e.at("tid").kind, Json::number);
    ASSERT_EQ(e.at("ts").kind, Json::number);
    EXPECT_GE(e.at("ts").num, 0.0);
    if (ph == "X") {
      EXPECT_GE(e.at("dur").num, 0.0);
      task_events += e.at("cat").str == "task";
    } else {
      EXPECT_EQ(e.at("s").str, "t");
      EXPECT_EQ(e.at("args").at("victim").kind, Json::number) << "a steal names its victim";
    }
  }
  EXPECT_EQ(task_events, tasks);
  EXPECT_EQ(named_threads, traced.size());
  EXPECT_EQ(doc.at("otherData").at("label").str, GetParam());
  std::filesystem::remove(path);
}

INSTANTIATE_TEST_SUITE_P(Pools, TracedPool, ::testing::ValuesIn([] {
                           std::vector<std::string> names;
                           for (std::string_view n : pool_names())
                             names.emplace_back(n);
                           return names;
                         }()),
                         [](const ::testing::TestParamInfo<std::string>& param) {
                           return param.param;
                         });

TEST(TraceRecorder, OnlyOneRecorderRecordsAtATime) {
  Recorder first;
  Recorder second;
  first.start();
  EXPECT_THROW(second.start(), std::logic_error);
  EXPECT_THROW(static_cast<void>(first.threads()), std::logic_error) << "export while recording";
  first.stop();
  second.start();
  event(Event::steal, 7);
  second.stop();
  EXPECT_EQ(second.recorded_events(), 1u);
  EXPECT_EQ(first.recorded_events(), 0u);
  EXPECT_THROW(Recorder({.max_events_per_thread = 0}), std::invalid_argument);
  EXPECT_THROW(Recorder({.max_events_per_thread = Recorder::kMaxEventsPerThread + 1}),
               std::invalid_argument);
}

// Threads keep recording while the recorder is started, stopped, exported and destroyed over and
// over: every log must hold each thread's sequence numbers in order without repeats, and no thread
// may touch a destroyed buffer (ASan) or race with the export (TSan). (Not gap-free: an event at
// the very moment of a switch may be missed, see common/trace.hpp.)
TEST(TraceRecorder, StampedeOfStartStopWhileThreadsRecord) {
  constexpr int kThreads = 3;
  const int cycles = kSanitized ? 50 : 300;
  std::atomic<bool> done{false};
  std::atomic<std::uint64_t> emitted{0};  // events the threads have emitted so far, all together
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (std::uint32_t i = 0; !done.load(std::memory_order_relaxed); ++i) {
        event(Event::steal, i);
        emitted.fetch_add(1, std::memory_order_relaxed);
      }
    });
  }
  std::uint64_t seen = 0;
  for (int c = 0; c < cycles; ++c) {
    auto recorder = std::make_unique<Recorder>(RecorderOptions{.max_events_per_thread = 4096});
    recorder->start();
    // Keep each recording open until the threads have emitted a few events (on a busy machine they
    // may not have been scheduled at all yet).
    const std::uint64_t before = emitted.load(std::memory_order_relaxed);
    while (emitted.load(std::memory_order_relaxed) < before + 2 * kThreads)
      std::this_thread::yield();
    recorder->stop();
    for (const ThreadTrace& t : recorder->threads()) {
      for (std::size_t i = 1; i < t.events.size(); ++i) {
        ASSERT_GT(t.events[i].arg, t.events[i - 1].arg) << "events reordered or repeated in a log";
      }
      seen += t.events.size() + t.dropped;
    }
    recorder.reset();  // destroyed while the threads may still be appending to their logs
  }
  done.store(true, std::memory_order_relaxed);
  for (std::thread& t : threads)
    t.join();
  EXPECT_GT(seen, 0u) << "the threads never recorded anything";
}

TEST(TraceRecorder, TimelineRendersToPng) {
  auto pool = make_pool(pool_names().front(), 2);
  Recorder recorder({.label = "timeline test"});
  recorder.start();
  ASSERT_EQ(run_grid(*pool, 10, 10), 110u);
  recorder.stop();
  const std::string csv = temp_path("timeline.csv");
  const std::string png = temp_path("timeline.png");
  recorder.write_timeline_csv(csv);
  const std::string data = read_file(csv);
  EXPECT_NE(data.find("\"worker "), std::string::npos) << "no worker row in\n" << data;
  render_timeline(csv, png, "timeline test");
  const std::string image = read_file(png);
  ASSERT_GE(image.size(), 8u);
  EXPECT_EQ(image.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8)) << "not a PNG";
  EXPECT_THROW(recorder.write_timeline_csv(csv, {.from_ns = recorder.duration_ns() + 1}),
               std::invalid_argument);
  EXPECT_THROW(render_timeline(csv + ".missing", png), std::runtime_error);
  std::filesystem::remove(csv);
  std::filesystem::remove(png);
}

}  // namespace
}  // namespace wslab::trace
