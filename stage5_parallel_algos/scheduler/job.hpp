// What the scheduler's deques and its injector hand around: a pointer to something runnable.
// Two kinds: a submitted Task, boxed in a TaskJob node the pool recycles (task_node_cache.hpp),
// and fork-join's own jobs, which live in the joining thread's stack frame (join.hpp)
// and run themselves.
#pragma once

#include <concepts>
#include <cstddef>
#include <new>
#include <type_traits>
#include <utility>

#include "../../common/task.hpp"

namespace wslab::sched {

class Job {
 public:
  using ExecuteFn = void (*)(Job&) noexcept;

  // Runs a job that runs itself (not a task node). A job never throws out of here: it keeps its
  // own exception for whoever waits for it (join rethrows it on the joining thread).
  void execute() noexcept { execute_(*this); }

  // A TaskJob: the pool runs it with its bookkeeping (counted, recycled, exception recorded).
  bool is_task_node() const noexcept { return execute_ == nullptr; }
  // Whether execute() runs `fn` (how a GroupJob is told apart).
  bool executes(ExecuteFn fn) const noexcept { return execute_ == fn; }

 protected:
  explicit Job(ExecuteFn run) noexcept : execute_(run) {}
  ~Job() = default;
  Job(const Job&) = default;
  Job& operator=(const Job&) = default;

 private:
  ExecuteFn execute_;  // nullptr: a TaskJob
};

// A callable to be built in a node's task itself, from what make() returns (TaskJob::emplace),
// rather than built first and moved in.
template <class Make>
struct MadeBy {
  Make& make;
};
template <class F>
inline constexpr bool is_made_by = false;
template <class Make>
inline constexpr bool is_made_by<MadeBy<Make>> = true;

// A task group's callable (README.md, step 'Group jobs'), queued by the group's home worker on its
// deque like a task node and built in a task node's memory, but outside the ledger: its group's
// waiter waits for it, from inside a task the ledger counts. The scheduler runs it with
// run(how, own_wait): `here` when the loop of a wait on its home popped it back, `own_wait` naming
// that wait (the waiting group's OwnWorkMark), which the group counts with a plain add if the wait
// is its own; `elsewhere` anywhere else (the group counts it as any callable of its own); and
// `dropped` when it could not be queued (its callable is destroyed unrun). Then the memory goes
// back to the running worker's cache: run() returns which memory it is, a small block (a job of
// up to SmallJobBlock::kBytes, README.md, step 'Small group jobs') or a task node. execute() is the
// same as run(elsewhere) followed by a delete of the memory, for a path that does not know group
// jobs (none does today). Two words of header, so that with the group's pointer a callable of up
// to 56 bytes fits a node, as it fits a spawned task, and one of up to 32 bytes a small block.
class GroupJob : public Job {
 public:
  enum class Ran : unsigned char { here, elsewhere, dropped };
  // True: the job's memory is a small block; false: a task node's.
  bool run(Ran how, const void* own_wait = nullptr) noexcept { return run_(*this, how, own_wait); }
  static bool is_group_job(const Job& job) noexcept { return job.executes(&run_and_delete); }

 protected:
  using RunFn = bool (*)(GroupJob&, Ran, const void* own_wait) noexcept;
  explicit GroupJob(RunFn run_fn) noexcept : Job(&run_and_delete), run_(run_fn) {}
  ~GroupJob() = default;

 private:
  static void run_and_delete(Job& job) noexcept;  // below TaskJob

  RunFn run_;
};

// A submitted task, boxed so that a deque slot holds one pointer.
struct TaskJob final : Job {
  TaskJob() noexcept : Job(nullptr) {}

  // Puts the callable into this node, whose task is empty (run and reset, or new). A Task is
  // moved in (no move-assignment: the task is known to be empty); a callable that fits inline
  // and cannot throw while being moved in is built in place, with no Task between; a MadeBy's
  // callable is built by its make() right in the task when make() cannot throw (else in a Task
  // moved in, so that a throw leaves the node's task empty). The empty
  // task is not destroyed first: its destructor does nothing, and calling it would read the
  // node's second cache line (often cold in a long burst of spawns) only to learn that.
  template <class F>
  void emplace(F&& fn) {
    using Fn = std::decay_t<F>;
    if constexpr (is_made_by<Fn>) {
      if constexpr (std::is_nothrow_invocable_v<decltype(fn.make)>) {
        ::new (static_cast<void*>(&task)) Task(std::in_place, fn.make);
      } else {
        task = Task(std::in_place, fn.make);  // if make() throws, the task stays empty
      }
    } else if constexpr (std::same_as<Fn, Task> ||
                         (Task::stored_inline<Fn> && std::is_nothrow_constructible_v<Fn, F&&>)) {
      ::new (static_cast<void*>(&task)) Task(std::forward<F>(fn));
    } else {
      task = Task(std::forward<F>(fn));
    }
  }

  // Declared before the task, in the 8 bytes the task's 16-byte alignment would leave empty
  // after Job's pointer: a node is 80 bytes, not 96, and takes a 96-byte chunk of glibc's heap,
  // not 112 (malloc adds an 8-byte size field and rounds up to 16). A worker running a long burst
  // of its own spawns (the 100 x 10,000 grid) cycles through thousands of nodes, and a seventh
  // less memory is a seventh fewer cache misses on them. The link in a worker's cache while the
  // node is spare.
  TaskJob* next_free;  // no initializer: as SmallJobBlock's, linked by the cache before it is read
  Task task;
};
static_assert(sizeof(TaskJob) == 80, "Job's pointer, the free-list link, then the 64-byte task");

// The memory of a small group job (README.md, step 'Small group jobs'): 56 bytes, which glibc's
// heap serves from a 64-byte chunk where a task node takes 96. A group of a million callables that
// capture a few words writes and reads back two thirds of the memory it would in task nodes. While
// spare, the block's first word links it into a worker's cache (task_node_cache.hpp). Made and
// freed as raw memory of the cache's size (SchedulerKnobs::small_group_jobs: 56, or a node's 80).
struct SmallJobBlock {
  static constexpr std::size_t kBytes = 56;
  static SmallJobBlock* make(std::size_t bytes) {
    return ::new (::operator new(bytes)) SmallJobBlock;
  }
  // `delete block` frees what make() allocated, whatever its size.
  static void operator delete(void* memory) noexcept { ::operator delete(memory); }

  // No initializer: every block is linked by the cache that keeps it (task_node_cache.hpp) before
  // anything reads this, and a job's block made spare again (empty_block_at()) goes straight to
  // a cache or to delete, so a store here would be overwritten unread on every group callable.
  SmallJobBlock* next_free;
};
// Whether a group job of this size and alignment fits a small block.
inline constexpr bool fits_small_block(std::size_t size, std::size_t align) noexcept {
  return size <= SmallJobBlock::kBytes && align <= alignof(std::max_align_t);
}

// A group job's memory again as what it was before: an empty task node, or a spare small block,
// for a cache or for delete.
inline TaskJob* empty_node_at(GroupJob* job) noexcept {
  return ::new (static_cast<void*>(job)) TaskJob;
}
inline SmallJobBlock* empty_block_at(GroupJob* job) noexcept {
  return ::new (static_cast<void*>(job)) SmallJobBlock;
}
inline void GroupJob::run_and_delete(Job& job) noexcept {
  auto& self = static_cast<GroupJob&>(job);
  if (self.run(Ran::elsewhere))
    delete empty_block_at(&self);
  else
    delete empty_node_at(&self);
}

}  // namespace wslab::sched
