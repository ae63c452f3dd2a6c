// A small stateless model checker for C++ atomics: it runs a test of a few threads again and
// again, each time choosing differently which thread takes the next atomic step and which store
// each load reads among those the C++ memory model allows, and reports a failed check or a
// deadlock with the execution that led to it. model_atomics.hpp has the atomic<T>, the fences and
// the futex epoch that the code under test uses (through its atomics policy); this file is the
// memory model and the explorer.
//
// How it explores. Each model thread is a fiber (ucontext); only one runs at a time, and every
// atomic operation first hands control back to the explorer, which picks the thread that performs
// the next one. Loads pick the store they read. Every pick is a numbered choice; a run records
// the choices it made, and the next run replays them up to the last one that has an untried
// alternative, takes that alternative, and continues with first alternatives (a depth-first
// search over executions, each re-run from scratch). The search is exhaustive within two bounds:
// the number of preemptions (switching away from a thread that could go on) and the number of
// steps in one execution; Options::random_executions then samples executions past them, from a
// seed.
//
// The memory model, operationally (in the style of the view-based models of C11: Kaiser et al.,
// "Strong Logic for Weak Memory", ECOOP 2017; Kang et al., "A Promising Semantics for
// Relaxed-Memory Concurrency", POPL 2017). The modification order of a location is the order in
// which its stores execute; a read-modify-write reads the last one (atomicity). Every thread has
// a view: per location, the oldest store it may still read (coherence: once a thread has seen a
// store it never reads an older one). A store carries a message: the view a thread acquires from
// it. A release store carries its thread's view; a relaxed store the view at the thread's last
// release fence; an RMW also passes on the message of the store it read (C++20 release
// sequences). An acquire load takes the message in; a relaxed load keeps it for a later acquire
// fence. The single order S of seq_cst operations and fences is their execution order: a
// seq_cst fence takes in the view of the previous one and passes its own on; a seq_cst access
// reads nothing older than what earlier seq_cst accesses and fences pinned for its location
// (Explorer::sc_before). Views also carry a vector clock of events, for load buffering below.
//
// Load buffering (a load reading a store that executes later). A relaxed load may read a store
// that a later step of another thread performs, when nothing orders the load before that store:
// the reorderings of ARM and POWER in which a load completes after a later store. Loads that
// read from later stores are found by speculation: after a complete execution with none, every
// relaxed load gets as new alternatives the values that later stores of other threads wrote to
// its location, each tied to that very store (thread, step); a run that takes one returns the
// value at once and is kept only if the same store writes the same value and the load does not
// happen before it. Until then, a thread that knows of the load (through any synchronisation or
// a seq_cst fence) may not touch that location, nor may the reader itself, nor may it cross an
// acquire fence; a run that breaks any of these, or ends with the promise unkept, is discarded.
// At most one such load per execution (Options::speculation_bound 1; 0 turns it off).
//
// What it does not produce (so it may miss a bug, never report one the C++20 model forbids):
//   * Out-of-thin-air values: a speculated value was written by that store in an execution
//     without speculation, so no value appears from nowhere. (The store's value could still
//     depend on the speculating load through a chain the checker does not see; the structures
//     checked here store values that do not depend on what their readers read.)
//   * Stores placed in modification order before stores that executed earlier: the outcome of
//     2+2W with relaxed or release/acquire stores (allowed by C++) is not produced.
//   * S is the execution order, so S never runs against it: an execution whose only consistent S
//     would order two seq_cst operations against the order they executed in is not produced.
//   * memory_order_consume is treated as acquire (as compilers do); compare_exchange_weak never
//     fails spuriously; a futex wait returns only when woken (no spurious wake-ups) and the
//     wake-up synchronises waker and waiter (as the kernel's lock does).
//   * Speculation: only plain relaxed loads (never RMWs, failed CASes, or acquire loads), and
//     only during the exhaustive search.
// Every reported execution is a consistent C++20 execution (up to that one dependency caveat),
// which is what a counterexample needs. tests/model_check/litmus_test.cpp checks the model
// against the classic litmus tests, with the source of each expected outcome.
//
// Use: the code under test takes its atomics as a policy (StdAtomics in common/std_atomics.hpp;
// ModelAtomics here), and a test is a function run as model thread 0:
//   model::Result r = model::explore(options, [] {
//     Deque<int, model::ModelAtomics> d;                 // created anew in every execution
//     int a = model::spawn([&] { ... }), b = model::spawn([&] { ... });
//     model::join(a), model::join(b);
//     model::check(property, "what went wrong");        // the first failure stops the search
//   });
// It must be deterministic: the same choices must lead to the same steps (no clocks, no
// randomness, no real threads). r.message and r.trace describe the failure. A model thread's
// objects live on its fiber's stack: an execution the checker abandons (a speculation not kept,
// a step bound) never unwinds them, so what they own on the heap leaks, a few bytes per such
// execution.
#pragma once

