// wslab::trace::Recorder: records the scheduling events the pools emit through common/trace.hpp
// (task begin/end, steals, global pops, parks) and exports them as a Chrome trace (JSON for
// chrome://tracing and https://ui.perfetto.dev) and as a per-worker timeline picture (gnuplot).
//
// Usage (the program must be built with WSLAB_TRACING=1, e.g. by linking `wslab::tracing`):
//
//   wslab::trace::Recorder recorder({.label = "stage4 grid"});
//   recorder.start();
//   ... run the pool ...
//   recorder.stop();
//   recorder.write_chrome_trace("trace.json");
//   recorder.write_timeline_csv("trace.csv");
//   wslab::trace::render_timeline("trace.csv", "trace.png");
//
// Cost model. Off (stopped, or never started): each hook in a pool is one relaxed load and a
// branch (common/trace.hpp). On: a TLS lookup, one clock read and a store into the calling
// thread's own buffer; no lock and no shared cache line on that path. A thread takes the
// registry's mutex once per recording, the first time it records.
//
// Memory is bounded: each thread keeps at most `max_events_per_thread` events; further events are
// counted as dropped, and the count is reported (dropped(), the JSON's otherData, the demo's
// output), never silently lost.
//
// The Recorder object itself is driven by one thread (start, stop, export). Only one recorder can
// record at a time, because the pools' hook is process-wide.
#pragma once

#include <spawn.h>
#include <sys/wait.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "common/trace.hpp"
#include "common/worker_identity.hpp"

extern char** environ;

namespace wslab::trace {

// One recorded event. Timestamps are steady-clock nanoseconds (the raw clock while recording,
// rebased to the recording's start by Recorder::threads()).
struct Record {
  std::uint64_t ns;
  std::uint32_t arg;
  Event event;
};

inline std::uint64_t clock_ns() noexcept {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::steady_clock::now().time_since_epoch())
                                        .count());
}

// The events of one thread during one recording. Only that thread appends; any thread may read
// the published prefix.
class ThreadLog {
 public:
  ThreadLog(std::size_t capacity, const void* pool, std::size_t worker_index,
            std::uint32_t outside_ordinal)
      // `new Record[n]` leaves the trivially constructible records uninitialised, so the pages of
      // a large cap are only committed as the thread actually fills them.
      : slots_(new Record[capacity]),
        capacity_(capacity),
        pool_(pool),
        worker_index_(worker_index),
        outside_ordinal_(outside_ordinal) {}

