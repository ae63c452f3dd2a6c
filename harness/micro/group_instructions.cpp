// Instructions per task group, for callgrind: `rounds` groups of k empty callables, each made,
// run() k times and waited for, in a loop on a one-worker scheduler, from the guest seat (the
// worker sleeps, so the calling thread runs every callable: nobody steals), or with `on_worker`
// on the worker itself, as a program's tasks make their groups (main sleeps).
//
//   group_instructions K ROUNDS [no_group_frames|no_group_jobs|on_worker|on_worker_no_runs]
//
// scripts/group_instructions.sh runs it under callgrind at two round counts, counting the
// instructions of the thread that runs measured_rounds(), inside it only, and divides their
// difference by the difference of the round counts, so that startup and teardown cancel. The
// callables' lambdas are named after groups_of(), not measured_rounds(): callgrind's
// --toggle-collect matches function names, and a pattern that also matched them would switch
// counting off inside them. `no_group_frames` switches Step 28 off (SchedulerKnobs::group_frames:
// the callables are group jobs), `no_group_jobs` Step 17 (SchedulerKnobs::group_jobs: task nodes).
// The two seats differ in each push's wake-up check (ParkingLot::notify_one()): from the guest seat
// it finds the lent worker's bit and needs more tests to rule out a wake-up; on the worker nobody
// sleeps, and its first test decides. K is 0, 1, 2, 4, 8, 32 or 64: rounds of 32 and 64 are long
// enough for the waiter to run their frames as one run (README.md, step 'Runs of one frame
// function'), which `on_worker_no_runs` switches off (SchedulerKnobs::frame_runs) on the worker.
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <thread>

#include "stage5_parallel_algos/threadpool.hpp"

namespace {

int sink = 0;

template <int K>
void groups_of(wslab::IThreadPool& pool, int rounds) {
  for (int i = 0; i < rounds; ++i) {
    wslab::TaskGroup group(pool);
    for (int k = 0; k < K; ++k)
      group.run([] { ++sink; });
    group.wait();
  }
}

// What the script counts (callgrind --toggle-collect=*measured_rounds*), on the thread that runs
// it.
[[gnu::noinline]] bool measured_rounds(wslab::Scheduler& pool, int k, int rounds) {
  switch (k) {
    case 0:
      groups_of<0>(pool, rounds);
      return true;
    case 1:
      groups_of<1>(pool, rounds);
      return true;
    case 2:
      groups_of<2>(pool, rounds);
      return true;
    case 4:
      groups_of<4>(pool, rounds);
      return true;
    case 8:
      groups_of<8>(pool, rounds);
      return true;
    case 32:
      groups_of<32>(pool, rounds);
      return true;
    case 64:
      groups_of<64>(pool, rounds);
      return true;
    default:
      return false;
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::string_view how = argc == 4 ? argv[3] : "";
  if (argc < 3 || argc > 4 ||
      (argc == 4 && how != "no_group_jobs" && how != "no_group_frames" && how != "on_worker" &&
       how != "on_worker_no_runs")) {
    std::fprintf(stderr,
                 "usage: group_instructions 0|1|2|4|8|32|64 ROUNDS "
                 "[no_group_frames|no_group_jobs|on_worker|on_worker_no_runs]\n");
    return 2;
  }
  const int k = std::atoi(argv[1]);
  const int rounds = std::atoi(argv[2]);
  wslab::sched::SchedulerKnobs knobs;
  knobs.group_jobs = how != "no_group_jobs";
  const bool on_worker = how == "on_worker" || how == "on_worker_no_runs";
  knobs.group_frames = how.empty() || on_worker;
  knobs.frame_runs = how != "on_worker_no_runs";
  wslab::Scheduler pool(1, {}, knobs);
  bool ran = false;
  if (on_worker) {
    // The pool's worker runs the rounds, main sleeping meanwhile in wait_idle().
    pool.spawn([&] { ran = measured_rounds(pool, k, rounds); });
    pool.wait_idle();
  } else {
    // The guest seat is lent only in a sleeping worker's place: wait until the new worker parks.
    while (!wslab::with_worker(pool, [](wslab::WorkerRef w) { return w.on_worker(); }))
      std::this_thread::yield();
    ran = wslab::with_worker(pool, [&](wslab::WorkerRef w) {
      return w.on_worker() && measured_rounds(pool, k, rounds);
    });
  }
  if (!ran || sink != k * rounds) {
    std::fprintf(stderr, "group_instructions: an unknown K, or the guest seat was taken\n");
    return 1;
  }
  std::printf("%d\n", sink);
}