#include <ucontext.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace wslab::model {

inline constexpr int kMaxThreads = 8;
inline constexpr int kMaxLocations = 64;

// Which accesses a weakening applies to.
enum class Access { load, store, rmw, fence, any };

// Rewrites the ordering of the accesses of one kind made in a function of that name (as the
// compiler spells it: "steal", "push"): the shipped code runs unchanged, with one ordering
// weakened, so the checker can show that ordering matters. For a fence, `relaxed` removes it.
struct Weakening {
  const char* function;
  Access access;
  std::memory_order order;
};

struct Options {
  int preemption_bound = 2;
  int max_steps = 300;        // atomic steps in one execution; longer ones are cut off and counted
  int speculation_bound = 1;  // loads reading a later store per execution: 0 or 1
  std::uint64_t max_executions = 5'000'000;
  std::uint64_t random_executions = 0;  // after the exhaustive search, past its bounds
  std::uint64_t seed = 1;
  std::vector<Weakening> weaken;
  // Names for the locations in the order they are created (the rest are L<n>), for the trace.
  std::vector<std::string> location_names;
};

struct Result {
  bool failed = false;
  std::string message;  // the failed check or the deadlock
  std::string trace;    // the execution that led to it
  std::uint64_t executions = 0;
  std::uint64_t discarded = 0;     // speculations that were not kept
  std::uint64_t step_bounded = 0;  // executions cut off by max_steps
  bool exhaustive = false;         // the search within the bounds finished
  double seconds = 0;
  std::set<std::string> outcomes;  // what observe() recorded, one entry per distinct execution

  std::string summary() const {
    char buf[256];
    std::snprintf(buf, sizeof buf,
                  "%s after %llu executions (%s, %llu cut off by the step bound)"
                  " in %.2f s",
                  failed ? "FAILED" : "no failure", static_cast<unsigned long long>(executions),
                  exhaustive ? "exhaustive within the bounds" : "not exhaustive",
                  static_cast<unsigned long long>(step_bounded), seconds);
    return buf;
  }
};

namespace detail {

using Bits = std::uint64_t;

struct Clock {
  std::array<std::uint32_t, kMaxThreads> at{};
  void join(const Clock& o) noexcept {
    for (int i = 0; i < kMaxThreads; ++i)
      at[i] = std::max(at[i], o.at[i]);
  }
  bool knows(int thread, std::uint32_t event) const noexcept { return at[thread] >= event; }
};

// What a thread has seen, or what a message passes on: per location the index (in its
// modification order) of the oldest store still readable, and the events before this point.
struct Knowledge {
  std::array<std::uint16_t, kMaxLocations> view{};
  Clock clock;
  void join(const Knowledge& o) noexcept {
    for (int i = 0; i < kMaxLocations; ++i)
      view[i] = std::max(view[i], o.view[i]);
    clock.join(o.clock);
  }
  void see(int loc, std::uint32_t index) noexcept {
    view[loc] = std::max<std::uint16_t>(view[loc], static_cast<std::uint16_t>(index));
  }
};

struct Store {
  Bits value;
  int thread;  // -1: the initial value
  std::uint32_t event;
  Knowledge message;
  Clock writer;  // what the writer knew when it stored
};

struct Location {
  std::vector<Store> history;  // modification order
  const char* function;
  int line;
  std::deque<int> waiters;  // futex
};

enum class Op : std::uint8_t { load, store, rmw, cas_ok, cas_fail, fence, wait, wake, woken };

struct Event {
  int thread;
  std::uint32_t index;
  Op op;
  const char* what;
  const char* function;
  int line;
  std::memory_order order;
  int loc;
  Bits read;
  Bits written;
  int from_thread;
  std::uint32_t from_event;
  bool speculated;
};

enum class Status { runnable, blocked_join, blocked_futex, finished };

struct Thread {
  ucontext_t context;
  std::function<void()> body;
  Status status = Status::runnable;
  bool started = false;
  int join_target = -1;
  std::uint32_t events = 0;
  Knowledge now;      // the thread's view and clock
  Knowledge acquire;  // messages of relaxed loads, for a later acquire fence
  Knowledge release;  // the view at the last release fence, for relaxed stores
  std::unique_ptr<char[]> stack;
};

struct Spec {  // a speculated read: the value a later store writes
  Bits value;
  int writer;
  std::uint32_t write_event;
};

struct Choice {
  std::uint32_t base;  // alternatives of this run's kind (threads, or stores to read)
  std::uint32_t chosen;
  std::vector<Spec> specs;  // more alternatives for a relaxed load, from later executions
  std::uint32_t total() const { return base + static_cast<std::uint32_t>(specs.size()); }
};

struct Promise {
  int reader;
  std::uint32_t read_event;
  int loc;
  Spec spec;
  bool kept = false;
  std::uint32_t index = 0;  // of the store that kept it
};

struct ReadRecord {  // a relaxed load that later executions may speculate on
  std::size_t entry;
  int thread;
  std::uint32_t event;
  int loc;
  std::size_t history_size;
};

inline bool is_acquire(std::memory_order o) {
  return o == std::memory_order_acquire || o == std::memory_order_acq_rel ||
         o == std::memory_order_seq_cst || o == std::memory_order_consume;
}
inline bool is_release(std::memory_order o) {
  return o == std::memory_order_release || o == std::memory_order_acq_rel ||
         o == std::memory_order_seq_cst;
}
inline const char* order_name(std::memory_order o) {
  switch (o) {
    case std::memory_order_relaxed:
      return "relaxed";
    case std::memory_order_consume:
      return "consume";
    case std::memory_order_acquire:
      return "acquire";
    case std::memory_order_release:
      return "release";
    case std::memory_order_acq_rel:
      return "acq_rel";
    default:
      return "seq_cst";
  }
}

class Explorer;
inline Explorer*& current_explorer() {
  static Explorer* explorer = nullptr;
  return explorer;
}

class Explorer {
 public:
  explicit Explorer(Options options) : options_(std::move(options)), rng_(options_.seed) {}