  void append(Event e, std::uint32_t arg, std::uint64_t ns) noexcept {
    // Relaxed reads of our own counters: this thread is their only writer.
    const std::size_t n = size_.load(std::memory_order_relaxed);
    if (n == capacity_) {
      dropped_.store(dropped_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
      return;
    }
    slots_[n] = Record{ns, arg, e};
    // release: a reader that acquires the new size also sees the record written above. The reader
    // only touches slots below the size it read, so a write still in progress is never read.
    size_.store(n + 1, std::memory_order_release);
  }

  std::vector<Record> published() const {
    const std::size_t n = size_.load(std::memory_order_acquire);
    return std::vector<Record>(slots_.get(), slots_.get() + n);
  }
  std::uint64_t dropped() const noexcept { return dropped_.load(std::memory_order_relaxed); }

  const void* pool() const noexcept { return pool_; }  // nullptr: not a pool worker
  std::size_t worker_index() const noexcept { return worker_index_; }
  std::uint32_t outside_ordinal() const noexcept { return outside_ordinal_; }

 private:
  std::unique_ptr<Record[]> slots_;
  std::size_t capacity_;
  std::atomic<std::size_t> size_{0};
  std::atomic<std::uint64_t> dropped_{0};
  const void* pool_;
  std::size_t worker_index_;
  std::uint32_t outside_ordinal_;
};

// One thread's events after a recording, rebased to nanoseconds since Recorder::start().
struct ThreadTrace {
  const void* pool = nullptr;  // which pool the thread works for; nullptr for other threads
  std::size_t worker_index = 0;
  std::uint32_t outside_ordinal = 0;  // for threads outside any pool: 0, 1, ... in order seen
  std::vector<Record> events;
  std::uint64_t dropped = 0;
};

// A task run, a park, read back from the events; what the exports draw.
enum class SpanKind : std::uint8_t { local_task, global_task, stolen_task, park };
inline constexpr std::string_view span_name(SpanKind k) noexcept {
  switch (k) {
    case SpanKind::local_task:
      return "task (local)";
    case SpanKind::global_task:
      return "task (global queue)";
    case SpanKind::stolen_task:
      return "task (stolen)";
    case SpanKind::park:
      return "parked";
  }
  return "?";
}

struct Span {
  std::uint64_t begin_ns;
  std::uint64_t end_ns;
  SpanKind kind;
  std::int64_t victim;  // the worker a stolen task came from; -1 otherwise
};

// Turns one thread's event sequence into spans. A task takes its origin from the last steal or
// global pop since the previous task began (a task with neither came from the thread's own
// queue). Tasks may nest (a task that helps while it waits runs others inside it). A span still
// open when recording stopped ends at `stop_ns`; one whose beginning came before start() begins at
// 0.
inline std::vector<Span> spans_of(const std::vector<Record>& events, std::uint64_t stop_ns) {
  struct Open {
    std::uint64_t begin_ns;
    SpanKind kind;
    std::int64_t victim;
  };
  std::vector<Span> spans;
  std::vector<Open> tasks;
  bool parked = false;
  std::uint64_t park_begin = 0;
  SpanKind next_origin = SpanKind::local_task;
  std::int64_t next_victim = -1;
  for (const Record& r : events) {
    switch (r.event) {
      case Event::steal:
        next_origin = SpanKind::stolen_task;
        next_victim = r.arg;
        break;
      case Event::global_pop:
        next_origin = SpanKind::global_task;
        next_victim = -1;
        break;
      case Event::task_begin:
        tasks.push_back(Open{r.ns, next_origin, next_victim});
        next_origin = SpanKind::local_task;
        next_victim = -1;
        break;
      case Event::task_end:
        if (tasks.empty()) {
          spans.push_back(Span{0, r.ns, SpanKind::local_task, -1});
        } else {
          spans.push_back(
              Span{tasks.back().begin_ns, r.ns, tasks.back().kind, tasks.back().victim});
          tasks.pop_back();
        }
        break;
      case Event::park_begin:
        parked = true;
        park_begin = r.ns;
        break;
      case Event::park_end:
        spans.push_back(Span{parked ? park_begin : 0, r.ns, SpanKind::park, -1});
        parked = false;
        break;
      case Event::steal_failed:
        break;
    }
  }
  while (!tasks.empty()) {
    spans.push_back(Span{tasks.back().begin_ns, std::max(stop_ns, tasks.back().begin_ns),
                         tasks.back().kind, tasks.back().victim});
    tasks.pop_back();
  }
  if (parked) spans.push_back(Span{park_begin, std::max(stop_ns, park_begin), SpanKind::park, -1});
  std::sort(spans.begin(), spans.end(),
            [](const Span& a, const Span& b) { return a.begin_ns < b.begin_ns; });
  return spans;
}

// What the timeline draws for one thread: its spans inside [from_ns, to_ns) at a resolution of
// `pixel_ns` a pixel, in drawing order. One pass per kind, parks first and the rarer kinds last, so
// that a steal is drawn on top of the local work around it instead of under it. Boxes narrower
// than a few pixels merge with same-kind neighbours less than a pixel away (100,000 sub-pixel
// boxes draw as noise, and slowly); wider ones stay separate, with a one-pixel gap at their end,
// so that the tasks of a zoomed picture can be told apart. Every box is at least two pixels wide.
struct TimelineBox {
  std::uint64_t begin_ns;
  std::uint64_t end_ns;
  SpanKind kind;
};
inline std::vector<TimelineBox> timeline_boxes(const std::vector<Span>& spans,
                                               std::uint64_t from_ns, std::uint64_t to_ns,
                                               std::uint64_t pixel_ns) {
  pixel_ns = std::max<std::uint64_t>(pixel_ns, 1);
  std::vector<TimelineBox> boxes;
  for (const SpanKind kind :
       {SpanKind::park, SpanKind::local_task, SpanKind::global_task, SpanKind::stolen_task}) {
    bool open = false;
    bool run_narrow = false;
    TimelineBox run{};
    auto flush = [&] {
      if (!open) return;
      std::uint64_t end = std::max(run.end_ns, run.begin_ns + 2 * pixel_ns);
      if (end - run.begin_ns >= 4 * pixel_ns) end -= pixel_ns;
      boxes.push_back(TimelineBox{run.begin_ns, end, run.kind});
      open = false;
    };
    for (const Span& s : spans) {
      if (s.kind != kind || s.end_ns <= from_ns || s.begin_ns >= to_ns) continue;
      const std::uint64_t begin = std::max(s.begin_ns, from_ns);
      const std::uint64_t end = std::min(s.end_ns, to_ns);
      const bool narrow = end - begin < 3 * pixel_ns;
      if (open && narrow && run_narrow && begin < run.end_ns + pixel_ns) {
        run.end_ns = std::max(run.end_ns, end);
        continue;
      }
      flush();
      run = TimelineBox{begin, end, kind};
      open = true;
      run_narrow = narrow;
    }
    flush();
  }
  return boxes;
}

// Which part of a run the timeline shows, and at what resolution.
struct TimelineOptions {
  std::uint64_t from_ns = 0;  // since start()
  std::uint64_t to_ns = 0;    // 0: until stop()
  // Spans of one kind closer than one pixel apart are merged: a 1 us task on a 50 ms axis is far
  // below a pixel, and 100,000 sub-pixel boxes draw as noise (and slowly).
  unsigned width_px = 1600;
};

struct RecorderOptions {
  std::size_t max_events_per_thread = std::size_t{1} << 20;  // 16 MiB of address space a thread
  std::string label = "wslab";  // names the trace (process name in Perfetto, title of the image)
};

namespace detail {

// The process-wide state the pools' hook reaches. Constant-initialised, so there is no question of
// initialisation order (and with libstdc++ it is trivially destructible as well).
struct Registry {
  std::mutex mutex;
  // The running recording's number; 0 when none runs. Numbers are never reused, so a thread's
  // cached log can be told to belong to an older recording without a lock.
  std::atomic<std::uint64_t> session{0};
  std::uint64_t sessions_started = 0;  // guarded by mutex
  std::size_t capacity = 0;            // guarded by mutex
  std::uint32_t outside_threads = 0;   // guarded by mutex
  // Events of threads whose log could not be allocated: counted as dropped, never just lost.
  std::atomic<std::uint64_t> unbuffered{0};
  std::vector<std::shared_ptr<ThreadLog>>* logs = nullptr;  // the running recorder's; by mutex
};
inline constinit Registry registry{};

// The calling thread's log of the running recording. Shared ownership: a thread may still be
// appending (it read the switch just before stop()) while the recorder is exported or destroyed.
struct ThreadSlot {
  std::uint64_t session = 0;
  std::shared_ptr<ThreadLog> log;
};
inline thread_local ThreadSlot this_thread_slot;

// Gives the calling thread its log of `session`; leaves the slot alone if that recording has
// stopped meanwhile.
inline void join_session(ThreadSlot& slot, std::uint64_t session) noexcept {
  std::lock_guard<std::mutex> lock(registry.mutex);
  if (registry.session.load(std::memory_order_relaxed) != session) return;
  try {
    const WorkerIdentity& me = this_thread_identity;
    const std::uint32_t outside = me.pool == nullptr ? registry.outside_threads++ : 0;
    auto log = std::make_shared<ThreadLog>(registry.capacity, me.pool, me.index, outside);
    registry.logs->push_back(log);
    slot.log = std::move(log);
  } catch (...) {  // out of memory: this thread's events are counted as dropped
    std::fprintf(stderr, "wslab trace: could not allocate a thread's event buffer\n");
    slot.log.reset();
  }
  slot.session = session;  // after a failure too: do not retry on every event
}

// The sink installed in trace::detail::sink while a recorder runs.
inline void record_event(Event e, std::uint32_t arg) noexcept {
  // acquire: pairs with start()'s release store, so the clock read below comes after start()'s
  // own reading of the start time, and no event is stamped before the recording began.
  const std::uint64_t session = registry.session.load(std::memory_order_acquire);
  if (session == 0) return;
  ThreadSlot& slot = this_thread_slot;
  if (slot.session != session) {
    join_session(slot, session);
    if (slot.session != session) return;  // the recording stopped meanwhile
  }
  if (slot.log) {
    slot.log->append(e, arg, clock_ns());
  } else {
    registry.unbuffered.fetch_add(1, std::memory_order_relaxed);
  }
}

}  // namespace detail

class Recorder {
 public:
  static constexpr std::size_t kMaxEventsPerThread = std::size_t{1} << 30;

