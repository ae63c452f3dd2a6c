// What fork-join, the coroutines, the futures and the algorithms keep per thread, in one
// thread-local record: each field names the file that reads and writes it. The scheduler's own
// per-thread pointer (scheduler/worker_context.hpp), the thread's identity
// (common/worker_identity.hpp) and a waiter's Parker (completion_flag.hpp: a mutex and a condition
// variable, which need a destructor and so cannot share a constant-initialised record) are the
// library's other thread-locals.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>

#include "../coro/frame_cache.hpp"  // a leaf: it includes nothing of fork-join

namespace wslab {

class IThreadPool;
class TaskGroup;

namespace detail {

// A thread's two stack floors (stack_room.hpp). Until first measured, help_floor is zero and
// overflow_floor the highest address, so that the first check against it takes the path that
// measures.
struct StackFloors {
  std::uintptr_t help_floor = 0;
  std::uintptr_t overflow_floor = std::numeric_limits<std::uintptr_t>::max();
  std::uintptr_t top = 0;  // the stack's highest address (0: unknown)
};

struct ForkJoinThread {
  StackFloors stack_floors;                    // stack_room.hpp: measured on first use
  std::size_t help_depth = 0;                  // help_bounds.hpp: foreign tasks nested here
  TaskGroup* waiting_for = nullptr;            // task_group.hpp: the group this thread waits for
  const IThreadPool* refusing_pool = nullptr;  // futures/future.hpp: whose futures refuse here
  std::uint64_t token = 0;                     // algorithms/per_worker.hpp: 0 until first asked
  const void* running_join = nullptr;          // coro/join_point.hpp: whose children run here now
  bool on_overflow_stack = false;              // stack_room.hpp: a thread of with_stack_room()
  bool joins_stay_here = false;                // join.hpp: an outside join taken back runs here
  // coro/frame_cache.hpp: the coroutine frames this thread freed, for its next ones. Last: its
  // 200 bytes are touched only by coroutines, and the fields above share one cache line.
  FrameCache frames;
};

// Constant-initialised and trivially destructible, so every field costs a TLS-relative load and
// no init guard. Its address also names the thread (join.hpp's this_thread_tag()).
inline thread_local constinit ForkJoinThread this_fork_join_thread{};

}  // namespace detail
}  // namespace wslab