  Result run(std::function<void()> test) {
    test_ = std::move(test);
    current_explorer() = this;
    const auto start = std::chrono::steady_clock::now();
    // The exhaustive search.
    for (;;) {
      execute();
      if (result_.failed || fatal_) break;
      if (result_.executions >= options_.max_executions) break;
      if (!backtrack()) {
        result_.exhaustive = true;
        break;
      }
    }
    // Random executions past the bounds.
    random_ = true;
    for (std::uint64_t i = 0; i < options_.random_executions && !result_.failed && !fatal_; ++i)
      execute();
    current_explorer() = nullptr;
    result_.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return std::move(result_);
  }

  // ---- called by the model atomics, in a model thread ----

  int create(Bits value, const char* function, int line) {
    if (locations_used_ == kMaxLocations) fail_fatal("more locations than kMaxLocations");
    if (locations_used_ == locations_.size()) locations_.emplace_back();
    Location& l = locations_[locations_used_];
    l.history.clear();
    l.waiters.clear();
    l.function = function;
    l.line = line;
    const int loc = static_cast<int>(locations_used_++);
    Thread& t = me();
    // The initialisation is a plain write: it happens before what follows it in this thread.
    l.history.push_back(Store{value, -1, 0, t.now, t.now.clock});
    t.now.see(loc, 0);
    return loc;
  }

  Bits load(int loc, std::memory_order order, const char* fn, int line) {
    order = weakened(Access::load, fn, order);
    step();
    Thread& t = me();
    if (order == std::memory_order_seq_cst) sc_before(loc);
    touch(loc);
    Location& l = locations_[loc];
    const std::uint32_t oldest = t.now.view[loc];
    const auto n = static_cast<std::uint32_t>(l.history.size() - oldest);
    const bool speculable =
        order == std::memory_order_relaxed && !random_ && options_.speculation_bound > 0;
    const std::size_t entry = stack_pos_;
    const std::uint32_t alt = choose(n, speculable);
    if (alt >= n) {  // a speculated read from a later store
      const Spec spec = stack_[entry].specs[alt - n];
      promises_.push_back(Promise{me_, t.events, loc, spec});
      ++speculations_;
      record(Event{me_, t.events, Op::load, "load", fn, line, order, loc, spec.value, 0,
                   spec.writer, spec.write_event, true});
      return spec.value;
    }
    if (speculable && !random_)
      reads_.push_back(ReadRecord{entry, me_, t.events, loc, l.history.size()});
    const std::uint32_t index = static_cast<std::uint32_t>(l.history.size()) - 1 - alt;
    read_from(loc, index, order);
    const Store& s = l.history[index];
    record(Event{me_, t.events, Op::load, "load", fn, line, order, loc, s.value, 0, s.thread,
                 s.event, false});
    if (order == std::memory_order_seq_cst) sc_after(loc);
    return s.value;
  }