  explicit Recorder(RecorderOptions options = {}) : options_(std::move(options)) {
    if (options_.max_events_per_thread == 0) {
      throw std::invalid_argument("wslab trace: max_events_per_thread must be at least 1");
    }
    if (options_.max_events_per_thread > kMaxEventsPerThread) {
      throw std::invalid_argument("wslab trace: max_events_per_thread of " +
                                  std::to_string(options_.max_events_per_thread) +
                                  " is beyond the limit of " + std::to_string(kMaxEventsPerThread) +
                                  " (16 GiB a thread)");
    }
  }
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;
  ~Recorder() { stop(); }

  // Starts recording, discarding what an earlier recording of this recorder kept. Throws
  // std::logic_error when tracing is compiled out or another recorder is running.
  void start() {
#if WSLAB_TRACING
    if (running_) return;
    std::lock_guard<std::mutex> lock(detail::registry.mutex);
    if (detail::registry.logs != nullptr) {
      throw std::logic_error("wslab trace: another Recorder is already recording");
    }
    logs_.clear();
    unbuffered_ = 0;
    detail::registry.unbuffered.store(0, std::memory_order_relaxed);
    detail::registry.logs = &logs_;
    detail::registry.capacity = options_.max_events_per_thread;
    detail::registry.outside_threads = 0;
    start_ns_ = clock_ns();
    stop_ns_ = start_ns_;
    // release: see record_event(); the mutex covers everything else a joining thread reads.
    detail::registry.session.store(++detail::registry.sessions_started, std::memory_order_release);
    trace::detail::sink.store(&detail::record_event, std::memory_order_relaxed);
    running_ = true;
#else
    throw std::logic_error(
        "wslab trace: this program was built without tracing (WSLAB_TRACING=0); reconfigure with "
        "-DWSLAB_TRACING=ON or link wslab::tracing");
#endif
  }

