// Starting, naming and joining a pool's worker threads, including the one awkward case: the pool
// being destroyed from inside one of its own tasks, where the destroying worker cannot join
// itself.
#pragma once

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "worker_identity.hpp"

namespace wslab {

// Options every pool accepts.
struct PoolOptions {
  // Called on each worker thread, with the worker's index, before it looks for work: the place to
  // set CPU affinity, a scheduling priority or thread-local state. Exceptions it throws are
  // reported on stderr and otherwise ignored (the worker still serves the pool).
  std::function<void(std::size_t worker_index)> on_worker_start;
  // Prefix of the OS thread names (Linux keeps 15 characters): "<prefix>-<index>".
  std::string thread_name_prefix = "wslab";
  // Stack size of each worker in bytes, for tasks that recurse deeply; 0 is the platform's
  // default (what std::thread gives: on glibc the stack rlimit, usually 8 MiB). Rounded up to
  // whole pages, since POSIX lets pthread_attr_setstacksize refuse other sizes. Below
  // PTHREAD_STACK_MIN, or refused by the system, the pool's constructor throws.
  std::size_t stack_size = 0;
};

class WorkerThreads {
 public:
  WorkerThreads() = default;
  WorkerThreads(const WorkerThreads&) = delete;
  WorkerThreads& operator=(const WorkerThreads&) = delete;
  ~WorkerThreads() { join_all(); }

  // Starts `count` threads. Thread i records that it is worker i of `pool`, names itself, runs the
  // start hook, then runs body(i). Throws std::invalid_argument for a stack size the system
  // refuses (before any thread starts) and std::system_error if a thread cannot be created; the
  // caller must then make the started workers exit and call join_all().
  template <class Body>
  void start(const void* pool, std::size_t count, const PoolOptions& options, Body body) {
    const ThreadAttributes attributes(options.stack_size);
    threads_.reserve(count);
    for (std::size_t i = 0; i < count; ++i) {
      auto launch = std::make_unique<Launch<Body>>(Launch<Body>{pool, i, options, body});
      pthread_t thread;
      const int error = pthread_create(&thread, attributes.get(), &run<Body>, launch.get());
      if (error != 0) {
        std::string what = "wslab: cannot start worker " + std::to_string(i);
        if (options.stack_size != 0)
          what += " with PoolOptions::stack_size = " + std::to_string(options.stack_size);
        throw std::system_error(error, std::generic_category(), what);
      }
      launch.release();            // the thread owns it now
      threads_.push_back(thread);  // cannot throw: reserved
    }
  }

  std::size_t size() const noexcept { return threads_.size(); }

  // Joins every worker. Called from one of them (the pool is destroyed by one of its own tasks),
  // that worker is detached and marked orphaned instead: its loop returns as soon as the current
  // task ends, and it never touches the pool again.
  void join_all() noexcept {
    const pthread_t me = pthread_self();
    for (const pthread_t thread : threads_) {
      if (pthread_equal(thread, me)) {
        this_thread_identity.orphaned = true;
        pthread_detach(thread);
      } else {
        pthread_join(thread, nullptr);
      }
    }
    threads_.clear();
  }

 private:
  // Workers are pthreads, not std::threads, because std::thread cannot set a stack size. Without
  // one, the attributes are null: the defaults, which is what std::thread passes.
  class ThreadAttributes {
   public:
    explicit ThreadAttributes(std::size_t stack_size) {
      if (stack_size == 0) return;
      const auto minimum = static_cast<std::size_t>(PTHREAD_STACK_MIN);
      if (stack_size < minimum)
        refuse(stack_size, "is below PTHREAD_STACK_MIN (" + std::to_string(minimum) + ")");
      const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
      if (stack_size > SIZE_MAX - (page - 1)) refuse(stack_size, "is too large");
      const std::size_t rounded = (stack_size + page - 1) / page * page;
      pthread_attr_init(&attributes_);
      if (pthread_attr_setstacksize(&attributes_, rounded) != 0) {
        pthread_attr_destroy(&attributes_);
        refuse(stack_size, "is refused by pthread_attr_setstacksize");
      }
      set_ = true;
    }
    ~ThreadAttributes() {
      if (set_) pthread_attr_destroy(&attributes_);
    }
    ThreadAttributes(const ThreadAttributes&) = delete;
    ThreadAttributes& operator=(const ThreadAttributes&) = delete;

    const pthread_attr_t* get() const noexcept { return set_ ? &attributes_ : nullptr; }

   private:
    [[noreturn]] static void refuse(std::size_t stack_size, const std::string& why) {
      throw std::invalid_argument("wslab: PoolOptions::stack_size = " + std::to_string(stack_size) +
                                  " " + why);
    }

    pthread_attr_t attributes_{};
    bool set_ = false;
  };

  // What a new thread needs, handed over through pthread_create's void*; the thread deletes it.
  template <class Body>
  struct Launch {
    const void* pool;
    std::size_t index;
    PoolOptions options;
    Body body;
  };

  // noexcept, as std::thread's entry point: an exception escaping body() terminates the program.
  template <class Body>
  static void* run(void* argument) noexcept {
    const std::unique_ptr<Launch<Body>> launch(static_cast<Launch<Body>*>(argument));
    const std::size_t i = launch->index;
    this_thread_identity.assume(WorkerIdentity{launch->pool, i, nullptr, false});
    name_this_thread(launch->options.thread_name_prefix, i);
    if (launch->options.on_worker_start) {
      try {
        launch->options.on_worker_start(i);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "wslab: worker start hook threw: %s\n", e.what());
      } catch (...) {
        std::fprintf(stderr, "wslab: worker start hook threw a non-std exception\n");
      }
    }
    launch->body(i);
    return nullptr;
  }

  static void name_this_thread(const std::string& prefix, std::size_t index) {
    std::string name = prefix.substr(0, 10) + "-" + std::to_string(index);
    name.resize(std::min<std::size_t>(name.size(), 15));
    pthread_setname_np(pthread_self(), name.c_str());
  }

  std::vector<pthread_t> threads_;
};

}  // namespace wslab