  void store(int loc, Bits value, std::memory_order order, const char* fn, int line) {
    order = weakened(Access::store, fn, order);
    step();
    Thread& t = me();
    if (order == std::memory_order_seq_cst) sc_before(loc);
    touch(loc);
    write(loc, value, order, nullptr);
    record(Event{me_, t.events, Op::store, "store", fn, line, order, loc, 0, value, -1, 0, false});
    if (order == std::memory_order_seq_cst) sc_after(loc);
  }

  // A read-modify-write that always succeeds: reads the last store, writes f(old).
  template <class F>
  Bits rmw(int loc, F&& f, std::memory_order order, const char* what, const char* fn, int line) {
    order = weakened(Access::rmw, fn, order);
    step();
    Thread& t = me();
    if (order == std::memory_order_seq_cst) sc_before(loc);
    touch(loc);
    Location& l = locations_[loc];
    const auto index = static_cast<std::uint32_t>(l.history.size() - 1);
    const Store read = l.history[index];
    read_from(loc, index, order);
    const Bits written = f(read.value);
    write(loc, written, order, &read.message);
    record(Event{me_, t.events, Op::rmw, what, fn, line, order, loc, read.value, written,
                 read.thread, read.event, false});
    if (order == std::memory_order_seq_cst) sc_after(loc);
    return read.value;
  }

  // compare_exchange: succeeds by reading the last store if it holds `expected`, or fails by
  // reading any readable store that does not.
  bool cas(int loc, Bits& expected, Bits desired, std::memory_order success,
           std::memory_order failure, const char* what, const char* fn, int line) {
    success = weakened(Access::rmw, fn, success);
    failure = weakened(Access::rmw, fn, failure);
    if (!is_acquire(success) && is_acquire(failure)) failure = std::memory_order_relaxed;
    step();
    Thread& t = me();
    if (success == std::memory_order_seq_cst || failure == std::memory_order_seq_cst)
      sc_before(loc);
    touch(loc);
    Location& l = locations_[loc];
    const auto last = static_cast<std::uint32_t>(l.history.size() - 1);
    std::uint32_t failing[kMaxSteps];
    std::uint32_t n_failing = 0;
    for (std::uint32_t i = last + 1; i-- > t.now.view[loc];)
      if (l.history[i].value != expected && n_failing < kMaxSteps) failing[n_failing++] = i;
    const bool can_succeed = l.history[last].value == expected;
    const std::uint32_t alt = choose(n_failing + (can_succeed ? 1 : 0), false);
    if (can_succeed && alt == 0) {
      const Store read = l.history[last];
      read_from(loc, last, success);
      write(loc, desired, success, &read.message);
      record(Event{me_, t.events, Op::cas_ok, what, fn, line, success, loc, read.value, desired,
                   read.thread, read.event, false});
      if (success == std::memory_order_seq_cst) sc_after(loc);
      return true;
    }
    const std::uint32_t index = failing[alt - (can_succeed ? 1 : 0)];
    read_from(loc, index, failure);
    const Store& s = l.history[index];
    expected = s.value;
    record(Event{me_, t.events, Op::cas_fail, what, fn, line, failure, loc, s.value, 0, s.thread,
                 s.event, false});
    if (failure == std::memory_order_seq_cst) sc_after(loc);
    return false;
  }

  void fence(std::memory_order order, const char* fn, int line) {
    order = weakened(Access::fence, fn, order);
    if (order == std::memory_order_relaxed) return;  // weakened away
    step();
    Thread& t = me();
    if (is_acquire(order)) {
      for (const Promise& p : promises_)
        if (!p.kept && p.reader == me_) return discard();  // its message is not known yet
      absorb(t.now, t.acquire);
    }
    if (order == std::memory_order_seq_cst) {
      absorb(t.now, sc_);
      for (int i = 0; i < kMaxLocations; ++i)
        t.now.see(i, sc_floor_[static_cast<std::size_t>(i)]);
      sc_ = t.now;
    }
    if (is_release(order)) t.release = t.now;
    record(Event{me_, t.events, Op::fence, "fence", fn, line, order, -1, 0, 0, -1, 0, false});
  }