  // Stops recording. Events a thread was in the middle of recording may still land in its log;
  // the exports read each log's published prefix, so they are never torn.
  void stop() noexcept {
#if WSLAB_TRACING
    if (!running_) return;
    trace::detail::sink.store(nullptr, std::memory_order_relaxed);
    std::lock_guard<std::mutex> lock(detail::registry.mutex);
    detail::registry.session.store(0, std::memory_order_relaxed);
    detail::registry.logs = nullptr;
    stop_ns_ = clock_ns();
    unbuffered_ = detail::registry.unbuffered.load(std::memory_order_relaxed);
    running_ = false;
#endif
  }

  bool recording() const noexcept { return running_; }
  std::uint64_t duration_ns() const noexcept { return stop_ns_ - start_ns_; }
  const std::string& label() const noexcept { return options_.label; }

  // Every recorded thread, ordered by pool (in order of first event), then worker index, then
  // threads outside the pools. Throws std::logic_error while recording.
  std::vector<ThreadTrace> threads() const {
    require_stopped("threads()");
    std::vector<ThreadTrace> out;
    for (const auto& log : logs_) {
      ThreadTrace t;
      t.pool = log->pool();
      t.worker_index = log->worker_index();
      t.outside_ordinal = log->outside_ordinal();
      t.events = log->published();
      t.dropped = log->dropped();
      for (Record& r : t.events)
        r.ns = r.ns > start_ns_ ? r.ns - start_ns_ : 0;
      out.push_back(std::move(t));
    }
    const std::map<const void*, std::size_t> pool_rank = rank_pools(out);
    std::stable_sort(out.begin(), out.end(), [&](const ThreadTrace& a, const ThreadTrace& b) {
      return track_order(a, pool_rank) < track_order(b, pool_rank);
    });
    return out;
  }

