// pdu's engine against GNU du on a generated tree: apparent sizes (du -s -b) and allocated bytes
// (du -s -B1) must match exactly, on every pool.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "demos/disk_usage.hpp"
#include "tests/on_every_pool.hpp"

namespace wslab {
namespace {

namespace fs = std::filesystem;

// A tree with what du has opinions about: nested and empty directories, files of many sizes
// (empty, tiny, several blocks), a sparse file, a file with three hard links, symbolic links to
// a file and to a directory (not followed).
class GeneratedTree {
 public:
  GeneratedTree() {
    char pattern[] = "/tmp/wslab-pdu-XXXXXX";
    const char* dir = ::mkdtemp(pattern);
    if (dir == nullptr) throw std::runtime_error("mkdtemp failed");
    root_ = dir;
    std::mt19937 rng(99);
    populate(root_, 0, rng);
    fs::create_directories(root_ / "empty" / "still_empty");
    write_file(root_ / "linked", 10'000);
    fs::create_hard_link(root_ / "linked", root_ / "empty" / "link_two");
    fs::create_hard_link(root_ / "linked", root_ / "d0" / "link_three");
    fs::create_symlink(root_ / "linked", root_ / "symlink_to_file");
    fs::create_directory_symlink(root_ / "d0", root_ / "symlink_to_dir");
    const int fd = ::open((root_ / "sparse").c_str(), O_CREAT | O_WRONLY, 0644);
    if (fd < 0 || ::ftruncate(fd, 50 * 1024 * 1024) != 0 || ::pwrite(fd, "x", 1, 4096) != 1) {
      throw std::runtime_error("could not make the sparse file");
    }
    ::close(fd);
    ::sync();  // settle delayed allocation so that st_blocks does not move between du and us
  }
  ~GeneratedTree() {
    std::error_code ignored;
    fs::remove_all(root_, ignored);
  }
  const fs::path& root() const { return root_; }

 private:
  static void write_file(const fs::path& p, std::size_t bytes) {
    std::ofstream out(p, std::ios::binary);
    out << std::string(bytes, 'w');
  }
  // "f3", "d0": appended, not `"f" + std::to_string(f)`, whose inlined insert GCC 12 misreads as
  // a copy of a negative size (a -Wstringop-overflow false positive).
  static std::string named(char kind, int index) {
    std::string name(1, kind);
    name += std::to_string(index);
    return name;
  }
  void populate(const fs::path& dir, int depth, std::mt19937& rng) {
    const int files = static_cast<int>(rng() % 6);
    for (int f = 0; f < files; ++f) {
      const std::size_t sizes[] = {0, 1, 100, 4095, 4096, 4097, 70'000};
      write_file(dir / named('f', f), sizes[rng() % 7]);
    }
    if (depth == 4) return;
    const int subdirs = depth == 0 ? 4 : static_cast<int>(rng() % 4);
    for (int d = 0; d < subdirs; ++d) {
      const fs::path sub = dir / named('d', d);
      fs::create_directory(sub);
      populate(sub, depth + 1, rng);
    }
  }
  fs::path root_;
};

// The number GNU du prints for `du -s <flags> <path>`.
std::uint64_t du(const std::string& flags, const fs::path& path) {
  const std::string command = "du -s " + flags + " '" + path.string() + "'";
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) throw std::runtime_error("popen failed: " + command);
  unsigned long long value = 0;
  const int fields = std::fscanf(pipe, "%llu", &value);
  const int status = ::pclose(pipe);
  if (fields != 1 || status != 0) throw std::runtime_error("du failed: " + command);
  return value;
}

class Pdu : public test::OnEveryPool {};

TEST_P(Pdu, MatchesGnuDuOnAGeneratedTree) {
  GeneratedTree tree;
  const std::uint64_t apparent = du("-b", tree.root());
  const std::uint64_t allocated = du("-B1", tree.root());
  ASSERT_GT(apparent, 50u * 1024 * 1024) << "the sparse file's apparent size is missing";
  for (std::size_t threads : {1u, 2u, 4u}) {
    auto pool = make(threads);
    const demo::DiskUsage u = demo::disk_usage(*pool, tree.root().string());
    EXPECT_TRUE(u.errors.empty()) << u.errors.front();
    EXPECT_EQ(u.apparent_bytes, apparent) << threads << " threads, vs du -s -b";
    EXPECT_EQ(u.allocated_bytes, allocated) << threads << " threads, vs du -s -B1";
  }
}

TEST_P(Pdu, MissingPathIsAnErrorNotAZero) {
  auto pool = make(2);
  const demo::DiskUsage u = demo::disk_usage(*pool, "/nonexistent/wslab/path");
  ASSERT_EQ(u.errors.size(), 1u);
  EXPECT_NE(u.errors[0].find("No such file"), std::string::npos) << u.errors[0];
}

WSLAB_INSTANTIATE_ON_EVERY_POOL(Pdu);

}  // namespace
}  // namespace wslab