  // The futex: wait blocks while the location's last store equals `expected` (the kernel reads
  // it under the lock that wake takes); wake unblocks up to `count` waiters.
  void futex_wait(int loc, Bits expected, const char* fn, int line) {
    step();
    Thread& t = me();
    touch(loc);
    Location& l = locations_[loc];
    const Store& last = l.history.back();
    if (last.value != expected) {
      record(Event{me_, t.events, Op::wait, "futex_wait (no sleep)", fn, line,
                   std::memory_order_relaxed, loc, last.value, 0, last.thread, last.event, false});
      return;
    }
    record(Event{me_, t.events, Op::wait, "futex_wait (sleeps)", fn, line,
                 std::memory_order_relaxed, loc, last.value, 0, last.thread, last.event, false});
    l.waiters.push_back(me_);
    t.status = Status::blocked_futex;
    yield();
  }

  void futex_wake(int loc, int count, const char* fn, int line) {
    step();
    Thread& t = me();
    Location& l = locations_[loc];
    int woken = 0;
    while (woken < count && !l.waiters.empty()) {
      Thread& w = threads_[static_cast<std::size_t>(l.waiters.front())];
      l.waiters.pop_front();
      w.status = Status::runnable;
      absorb(w.now, t.now);
      ++woken;
    }
    record(Event{me_, t.events, Op::wake, "futex_wake", fn, line, std::memory_order_relaxed, loc, 0,
                 static_cast<Bits>(woken), -1, 0, false});
  }

  // ---- called by the test ----

  int spawn(std::function<void()> body) {
    if (threads_used_ == kMaxThreads) fail_fatal("more threads than kMaxThreads");
    Thread& parent = me();
    ++parent.events;
    parent.now.clock.at[me_] = parent.events;
    if (threads_used_ == threads_.size()) threads_.emplace_back();
    Thread& child = threads_[threads_used_];
    reset_thread(child, std::move(body));
    child.now = parent.now;
    return static_cast<int>(threads_used_++);
  }

  void join(int thread) {
    Thread& t = me();
    if (threads_[static_cast<std::size_t>(thread)].status != Status::finished) {
      t.status = Status::blocked_join;
      t.join_target = thread;
      yield();
    }
    absorb(t.now, threads_[static_cast<std::size_t>(thread)].now);
  }

  void check(bool ok, const std::string& what) {
    if (ok || failed_check_) return;
    failed_check_ = true;
    check_message_ = "check failed in T";
    check_message_ += std::to_string(me_);
    check_message_ += ": ";
    check_message_ += what;
  }

  void observe(const std::string& s) { outcome_ += s; }

  static constexpr std::uint32_t kMaxSteps = 4096;

 private:
  Thread& me() { return threads_[static_cast<std::size_t>(me_)]; }

  void fail_fatal(const char* what) {
    std::fprintf(stderr, "model checker: %s\n", what);
    std::abort();
  }

  std::memory_order weakened(Access access, const char* fn, std::memory_order order) const {
    for (const Weakening& w : options_.weaken)
      if ((w.access == access || w.access == Access::any) && std::strcmp(w.function, fn) == 0)
        return w.order;
    return order;
  }

  // Every atomic step: the explorer picks who performs it.
  void step() {
    yield();
    Thread& t = me();
    ++t.events;
    t.now.clock.at[me_] = t.events;
  }

  void yield() { swapcontext(&me().context, &scheduler_); }

  void record(const Event& e) { events_.push_back(e); }

  // seq_cst accesses, with S the order in which they execute (C++20 [atomics.order] p4). One
  // on `loc` reads no store older than what an earlier seq_cst access of `loc` read or wrote
  // (4.1), nor older than a store that happens before an earlier seq_cst fence (4.2, through
  // the fences' view); a seq_cst fence takes in these floors for every location (4.3). Nothing
  // else: a seq_cst access is not a fence for other locations.
  void sc_before(int loc) {
    Thread& t = me();
    t.now.see(loc, std::max(sc_floor_[static_cast<std::size_t>(loc)],
                            sc_.view[static_cast<std::size_t>(loc)]));
  }
  void sc_after(int loc) {
    std::uint16_t& floor = sc_floor_[static_cast<std::size_t>(loc)];
    floor = std::max(floor, me().now.view[static_cast<std::size_t>(loc)]);
  }

  void absorb(Knowledge& into, const Knowledge& from) {
    into.join(from);
    for (const Promise& p : promises_)
      if (p.kept && into.clock.knows(p.reader, p.read_event)) into.see(p.loc, p.index);
  }