  std::uint64_t recorded_events() const {
    std::uint64_t n = 0;
    for (const ThreadTrace& t : threads())
      n += t.events.size();
    return n;
  }
  std::uint64_t dropped_events() const {
    require_stopped("dropped_events()");
    std::uint64_t n = 0;
    for (const auto& log : logs_)
      n += log->dropped();
    return n + unbuffered_;
  }

  // The Chrome trace-event format ("JSON object format"): one process per pool, one thread track
  // per worker; tasks and parks are complete ("X") events, steals and failed steals instant ("i")
  // events with the victim in args. Timestamps are microseconds with nanosecond decimals.
  void write_chrome_trace(const std::string& path) const {
    const std::vector<ThreadTrace> traces = threads();
    const std::map<const void*, std::size_t> pool_rank = rank_pools(traces);
    OutputFile out(path);
    out.put("{\"displayTimeUnit\":\"ns\",\"otherData\":{\"label\":\"");
    out.put_escaped(options_.label);
    out.printf(
        "\",\"clock\":\"steady_clock\",\"recorded_events\":%llu,\"dropped_events\":%llu,"
        "\"max_events_per_thread\":%llu,\"duration_ns\":%llu},\n\"traceEvents\":[\n",
        ull(count_events(traces)), ull(count_dropped(traces)), ull(options_.max_events_per_thread),
        ull(duration_ns()));
    bool first = true;
    auto next = [&] {
      if (!first) out.put(",\n");
      first = false;
    };
    std::map<std::size_t, bool> named_process;
    for (const ThreadTrace& t : traces) {
      const Track track = track_of(t, pool_rank);
      if (!named_process[track.pid]) {
        named_process[track.pid] = true;
        next();
        out.printf("{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%zu,\"args\":{\"name\":\"",
                   track.pid);
        out.put_escaped(track.pid == kOutsidePid ? options_.label + ": threads outside the pools"
                        : pool_rank.size() > 1
                            ? options_.label + ": pool " + std::to_string(track.pid)
                            : options_.label);
        out.put("\"}}");
        next();
        out.printf(
            "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":%zu,"
            "\"args\":{\"sort_index\":%zu}}",
            track.pid, track.pid);
      }
      next();
      out.printf(
          "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%zu,\"tid\":%zu,"
          "\"args\":{\"name\":\"%s\"}}",
          track.pid, track.tid, track.name.c_str());
      next();
      out.printf(
          "{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":%zu,\"tid\":%zu,"
          "\"args\":{\"sort_index\":%zu}}",
          track.pid, track.tid, track.tid);
      for (const Span& s : spans_of(t.events, duration_ns())) {
        next();
        out.printf("{\"ph\":\"X\",\"name\":\"%s\",\"cat\":\"%s\",\"pid\":%zu,\"tid\":%zu,\"ts\":",
                   std::string(span_name(s.kind)).c_str(),
                   s.kind == SpanKind::park ? "park" : "task", track.pid, track.tid);
        out.put_us(s.begin_ns);
        out.put(",\"dur\":");
        out.put_us(s.end_ns - s.begin_ns);
        if (s.victim >= 0)
          out.printf(",\"args\":{\"victim\":%lld}", static_cast<long long>(s.victim));
        out.put("}");
      }
      for (const Record& r : t.events) {
        if (r.event != Event::steal && r.event != Event::steal_failed) continue;
        next();
        out.printf(
            "{\"ph\":\"i\",\"s\":\"t\",\"name\":\"%s\",\"cat\":\"steal\",\"pid\":%zu,"
            "\"tid\":%zu,\"ts\":",
            r.event == Event::steal ? "steal" : "steal failed", track.pid, track.tid);
        out.put_us(r.ns);
        out.printf(",\"args\":{\"victim\":%u}}", r.arg);
      }
    }
    out.put("\n]}\n");
    out.close();
  }

