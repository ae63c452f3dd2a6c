// A deterministic directory tree for the dirscan workload: the same seed and sizes give the same
// tree on every machine, so its counts are comparable between runs. The tree is skewed on
// purpose: each directory hands most of its remaining budget to its first subdirectory, so one
// deep branch holds most of the entries and a pool has to steal to balance the scan.
//
// Files are sparse (ftruncate), so the tree costs inodes but almost no disk space.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>

#include "harness/bench/tally.hpp"

namespace wslab::bench {

struct TreeShape {
  std::uint64_t dirs = 4000;             // directories below the root
  std::uint64_t max_files_per_dir = 20;  // each directory gets 0..max files
  std::uint64_t seed = 1;
};

namespace detail {

class TreeBuilder {
 public:
  explicit TreeBuilder(const TreeShape& shape) : shape_(shape), state_(shape.seed) {}

  // Fills `dir` (which exists) and `budget` directories below it.
  void fill(const std::string& dir, std::uint64_t budget) {
    const std::uint64_t files = next() % (shape_.max_files_per_dir + 1);
    for (std::uint64_t f = 0; f < files; ++f) {
      const std::string path = fmt::format("{}/f{}.dat", dir, f);
      const int fd = ::open(path.c_str(), O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0644);
      if (fd < 0) fail("create", path);
      const off_t size = static_cast<off_t>(next() % 65536);
      const bool sized = ::ftruncate(fd, size) == 0;
      ::close(fd);
      if (!sized) fail("size", path);
    }
    if (budget == 0) return;
    const std::uint64_t children = std::min<std::uint64_t>(budget, 1 + next() % 4);
    std::uint64_t rest = budget - children;
    for (std::uint64_t c = 0; c < children; ++c) {
      // The first child takes 70% of what is left, the others split the remainder evenly.
      std::uint64_t share;
      if (c + 1 == children) {
        share = rest;
      } else if (c == 0) {
        share = rest * 7 / 10;
      } else {
        share = rest / (children - c);
      }
      rest -= share;
      const std::string sub = fmt::format("{}/d{}", dir, c);
      if (::mkdir(sub.c_str(), 0755) != 0) fail("mkdir", sub);
      fill(sub, share);
    }
  }

 private:
  std::uint64_t next() noexcept { return mix64(state_++); }
  [[noreturn]] static void fail(const char* what, const std::string& path) {
    throw std::system_error(errno, std::generic_category(),
                            fmt::format("dirscan tree: cannot {} {}", what, path));
  }

  TreeShape shape_;
  std::uint64_t state_;
};

}  // namespace detail

// Returns the root of the tree for `shape` under `cache_dir`, building it the first time. The
// tree is built under a temporary name and renamed into place, so a half-built tree (an
// interrupted run, two runs at once) is never mistaken for a complete one.
inline std::filesystem::path ensure_synthetic_tree(const TreeShape& shape,
                                                   const std::filesystem::path& cache_dir) {
  namespace fs = std::filesystem;
  const fs::path root = cache_dir / fmt::format("wslab-dirscan-d{}-f{}-s{}", shape.dirs,
                                                shape.max_files_per_dir, shape.seed);
  if (fs::is_directory(root)) return root;
  fs::create_directories(cache_dir);
  const fs::path building =
      cache_dir / fmt::format("{}.building-{}", root.filename().string(), ::getpid());
  fs::remove_all(building);
  fs::create_directory(building);
  detail::TreeBuilder(shape).fill(building.string(), shape.dirs);
  std::error_code ec;
  fs::rename(building, root, ec);
  if (ec) {
    fs::remove_all(building);  // someone else finished first: use theirs
    if (!fs::is_directory(root)) throw fs::filesystem_error("dirscan tree", root, ec);
  }
  return root;
}

}  // namespace wslab::bench