  void read_from(int loc, std::uint32_t index, std::memory_order order) {
    Thread& t = me();
    const Store& s = locations_[loc].history[index];
    t.now.see(loc, index);
    if (is_acquire(order))
      absorb(t.now, s.message);
    else
      t.acquire.join(s.message);
  }

  void write(int loc, Bits value, std::memory_order order, const Knowledge* rmw_read) {
    Thread& t = me();
    Location& l = locations_[loc];
    const auto index = static_cast<std::uint32_t>(l.history.size());
    t.now.see(loc, index);
    Knowledge message = is_release(order) ? t.now : t.release;
    message.see(loc, index);
    if (rmw_read != nullptr) message.join(*rmw_read);  // release sequence
    l.history.push_back(Store{value, me_, t.events, message, t.now.clock});
    for (Promise& p : promises_) {
      if (p.kept || p.spec.writer != me_ || p.spec.write_event != t.events) continue;
      if (p.loc != loc || p.spec.value != value) return discard();
      keep(p, index);
    }
  }

  void keep(Promise& p, std::uint32_t index) {
    p.kept = true;
    p.index = index;
    const Store& s = locations_[p.loc].history[index];
    for (std::size_t i = 0; i < threads_used_; ++i) {
      Thread& t = threads_[i];
      for (Knowledge* k : {&t.now, &t.acquire, &t.release})
        if (k->clock.knows(p.reader, p.read_event)) k->see(p.loc, index);
    }
    if (sc_.clock.knows(p.reader, p.read_event)) sc_.see(p.loc, index);
    threads_[static_cast<std::size_t>(p.reader)].acquire.join(s.message);
  }

  // An access to `loc` by a thread that knows of a speculated load of it that is not yet kept
  // would break coherence or order the load before its own store: not an execution.
  void touch(int loc) {
    for (const Promise& p : promises_)
      if (!p.kept && p.loc == loc && me().now.clock.knows(p.reader, p.read_event)) return discard();
  }

  // Abandons the current execution: the thread never runs again.
  void discard() {
    discarded_ = true;
    me().status = Status::blocked_futex;  // never resumed
    swapcontext(&me().context, &scheduler_);
    fail_fatal("a discarded execution resumed");
  }

  std::uint32_t choose(std::uint32_t n, bool speculable) {
    if (random_) {
      if (n <= 1) return 0;
      return static_cast<std::uint32_t>(
          std::uniform_int_distribution<std::uint32_t>(0, n - 1)(rng_));
    }
    if (n <= 1 && !speculable) return 0;
    if (stack_pos_ < stack_.size()) {
      Choice& c = stack_[stack_pos_++];
      if (c.base != n) {
        std::fprintf(stderr,
                     "model checker: the test is not deterministic (a choice had %u "
                     "alternatives, now %u)\n",
                     c.base, n);
        std::abort();
      }
      return c.chosen;
    }
    stack_.push_back(Choice{n, 0, {}});
    ++stack_pos_;
    return 0;
  }

  bool backtrack() {
    while (!stack_.empty() && stack_.back().chosen + 1 >= stack_.back().total())
      stack_.pop_back();
    if (stack_.empty()) return false;
    ++stack_.back().chosen;
    return true;
  }

  void reset_thread(Thread& t, std::function<void()> body) {
    t.body = std::move(body);
    t.status = Status::runnable;
    t.started = false;
    t.join_target = -1;
    t.events = 0;
    t.now = t.acquire = t.release = Knowledge{};
    if (!t.stack) t.stack.reset(new char[kStackSize]);
  }

  static void entry() {
    Explorer& e = *current_explorer();
    Thread& t = e.me();
    try {
      t.body();
    } catch (const std::exception& x) {
      e.check(false, std::string("exception: ") + x.what());
    } catch (...) {
      e.check(false, "an exception");
    }
    t.status = Status::finished;
    swapcontext(&t.context, &e.scheduler_);
  }

  bool enabled(const Thread& t) const {
    if (t.status == Status::runnable) return t.started;
    if (t.status == Status::blocked_join)
      return threads_[static_cast<std::size_t>(t.join_target)].status == Status::finished;
    return false;
  }

  void start(int id) {
    Thread& t = threads_[static_cast<std::size_t>(id)];
    t.started = true;
    getcontext(&t.context);
    t.context.uc_stack.ss_sp = t.stack.get();
    t.context.uc_stack.ss_size = kStackSize;
    t.context.uc_link = nullptr;
    makecontext(&t.context, &Explorer::entry, 0);
    resume(id);
  }

