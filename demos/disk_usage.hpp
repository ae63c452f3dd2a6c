// The engine of the pdu demo: the disk usage of a directory tree, one task per directory (the
// Phanes workload), summed like GNU `du -s`: every directory, file and symbolic link counted once
// (a file with several hard links only once), symbolic links not followed.
//
// Each directory task lists its entries, adds up the non-directories itself and runs one new
// task per subdirectory in the same TaskGroup, so the tree unfolds across the workers as it is
// discovered; the root call's wait() helps until the last directory is done.
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/thread_pool.hpp"
#include "stage5_parallel_algos/fork_join/task_group.hpp"

namespace wslab::demo {

struct DiskUsage {
  std::uint64_t apparent_bytes = 0;   // sum of st_size (du --apparent-size -B1)
  std::uint64_t allocated_bytes = 0;  // sum of st_blocks * 512 (du -B1)
  std::uint64_t directories = 0;
  std::uint64_t other_entries = 0;  // files, links, devices... counted once each
  std::vector<std::string> errors;  // one message per entry that could not be read
};

class DiskUsageScan {
 public:
  explicit DiskUsageScan(IThreadPool& pool) : pool_(pool) {}

  DiskUsage run(const std::string& root) {
    struct stat st{};
    if (::lstat(root.c_str(), &st) != 0) {
      error("cannot access '" + root + "'", errno);
      return result();
    }
    count(st);
    if (S_ISDIR(st.st_mode)) {
      TaskGroup group(pool_);
      group.run([this, &group, root] { scan_directory(group, root); });
      group.wait();
    }
    return result();
  }

 private:
  void scan_directory(TaskGroup& group, const std::string& path) {
    DIR* dir = ::opendir(path.c_str());
    if (dir == nullptr) {
      error("cannot read directory '" + path + "'", errno);
      return;
    }
    const int fd = ::dirfd(dir);
    std::uint64_t apparent = 0, allocated = 0, others = 0;
    while (const dirent* entry = ::readdir(dir)) {
      const char* name = entry->d_name;
      if (std::strcmp(name, ".") == 0 || std::strcmp(name, "..") == 0) continue;
      struct stat st{};
      if (::fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
        error("cannot access '" + path + "/" + name + "'", errno);
        continue;
      }
      if (S_ISDIR(st.st_mode)) {
        count(st);
        group.run([this, &group, child = path + "/" + name] { scan_directory(group, child); });
        continue;
      }
      if (st.st_nlink > 1 && !first_sighting(st)) continue;  // another link was counted
      apparent += static_cast<std::uint64_t>(st.st_size);
      allocated += static_cast<std::uint64_t>(st.st_blocks) * 512;
      ++others;
    }
    ::closedir(dir);
    // One update per directory keeps the shared counters off the per-file path.
    apparent_.fetch_add(apparent, std::memory_order_relaxed);
    allocated_.fetch_add(allocated, std::memory_order_relaxed);
    others_.fetch_add(others, std::memory_order_relaxed);
  }

  void count(const struct stat& dir_or_root) {
    apparent_.fetch_add(static_cast<std::uint64_t>(dir_or_root.st_size), std::memory_order_relaxed);
    allocated_.fetch_add(static_cast<std::uint64_t>(dir_or_root.st_blocks) * 512,
                         std::memory_order_relaxed);
    if (S_ISDIR(dir_or_root.st_mode)) {
      directories_.fetch_add(1, std::memory_order_relaxed);
    } else {
      others_.fetch_add(1, std::memory_order_relaxed);
    }
  }

  // True the first time an inode with several links is seen.
  bool first_sighting(const struct stat& st) {
    std::lock_guard<std::mutex> lock(mutex_);
    return linked_.insert({st.st_dev, st.st_ino}).second;
  }

  void error(std::string what, int err) {
    std::lock_guard<std::mutex> lock(mutex_);
    errors_.push_back(std::move(what) + ": " + std::strerror(err));
  }

  // The counters are read after group.wait(), whose completion flag orders every task's updates
  // before this point.
  DiskUsage result() {
    DiskUsage u;
    u.apparent_bytes = apparent_.load(std::memory_order_relaxed);
    u.allocated_bytes = allocated_.load(std::memory_order_relaxed);
    u.directories = directories_.load(std::memory_order_relaxed);
    u.other_entries = others_.load(std::memory_order_relaxed);
    std::lock_guard<std::mutex> lock(mutex_);
    u.errors = errors_;
    return u;
  }

  IThreadPool& pool_;
  std::atomic<std::uint64_t> apparent_{0}, allocated_{0}, directories_{0}, others_{0};
  std::mutex mutex_;
  std::set<std::pair<dev_t, ino_t>> linked_;  // guarded by mutex_
  std::vector<std::string> errors_;           // guarded by mutex_
};

inline DiskUsage disk_usage(IThreadPool& pool, const std::string& root) {
  return DiskUsageScan(pool).run(root);
}

}  // namespace wslab::demo
