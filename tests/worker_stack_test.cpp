// PoolOptions::stack_size on every stage's pool, the lab's example pool and ThreadPool: workers
// get the stack asked for, a recursion deeper than the default stack completes on one, stage 5's
// stack guard measures the larger stack, a pool destroyed from its own task still lets the
// destroying worker exit, 0 keeps the default, and a refused size throws from the constructor
// before any worker starts.
#include <gtest/gtest.h>
#include <pthread.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>

#include "common/thread_pool.hpp"
#include "labs/my_pool.hpp"
#include "stage1_global_lock/global_lock_pool.hpp"
#include "stage2_per_thread_mutex/per_thread_mutex_pool.hpp"
#include "stage3_lock_wsq/lock_wsq_pool.hpp"
#include "stage4_chase_lev/chase_lev_pool.hpp"
#include "stage5_parallel_algos/fork_join/stack_room.hpp"
#include "stage5_parallel_algos/scheduler/scheduler.hpp"
#include "stage5_parallel_algos/threadpool.hpp"

namespace wslab {
namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;
constexpr std::size_t kBigStack = 64 * kMiB;

// The calling thread's stack as pthread reports it.
struct StackBounds {
  std::uintptr_t low = 0;
  std::size_t size = 0;  // pthread_attr_getstacksize
};

StackBounds this_thread_stack() {
  StackBounds b;
  pthread_attr_t attr;
  if (pthread_getattr_np(pthread_self(), &attr) != 0) return b;
  void* addr = nullptr;
  std::size_t size = 0;
  if (pthread_attr_getstack(&attr, &addr, &size) == 0)
    b.low = reinterpret_cast<std::uintptr_t>(addr);
  pthread_attr_getstacksize(&attr, &b.size);
  pthread_attr_destroy(&attr);
  return b;
}

std::size_t default_thread_stack_size() {
  std::size_t size = 0;
  std::thread([&size] { size = this_thread_stack().size; }).join();
  return size;
}

std::uintptr_t frame_address() {
  return reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0));
}

// Recurses in frames of kFrameBytes the compiler must keep (a volatile array each, read back after
// the call, so no tail call) until stop(used) holds, `used` being the stack between `top` and the
// current frame; returns that depth. Not instrumented by AddressSanitizer, whose fake stack would
// take the arrays off the thread's stack.
constexpr std::size_t kFrameBytes = 16 * 1024;

template <class Stop>
[[gnu::noinline, gnu::no_sanitize_address]] std::size_t use_stack(std::uintptr_t top, Stop& stop) {
  volatile char frame[kFrameBytes];
  frame[0] = 1;
  frame[kFrameBytes - 1] = 1;
  const std::size_t used = top - frame_address();
  const std::size_t deepest = stop(used) ? used : use_stack(top, stop);
  return deepest + static_cast<std::size_t>(frame[0] + frame[kFrameBytes - 1] - 2);
}

IThreadPool& interface_of(IThreadPool& pool) {
  return pool;
}
IThreadPool& interface_of(ThreadPool& pool) {
  return pool.scheduler();
}

// Runs f() as one task of `pool` and waits for it.
template <class Pool, class F>
void run_task(Pool& pool, F f) {
  interface_of(pool).submit(std::move(f));
  interface_of(pool).wait_idle();
}

template <class Pool>
class WorkerStack : public ::testing::Test {};

using Pools = ::testing::Types<GlobalLockPool, PerThreadMutexPool, LockWsqPool, ChaseLevPool,
                               Scheduler, ThreadPool, labs::my_pool::MyPool>;

class PoolNames {
 public:
  template <class Pool>
  static std::string GetName(int) {
    if constexpr (std::is_same_v<Pool, ThreadPool>) {
      return "ThreadPool";
    } else {
      std::string name(Pool::kName);
      for (char& c : name)
        if (c == ':') c = '_';
      return name;
    }
  }
};

TYPED_TEST_SUITE(WorkerStack, Pools, PoolNames);

// Every worker (seen from the start hook) and a task's thread report at least the requested size,
// an odd one that must be rounded up to whole pages, and the task's frame lies inside those bounds.
TYPED_TEST(WorkerStack, EveryWorkerGetsAtLeastTheRequestedSize) {
  const std::size_t requested = kBigStack + 1;
  std::mutex mutex;
  std::map<std::size_t, std::size_t> size_of_worker;
  PoolOptions options;
  options.stack_size = requested;
  options.on_worker_start = [&](std::size_t i) {
    const std::size_t size = this_thread_stack().size;
    std::lock_guard<std::mutex> lock(mutex);
    size_of_worker[i] = size;
  };
  StackBounds in_task;
  std::uintptr_t frame = 0;
  {
    TypeParam pool(2, options);
    run_task(pool, [&] {
      in_task = this_thread_stack();
      frame = frame_address();
    });
  }  // joined: every hook has run
  ASSERT_EQ(size_of_worker.size(), 2u);
  for (const auto& [index, size] : size_of_worker)
    EXPECT_GE(size, requested) << "worker " << index;
  EXPECT_GE(in_task.size, requested);
  EXPECT_GT(frame, in_task.low);
  EXPECT_LT(frame, in_task.low + in_task.size);
}

