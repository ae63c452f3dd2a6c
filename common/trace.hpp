// Scheduling trace hooks: where a pool records "worker w started a task", "stole", "parked".
// Compiled out unless WSLAB_TRACING is defined to 1, so the pools pay nothing by default.
// The recorder and the Chrome trace-event export live behind these calls (see the harness).
#pragma once

#include <cstdint>

#ifndef WSLAB_TRACING
#define WSLAB_TRACING 0
#endif

namespace wslab::trace {

enum class Event : std::uint8_t {
  task_begin,   // the calling thread starts running a task
  task_end,     // ... and finished it
  steal,        // the calling worker took a task from another worker (arg: the victim)
  steal_failed, // a steal attempt found nothing or lost a race (arg: the victim)
  global_pop,   // took a task from the pool's global queue
  park_begin,   // the calling worker is about to sleep for lack of work
  park_end,     // ... and woke up
};

#if WSLAB_TRACING
// Defined by the recorder (harness/trace_recorder.hpp), which a tracing build includes once.
void record(Event event, std::uint32_t arg) noexcept;
#else
inline void record(Event, std::uint32_t) noexcept {}
#endif

inline void event(Event e, std::uint32_t arg = 0) noexcept { record(e, arg); }

}  // namespace wslab::trace
