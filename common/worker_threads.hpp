// Starting, naming and joining a pool's worker threads, including the one awkward case: the pool
// being destroyed from inside one of its own tasks, where the destroying worker cannot join
// itself.
#pragma once

#include <pthread.h>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <exception>
#include <functional>
#include <string>
#include <string_view>
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
};

class WorkerThreads {
 public:
  WorkerThreads() = default;
  WorkerThreads(const WorkerThreads&) = delete;
  WorkerThreads& operator=(const WorkerThreads&) = delete;
  ~WorkerThreads() { join_all(); }

  // Starts `count` threads. Thread i records that it is worker i of `pool`, names itself, runs the
  // start hook, then runs body(i). If a thread cannot be created the exception propagates; the
  // caller must then make the started workers exit and call join_all().
  template <class Body>
  void start(const void* pool, std::size_t count, const PoolOptions& options, Body body) {
    threads_.reserve(count);
    for (std::size_t i = 0; i < count; ++i) {
      threads_.emplace_back([pool, i, options, body] {
        this_thread_identity = WorkerIdentity{pool, i, nullptr, false};
        name_this_thread(options.thread_name_prefix, i);
        if (options.on_worker_start) {
          try {
            options.on_worker_start(i);
          } catch (const std::exception& e) {
            std::fprintf(stderr, "wslab: worker start hook threw: %s\n", e.what());
          } catch (...) {
            std::fprintf(stderr, "wslab: worker start hook threw a non-std exception\n");
          }
        }
        body(i);
      });
    }
  }

  std::size_t size() const noexcept { return threads_.size(); }

  // Joins every worker. Called from one of them (the pool is destroyed by one of its own tasks),
  // that worker is detached and marked orphaned instead: its loop returns as soon as the current
  // task ends, and it never touches the pool again.
  void join_all() noexcept {
    const std::thread::id me = std::this_thread::get_id();
    for (std::thread& t : threads_) {
      if (!t.joinable()) continue;
      if (t.get_id() == me) {
        this_thread_identity.orphaned = true;
        t.detach();
      } else {
        t.join();
      }
    }
    threads_.clear();
  }

 private:
  static void name_this_thread(const std::string& prefix, std::size_t index) {
    std::string name = prefix.substr(0, 10) + "-" + std::to_string(index);
    name.resize(std::min<std::size_t>(name.size(), 15));
    pthread_setname_np(pthread_self(), name.c_str());
  }

  std::vector<std::thread> threads_;
};

}  // namespace wslab
