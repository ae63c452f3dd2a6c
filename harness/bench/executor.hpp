// What a workload runs on. The workloads are written once against this interface; a registered
// IThreadPool is adapted by PoolExecutor, and the reference rows (oneTBB, std::async) have their
// own adapters in reference_executors.hpp, so every row runs the very same workload code.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "common/stats.hpp"
#include "common/task.hpp"
#include "common/thread_pool.hpp"
#include "registry/pools.hpp"

namespace wslab::bench {

class Executor {
 public:
  virtual ~Executor() = default;
  virtual std::string_view name() const noexcept = 0;
  // Called from outside it is an external submission; called from a running task of this
  // executor it is a recursive one.
  virtual void submit(Task task) = 0;
  // Returns once every task submitted so far, and every task those submitted, has run.
  virtual void wait() = 0;
  // Per-worker scheduler statistics, for executors that keep them.
  virtual std::optional<PoolStats> stats() const { return std::nullopt; }
};

class PoolExecutor final : public Executor {
 public:
  explicit PoolExecutor(std::unique_ptr<IThreadPool> pool) : pool_(std::move(pool)) {}
  std::string_view name() const noexcept override { return pool_->name(); }
  void submit(Task task) override { pool_->submit(std::move(task)); }
  void wait() override { pool_->wait_idle(); }
  std::optional<PoolStats> stats() const override { return pool_->stats(); }
  IThreadPool& pool() noexcept { return *pool_; }

 private:
  std::unique_ptr<IThreadPool> pool_;
};

}  // namespace wslab::bench
