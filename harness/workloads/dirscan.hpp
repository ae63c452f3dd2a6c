// dirscan: the Phanes workload. A parallel walk of a directory tree, one task per directory: the
// task lists its directory, counts files, subdirectories and bytes, and queues one task per
// subdirectory from inside the pool. The shape of the tree decides the load balance; the default
// synthetic tree (synthetic_tree.hpp) is deliberately lopsided.
//
// Verification: the parallel counts must equal those of a sequential walk, done by the driver
// with the same per-directory function. Symbolic links are counted, never followed; unreadable
// directories are counted as errors. Scanning a tree that changes while the harness runs fails
// verification, as it should.
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

#include <fmt/format.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "harness/bench/tally.hpp"
#include "harness/workloads/workload.hpp"

namespace wslab::bench {

struct ScanCounts {
  std::uint64_t files = 0, dirs = 0, others = 0, bytes = 0, errors = 0;
  std::uint64_t entries() const noexcept { return files + dirs + others; }
  friend bool operator==(const ScanCounts&, const ScanCounts&) = default;
};

// Lists one directory into `counts`, calling on_subdir(path) for each subdirectory.
template <class OnSubdir>
void scan_directory(const std::string& path, ScanCounts& counts, OnSubdir&& on_subdir) {
  DIR* dir = ::opendir(path.c_str());
  if (dir == nullptr) {
    ++counts.errors;
    return;
  }
  const int fd = ::dirfd(dir);
  while (const dirent* entry = ::readdir(dir)) {
    const char* name = entry->d_name;
    if (std::strcmp(name, ".") == 0 || std::strcmp(name, "..") == 0) continue;
    unsigned char type = entry->d_type;
    struct stat st{};
    bool have_stat = false;
    if (type == DT_UNKNOWN || type == DT_REG) {
      if (::fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
        ++counts.errors;
        continue;
      }
      have_stat = true;
      type = S_ISDIR(st.st_mode) ? DT_DIR : S_ISREG(st.st_mode) ? DT_REG : DT_LNK;
    }
    if (type == DT_DIR) {
      ++counts.dirs;
      on_subdir(path + '/' + name);
    } else if (type == DT_REG) {
      ++counts.files;
      if (have_stat) counts.bytes += static_cast<std::uint64_t>(st.st_size);
    } else {
      ++counts.others;
    }
  }
  ::closedir(dir);
}

inline ScanCounts scan_sequential(const std::string& root) {
  ScanCounts counts;
  std::vector<std::string> pending{root};
  while (!pending.empty()) {
    std::string path = std::move(pending.back());
    pending.pop_back();
    scan_directory(path, counts, [&](std::string sub) { pending.push_back(std::move(sub)); });
  }
  return counts;
}

class DirscanWorkload final : public Workload {
 public:
  static Params make_params(const std::string& root) {
    Params p;
    p.set("path", root);
    return p;
  }

  std::string_view name() const noexcept override { return "dirscan"; }
  std::string_view summary() const noexcept override {
    return "parallel directory walk, one task per directory, counts checked (Phanes)";
  }

  static std::string encode(const ScanCounts& c) {
    return fmt::format("{} {} {} {} {}", c.files, c.dirs, c.others, c.bytes, c.errors);
  }
  static ScanCounts decode(const std::string& text) {
    const std::vector<std::uint64_t> v = parse_numbers(text, 5, "dirscan");
    return {v[0], v[1], v[2], v[3], v[4]};
  }

  std::string reference(const Params& p) const override {
    const std::string& root = p.str("path");
    struct stat st{};
    if (::stat(root.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      throw std::invalid_argument("dirscan: " + root + " is not a directory");
    }
    return encode(scan_sequential(root));
  }

  CellInfo describe(const Params& p, const std::string& expected) const override {
    const ScanCounts c = decode(expected);
    std::string where = p.str("path");
    const std::size_t slash = where.find_last_of('/');
    if (slash != std::string::npos && slash + 1 < where.size()) where = where.substr(slash + 1);
    return {fmt::format("{} ({} dirs)", where, c.dirs), "entries", static_cast<double>(c.entries()),
            c.dirs + 1};
  }

  std::unique_ptr<CellRun> prepare(const Params& p, const std::string& expected) const override {
    return std::make_unique<Run>(p.str("path"), decode(expected));
  }

  std::optional<Params> shrink(const Params& p, const std::string& expected,
                               std::uint64_t max_tasks) const override {
    if (decode(expected).dirs + 1 <= max_tasks) return p;
    return std::nullopt;  // a partial walk would not be the same tree
  }

 private:
  enum Field : std::size_t { kFiles, kDirs, kOthers, kBytes, kErrors, kFields };

  class Run final : public CellRun {
   public:
    Run(std::string root, ScanCounts expected) : root_(std::move(root)), expected_(expected) {}

    void reset() override { tally_.clear(); }

    void run(Executor& ex) override {
      executor_ = &ex;
      ex.submit([this, path = root_]() { scan(path); });
      ex.wait();
    }

    Verdict verify() const override {
      const ScanCounts seen{tally_.total(kFiles), tally_.total(kDirs), tally_.total(kOthers),
                            tally_.total(kBytes), tally_.total(kErrors)};
      if (seen == expected_) return {};
      return {false, fmt::format("dirscan {}: counted files/dirs/others/bytes/errors {}, the "
                                 "sequential walk counted {}: directories lost or scanned twice",
                                 root_, encode(seen), encode(expected_))};
    }

   private:
    void scan(const std::string& path) {
      ScanCounts mine;
      scan_directory(path, mine, [this](std::string sub) {
        executor_->submit([this, sub = std::move(sub)]() { scan(sub); });
      });
      tally_.add(kFiles, mine.files);
      tally_.add(kDirs, mine.dirs);
      tally_.add(kOthers, mine.others);
      tally_.add(kBytes, mine.bytes);
      tally_.add(kErrors, mine.errors);
    }

    std::string root_;
    ScanCounts expected_;
    Executor* executor_ = nullptr;
    ShardedTally<kFields> tally_;
  };
};

}  // namespace wslab::bench
