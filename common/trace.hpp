// Scheduling trace hooks: where a pool records "worker w started a task", "stole", "parked".
//
// Two switches. WSLAB_TRACING (compile time, default 0) decides whether the hooks exist at all:
// at 0, trace::event() is an empty inline function and the pools compile to exactly what they
// would be without it. At 1, each hook is one relaxed load of `detail::sink` and a not-taken
// branch until a wslab::trace::Recorder (harness/trace/recorder.hpp) is started at run time.
//
// WSLAB_TRACING must have the same value in every translation unit of a program (the hooks live in
// inline functions such as invoke_task; two different definitions would break the one-definition
// rule). CMake: link the `wslab::tracing` target, which defines it.
#pragma once

#include <atomic>
#include <cstdint>

#ifndef WSLAB_TRACING
#define WSLAB_TRACING 0
#endif

namespace wslab::trace {

enum class Event : std::uint8_t {
  task_begin,    // the calling thread starts running a task
  task_end,      // ... and finished it
  steal,         // the calling worker took a task from another worker (arg: the victim)
  steal_failed,  // a steal attempt found nothing or lost a race (arg: the victim)
  global_pop,    // took a task from the pool's global queue
  park_begin,    // the calling worker is about to sleep for lack of work
  park_end,      // ... and woke up
};
inline constexpr int kEventKinds = 7;

#if WSLAB_TRACING
namespace detail {
using Sink = void (*)(Event, std::uint32_t) noexcept;
// The function that records an event, installed by the running Recorder; nullptr when none runs.
// Relaxed is enough: the sink is code, not data published by the installing thread, and the
// recorder synchronises its own state inside the sink. A thread that sees the switch a moment
// late merely misses (or adds) an event at the edge of the recording.
inline std::atomic<Sink> sink{nullptr};
}  // namespace detail

inline void event(Event e, std::uint32_t arg = 0) noexcept {
  if (const detail::Sink s = detail::sink.load(std::memory_order_relaxed)) [[unlikely]] {
    s(e, arg);
  }
}
inline constexpr bool kCompiledIn = true;
#else
inline void event(Event, std::uint32_t = 0) noexcept {}
inline constexpr bool kCompiledIn = false;
#endif

}  // namespace wslab::trace
