// Pinning the harness's threads to CPUs (false_sharing.cpp, cpu_speeds.cpp, ab_fib_main.cpp):
// the CPUs the calling thread may run on, and a thread pinned to one of them. A thread starts with
// its creator's mask, so a thread pinned before it starts a pool pins the pool's threads too.
#pragma once

#include <pthread.h>
#include <sched.h>

#include <cstddef>
#include <vector>

namespace wslab::bench {

// The CPUs the calling thread may run on, in ascending order, at most `at_most` of them; none when
// the system does not say.
inline std::vector<int> allowed_cpus(std::size_t at_most = CPU_SETSIZE) {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE && cpus.size() < at_most; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  return cpus;
}

// Pins `thread` to `cpu`; false when the system refuses.
inline bool pin(pthread_t thread, int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(thread, sizeof(set), &set) == 0;
}

}  // namespace wslab::bench