  void resume(int id) {
    me_ = id;
    Thread& t = threads_[static_cast<std::size_t>(id)];
    if (t.status == Status::blocked_join) t.status = Status::runnable;
    swapcontext(&scheduler_, &t.context);
  }

  void execute() {
    ++result_.executions;
    stack_pos_ = 0;
    threads_used_ = 0;
    locations_used_ = 0;
    promises_.clear();
    reads_.clear();
    events_.clear();
    speculations_ = 0;
    preemptions_ = 0;
    discarded_ = false;
    failed_check_ = false;
    check_message_.clear();
    outcome_.clear();
    sc_ = Knowledge{};
    sc_floor_ = {};
    threads_.resize(std::max<std::size_t>(threads_.size(), 1));
    reset_thread(threads_[0], test_);
    threads_used_ = 1;
    int last = -1;
    int steps = 0;
    bool cut_off = false;
    std::string deadlock;
    for (;;) {
      // A new thread runs its local code up to its first atomic step: nothing to choose.
      for (std::size_t i = 0; i < threads_used_ && !discarded_; ++i)
        if (!threads_[i].started) start(static_cast<int>(i));
      if (discarded_) break;
      int candidates[kMaxThreads];
      int n = 0;
      const bool last_enabled = last >= 0 && enabled(threads_[static_cast<std::size_t>(last)]);
      if (last_enabled) candidates[n++] = last;
      if (!last_enabled || random_ || preemptions_ < options_.preemption_bound)
        for (std::size_t i = 0; i < threads_used_; ++i)
          if (static_cast<int>(i) != last && enabled(threads_[i]))
            candidates[n++] = static_cast<int>(i);
      if (n == 0) {
        for (std::size_t i = 0; i < threads_used_; ++i)
          if (threads_[i].status != Status::finished)
            deadlock += describe_blocked(static_cast<int>(i));
        break;
      }
      if (++steps > options_.max_steps) {
        cut_off = true;
        break;
      }
      const int pick = candidates[choose(static_cast<std::uint32_t>(n), false)];
      if (last_enabled && pick != last) ++preemptions_;
      last = pick;
      resume(pick);
      if (discarded_) break;
    }
    for (const Promise& p : promises_)
      if (!p.kept) discarded_ = true;
    if (discarded_) {
      ++result_.discarded;
      return;
    }
    if (cut_off) ++result_.step_bounded;
    if (!deadlock.empty() || failed_check_) {
      result_.failed = true;
      result_.message = failed_check_ ? check_message_ : "deadlock:\n" + deadlock;
      result_.trace = format_trace();
      return;
    }
    if (!cut_off) result_.outcomes.insert(outcome_);
    if (speculations_ == 0 && !cut_off) add_speculations();
  }

  // After an execution without speculation: each relaxed load may read what a later store of
  // another thread wrote to its location, unless it knew of the load (then the load happens
  // before it).
  void add_speculations() {
    for (const ReadRecord& r : reads_) {
      const Location& l = locations_[r.loc];
      for (std::size_t i = r.history_size; i < l.history.size(); ++i) {
        const Store& s = l.history[i];
        if (s.thread == r.thread || s.writer.knows(r.thread, r.event)) continue;
        std::vector<Spec>& specs = stack_[r.entry].specs;
        const bool seen = std::any_of(specs.begin(), specs.end(),
                                      [&](const Spec& x) { return x.value == s.value; });
        if (!seen) specs.push_back(Spec{s.value, s.thread, s.event});
      }
    }
  }

  std::string describe_blocked(int id) const {
    const Thread& t = threads_[static_cast<std::size_t>(id)];
    std::string s = "  T" + std::to_string(id);
    if (t.status == Status::blocked_futex) {
      s += " sleeps in a futex wait";
      for (auto it = events_.rbegin(); it != events_.rend(); ++it)
        if (it->thread == id && it->op == Op::wait) {
          s += std::string(" (") + it->function + ":" + std::to_string(it->line) + ")";
          break;
        }
    } else if (t.status == Status::blocked_join) {
      s += " joins T" + std::to_string(t.join_target);
    } else {
      s += " is runnable but preempted past the bound";
    }
    return s + "\n";
  }

  std::string loc_name(int loc) const {
    if (loc < 0) return "";
    if (static_cast<std::size_t>(loc) < options_.location_names.size())
      return options_.location_names[static_cast<std::size_t>(loc)];
    char buf[16];
    std::snprintf(buf, sizeof buf, "L%d", loc);
    return buf;
  }

