// The process's CPU time, every thread's (user and system), for "CPUs busy" figures: CPU time over
// wall time says how many CPUs a run kept busy, which a thread count alone does not.
#pragma once

#include <sys/resource.h>

namespace wslab::bench {

inline double process_cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto seconds = [](const timeval& t) { return double(t.tv_sec) + double(t.tv_usec) * 1e-6; };
  return seconds(u.ru_utime) + seconds(u.ru_stime);
}

}  // namespace wslab::bench