  // The timeline's data for harness/trace/timeline.gp, as two gnuplot data blocks separated by two
  // blank lines. Block 0, one line per track: row, "label", window from_us, to_us. Block 1, one
  // line per span:
  // row, begin_us, end_us, kind (0 local, 1 global queue, 2 stolen, 3 parked).
  void write_timeline_csv(const std::string& path, const TimelineOptions& window = {}) const {
    const std::vector<ThreadTrace> traces = threads();
    const std::map<const void*, std::size_t> pool_rank = rank_pools(traces);
    const std::uint64_t from = window.from_ns;
    const std::uint64_t to =
        window.to_ns == 0 ? duration_ns() : std::min(window.to_ns, duration_ns());
    if (to <= from) {
      throw std::invalid_argument("wslab trace: the timeline window is empty (from_ns >= to_ns)");
    }
    const std::uint64_t pixel_ns =
        std::max<std::uint64_t>(1, (to - from) / std::max(1u, window.width_px));
    OutputFile out(path);
    out.printf("# wslab timeline: %s; window %llu..%llu ns of %llu ns; %llu events dropped\n",
               options_.label.c_str(), ull(from), ull(to), ull(duration_ns()),
               ull(count_dropped(traces)));
    const std::size_t rows = traces.size();
    if (rows == 0) throw std::invalid_argument("wslab trace: no thread recorded anything to draw");
    // The window's bounds ride on every row line, so the picture spans the window even where
    // nothing happened in it.
    out.put("# row label from_us to_us\n");
    // Row 0 at the top: the first track gets the highest y.
    for (std::size_t i = 0; i < rows; ++i) {
      const Track track = track_of(traces[i], pool_rank);
      const std::string label = pool_rank.size() > 1 && track.pid != kOutsidePid
                                    ? "pool " + std::to_string(track.pid) + " " + track.name
                                    : track.name;
      out.printf("%zu \"%s\" %.3f %.3f\n", rows - 1 - i, label.c_str(),
                 static_cast<double>(from) / 1e3, static_cast<double>(to) / 1e3);
    }
    out.put("\n\n# row begin_us end_us kind\n");
    for (std::size_t i = 0; i < rows; ++i) {
      const std::vector<Span> spans = spans_of(traces[i].events, duration_ns());
      for (const TimelineBox& box : timeline_boxes(spans, from, to, pixel_ns)) {
        out.printf("%zu %.3f %.3f %d\n", rows - 1 - i, static_cast<double>(box.begin_ns) / 1e3,
                   static_cast<double>(box.end_ns) / 1e3, static_cast<int>(box.kind));
      }
    }
    out.close();
  }

 private:
  static constexpr std::size_t kOutsidePid = 1000;

  struct Track {
    std::size_t pid;
    std::size_t tid;
    std::string name;
  };

  static unsigned long long ull(std::uint64_t v) { return static_cast<unsigned long long>(v); }

  static std::map<const void*, std::size_t> rank_pools(const std::vector<ThreadTrace>& traces) {
    // Pools are numbered 1, 2, ... in the order their first worker registered, which is the
    // order of logs_ (registration order); threads() keeps that order among pools when sorting.
    std::map<const void*, std::size_t> rank;
    for (const ThreadTrace& t : traces) {
      if (t.pool != nullptr && !rank.count(t.pool)) rank.emplace(t.pool, rank.size() + 1);
    }
    return rank;
  }
  static std::tuple<std::size_t, std::size_t> track_order(
      const ThreadTrace& t, const std::map<const void*, std::size_t>& rank) {
    if (t.pool == nullptr) return {kOutsidePid, t.outside_ordinal};
    return {rank.at(t.pool), t.worker_index};
  }
  static Track track_of(const ThreadTrace& t, const std::map<const void*, std::size_t>& rank) {
    // tid 0 means "the idle task" to some Linux-trace readers, so tracks count from 1.
    if (t.pool == nullptr) {
      return {kOutsidePid, t.outside_ordinal + 1,
              "outside thread " + std::to_string(t.outside_ordinal)};
    }
    return {rank.at(t.pool), t.worker_index + 1, "worker " + std::to_string(t.worker_index)};
  }
  static std::uint64_t count_events(const std::vector<ThreadTrace>& traces) {
    std::uint64_t n = 0;
    for (const ThreadTrace& t : traces)
      n += t.events.size();
    return n;
  }
  std::uint64_t count_dropped(const std::vector<ThreadTrace>& traces) const {
    std::uint64_t n = unbuffered_;
    for (const ThreadTrace& t : traces)
      n += t.dropped;
    return n;
  }