  // Small values as numbers; large ones (addresses) as &1, &2, ... in order of appearance, so
  // that a trace reads the same in every run.
  std::string value(Bits v) const {
    if (v < 1'000'000) return std::to_string(v);
    auto it = std::find(addresses_.begin(), addresses_.end(), v);
    if (it == addresses_.end()) it = addresses_.insert(addresses_.end(), v);
    return "&" + std::to_string(it - addresses_.begin() + 1);
  }

  static std::string source(int thread, std::uint32_t event) {
    if (thread < 0) return "init";
    char buf[32];
    std::snprintf(buf, sizeof buf, "T%d.%u", thread, event);
    return buf;
  }

  std::string format_trace() const {
    addresses_.clear();
    std::string out = "locations:";
    for (std::size_t i = 0; i < locations_used_; ++i) {
      out += ' ';
      out += loc_name(static_cast<int>(i));
      out += '=';
      out += value(locations_[i].history.front().value);
    }
    out +=
        " (initial values)\nstep  thread.op  where  operation  -> what it read (from which "
        "store) / wrote\n";
    for (const Event& e : events_) {
      char head[96];
      std::snprintf(head, sizeof head, "T%d.%-3u %s:%d  ", e.thread, e.index, e.function, e.line);
      std::string s = head;
      if (e.op == Op::fence) {
        s += std::string("fence(") + order_name(e.order) + ")";
      } else if (e.op == Op::wait || e.op == Op::wake) {
        s += loc_name(e.loc) + "." + e.what;
        s += e.op == Op::wait
                 ? " read " + value(e.read) + " (" + source(e.from_thread, e.from_event) + ")"
                 : " woke " + value(e.written);
      } else {
        s += loc_name(e.loc) + "." + e.what + "(" + order_name(e.order) + ")";
        if (e.op != Op::store)
          s += " read " + value(e.read) + " (" + source(e.from_thread, e.from_event) +
               (e.speculated ? ", a LATER store: load buffering" : "") + ")";
        if (e.op == Op::store || e.op == Op::rmw || e.op == Op::cas_ok)
          s += " wrote " + value(e.written);
        if (e.op == Op::cas_fail) s += " failed";
      }
      out += s + "\n";
    }
    return out;
  }

  static constexpr std::size_t kStackSize = 256 * 1024;

  Options options_;
  std::mt19937_64 rng_;
  std::function<void()> test_;
  Result result_;
  bool random_ = false;
  bool fatal_ = false;
  ucontext_t scheduler_{};
  std::deque<Thread> threads_;  // stable addresses
  std::size_t threads_used_ = 0;
  std::vector<Location> locations_;
  std::size_t locations_used_ = 0;
  Knowledge sc_;  // the view of the last seq_cst fence (what the order S of fences passes on)
  std::array<std::uint16_t, kMaxLocations> sc_floor_{};  // per location: see sc_before()
  std::vector<Choice> stack_;
  std::size_t stack_pos_ = 0;
  std::vector<Promise> promises_;
  std::vector<ReadRecord> reads_;
  std::vector<Event> events_;
  int me_ = 0;
  int speculations_ = 0;
  int preemptions_ = 0;
  bool discarded_ = false;
  bool failed_check_ = false;
  std::string check_message_;
  std::string outcome_;
  mutable std::vector<Bits> addresses_;  // format_trace()'s names for large values
};

inline Explorer& explorer() {
  Explorer* e = current_explorer();
  if (e == nullptr) {
    std::fprintf(stderr, "model checker: a model atomic used outside model::explore\n");
    std::abort();
  }
  return *e;
}

}  // namespace detail

// Runs `test` (the body of model thread 0) in every execution within the bounds, until a check
// fails or a deadlock occurs.
inline Result explore(const Options& options, std::function<void()> test) {
  detail::Explorer e(options);
  return e.run(std::move(test));
}

// In a test: starts a model thread (it synchronises with the caller, as std::thread does).
inline int spawn(std::function<void()> body) {
  return detail::explorer().spawn(std::move(body));
}
// Waits for a model thread to finish, and synchronises with it.
inline void join(int thread) {
  detail::explorer().join(thread);
}
// A property of the execution; the first one that fails is reported with the execution.
inline void check(bool ok, const char* what) {
  if (!ok) detail::explorer().check(false, what);
}
inline void check(bool ok, const std::string& what) {
  detail::explorer().check(ok, what);
}
// Appends to this execution's outcome; Result::outcomes collects the distinct outcomes.
inline void observe(const std::string& s) {
  detail::explorer().observe(s);
}

}  // namespace wslab::model
