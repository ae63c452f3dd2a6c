// Instruction count of the trace hooks, for callgrind (stable where wall-clock time is not):
//   valgrind --tool=callgrind --toggle-collect='run_empty_tasks*' ./trace_hook_cost
// Built as trace_hook_cost_out (hooks compiled out) and trace_hook_cost_in (compiled in, no
// recorder running); the difference of the two counts, divided by the task count, is what the
// two hooks in invoke_task cost per task when tracing is off.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "common/task_ledger.hpp"

// Runs tasks that were built elsewhere, as a worker runs tasks taken from a queue: the compiler
// cannot see what they hold, so it compiles invoke_task() as in a pool. Not inlined, so that
// callgrind can count exactly this function (and what it calls).
__attribute__((noinline)) void run_empty_tasks(std::vector<wslab::Task>& tasks) {
  for (wslab::Task& task : tasks) {
    if (wslab::invoke_task(task)) std::abort();
  }
}

int main(int argc, char** argv) {
  const std::size_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1000000;
  std::uint64_t counter = 0;
  std::vector<wslab::Task> tasks;
  tasks.reserve(n);
  for (std::size_t i = 0; i < n; ++i)
    tasks.emplace_back([&counter] { ++counter; });
  run_empty_tasks(tasks);
  std::printf("%llu tasks, tracing %s\n", static_cast<unsigned long long>(counter),
              wslab::trace::kCompiledIn ? "compiled in (off)" : "compiled out");
  return counter == n ? 0 : 1;
}