  void require_stopped(const char* what) const {
    if (running_) {
      throw std::logic_error(std::string("wslab trace: ") + what +
                             " needs a stopped recorder; call stop() first");
    }
  }

  // A file written with stdio (an exported trace has hundreds of thousands of lines); any write
  // error, including one found at close, becomes an exception naming the file.
  class OutputFile {
   public:
    explicit OutputFile(const std::string& path)
        : path_(path), file_(std::fopen(path.c_str(), "w")) {
      if (file_ == nullptr) fail("cannot open");
    }
    OutputFile(const OutputFile&) = delete;
    OutputFile& operator=(const OutputFile&) = delete;
    ~OutputFile() {
      if (file_ != nullptr) std::fclose(file_);
    }
    void put(std::string_view s) {
      if (std::fwrite(s.data(), 1, s.size(), file_) != s.size()) fail("cannot write");
    }
    template <class... Args>
    void printf(const char* format, Args... args) {
      if (std::fprintf(file_, format, args...) < 0) fail("cannot write");
    }
    // Microseconds with exactly three decimals, from integer nanoseconds (no rounding drift).
    void put_us(std::uint64_t ns) { printf("%llu.%03llu", ull(ns / 1000), ull(ns % 1000)); }
    void put_escaped(std::string_view s) {
      std::string escaped;
      for (const char c : s) {
        if (c == '"' || c == '\\') {
          escaped += '\\';
          escaped += c;
        } else if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
          escaped += buf;
        } else {
          escaped += c;
        }
      }
      put(escaped);
    }
    void close() {
      std::FILE* f = std::exchange(file_, nullptr);
      if (std::fclose(f) != 0) fail("cannot finish writing");
    }

   private:
    [[noreturn]] void fail(const char* what) const {
      throw std::runtime_error(std::string("wslab trace: ") + what + " " + path_ + ": " +
                               std::strerror(errno));
    }
    std::string path_;
    std::FILE* file_;
  };

  RecorderOptions options_;
  std::vector<std::shared_ptr<ThreadLog>> logs_;  // appended to under the registry's mutex
  std::uint64_t start_ns_ = 0;
  std::uint64_t stop_ns_ = 0;
  std::uint64_t unbuffered_ = 0;  // events of threads that got no log (out of memory)
  bool running_ = false;
};

// Where timeline.gp lives: next to this header (override for an installed copy).
inline std::string default_timeline_script() {
  return (std::filesystem::path(__FILE__).parent_path() / "timeline.gp").string();
}

// Renders a timeline written by write_timeline_csv() as a PNG with gnuplot: one row per worker,
// tasks coloured by where they came from, parks in grey. Throws std::runtime_error when gnuplot
// cannot be run or fails.
inline void render_timeline(const std::string& csv_path, const std::string& png_path,
                            const std::string& title = "",
                            const std::string& script = default_timeline_script()) {
  // gnuplot single-quoted strings: a quote is written twice.
  auto quoted = [](const std::string& s) {
    std::string q = "'";
    for (const char c : s)
      q += c == '\'' ? std::string("''") : std::string(1, c);
    return q + "'";
  };
  std::string settings = "datafile=" + quoted(csv_path) + "; outfile=" + quoted(png_path);
  if (!title.empty()) settings += "; plottitle=" + quoted(title);
  std::string program = "gnuplot";
  std::string dash_e = "-e";
  std::string script_copy = script;
  char* argv[] = {program.data(), dash_e.data(), settings.data(), script_copy.data(), nullptr};
  pid_t child = 0;
  // posix_spawnp, not system(): no shell, so paths and titles need no shell quoting.
  if (const int err = posix_spawnp(&child, "gnuplot", nullptr, nullptr, argv, environ); err != 0) {
    throw std::runtime_error(std::string("wslab trace: cannot run gnuplot (apt-get install "
                                         "gnuplot-nox): ") +
                             std::strerror(err));
  }
  int status = 0;
  while (waitpid(child, &status, 0) < 0) {
    if (errno != EINTR) throw std::runtime_error("wslab trace: lost the gnuplot process");
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    throw std::runtime_error("wslab trace: gnuplot failed to render " + png_path + " from " +
                             csv_path);
  }
}

}  // namespace wslab::trace