// 20 MiB of frames, more than the default stack holds here (checked first), complete on a worker
// with a 64 MiB stack.
TYPED_TEST(WorkerStack, RecursionDeeperThanTheDefaultStackCompletes) {
  static constexpr std::size_t need = 20 * kMiB;
  if (default_thread_stack_size() >= need) GTEST_SKIP() << "the default stack already holds it";
  PoolOptions options;
  options.stack_size = kBigStack;
  TypeParam pool(1, options);
  std::size_t used = 0;
  run_task(pool, [&] {
    auto enough = [](std::size_t depth) { return depth >= need; };
    used = use_stack(frame_address(), enough);
  });
  EXPECT_GE(used, need);
  EXPECT_LT(used, need + 2 * kFrameBytes);
}

// Stage 5's stack guard (join's with_stack_room(), which runs on every pool's workers) measures
// the worker's own stack: stack_nearly_full() turns true only past three quarters of 64 MiB, not
// where a default stack would end.
TYPED_TEST(WorkerStack, StackGuardMeasuresTheLargerStack) {
  PoolOptions options;
  options.stack_size = kBigStack;
  TypeParam pool(1, options);
  bool full_at_start = true;
  std::size_t used = 0;
  std::size_t size = 0;
  std::size_t room_above = 0;  // the worker's stack above the task's frame: its size minus that
  run_task(pool, [&] {
    full_at_start = stack_nearly_full();
    const StackBounds b = this_thread_stack();
    const std::uintptr_t top = frame_address();
    size = b.size;
    room_above = b.low + b.size - top;
    auto full = [](std::size_t) { return stack_nearly_full(); };
    used = use_stack(top, full);
  });
  EXPECT_FALSE(full_at_start);
  ASSERT_GE(size, kBigStack);
  // The guard's floor (a quarter of the stack above its low end) as a depth below the task's
  // frame; the recursion stops within one frame of it.
  const std::size_t floor_depth = size - size / 4 - room_above;
  EXPECT_GE(used + kFrameBytes, floor_depth);
  EXPECT_LT(used, floor_depth + 2 * kFrameBytes);
}

// A pool with a stack size destroyed from its own task: the destroying worker is detached, not
// joined, and still exits (its thread_local's destructor runs) once the task returns.
TYPED_TEST(WorkerStack, DestroyedFromItsOwnTaskTheDetachedWorkerExits) {
  for (const std::size_t threads : {std::size_t{1}, std::size_t{2}}) {
    // Owns the promise: the test must not destroy it while set_value() is still returning.
    struct SignalsExit {
      std::shared_ptr<std::promise<void>> exited;
      ~SignalsExit() { exited->set_value(); }
    };
    auto exited = std::make_shared<std::promise<void>>();
    std::future<void> exit_seen = exited->get_future();
    std::atomic<bool> deleted{false};
    PoolOptions options;
    options.stack_size = kMiB;
    ::testing::internal::CaptureStderr();  // the pool's diagnostic
    auto* pool = new TypeParam(threads, options);
    interface_of(*pool).submit([pool, exited, &deleted] {
      thread_local SignalsExit signals_exit{exited};
      delete pool;
      deleted = true;
    });
    const bool exit_in_time =
        exit_seen.wait_for(std::chrono::seconds(30)) == std::future_status::ready;
    const std::string diagnostic = ::testing::internal::GetCapturedStderr();
    ASSERT_TRUE(exit_in_time) << threads << " threads: the destroying worker did not exit";
    EXPECT_TRUE(deleted.load());
    EXPECT_NE(diagnostic.find("destroyed from inside one of its own tasks"), std::string::npos)
        << diagnostic;
  }
}

// Without a stack size, and with an explicit 0, workers get what a std::thread gets. (glibc may
// hand a thread a cached stack up to four times the size asked for, so sizes near the default
// look like it; a 0 passed on to pthread, or a small or large size, does not.)
TYPED_TEST(WorkerStack, ZeroKeepsTheDefault) {
  const std::size_t expected = default_thread_stack_size();
  ASSERT_NE(expected, 0u);
  for (const bool explicit_zero : {false, true}) {
    PoolOptions options;
    if (explicit_zero) options.stack_size = 0;
    TypeParam pool(1, options);
    std::size_t size = 0;
    run_task(pool, [&] { size = this_thread_stack().size; });
    EXPECT_EQ(size, expected) << (explicit_zero ? "stack_size = 0" : "default options");
  }
}

// Sizes below PTHREAD_STACK_MIN, and one that cannot be rounded up to a page, throw
// std::invalid_argument naming the option and the value; no worker starts.
TYPED_TEST(WorkerStack, RefusedSizesThrowFromTheConstructor) {
  const auto minimum = static_cast<std::size_t>(PTHREAD_STACK_MIN);
  for (const std::size_t size : {std::size_t{1}, std::size_t{1024}, minimum - 1, SIZE_MAX}) {
    std::atomic<int> started{0};
    PoolOptions options;
    options.stack_size = size;
    options.on_worker_start = [&started](std::size_t) { started.fetch_add(1); };
    try {
      TypeParam pool(2, options);
      ADD_FAILURE() << "stack_size = " << size << " was accepted";
    } catch (const std::invalid_argument& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("PoolOptions::stack_size"), std::string::npos) << what;
      EXPECT_NE(what.find(std::to_string(size)), std::string::npos) << what;
    }
    EXPECT_EQ(started.load(), 0) << "stack_size = " << size;
  }
}

}  // namespace
}  // namespace wslab
