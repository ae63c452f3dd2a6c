// pdu: parallel disk usage, printed like `du -s`. One task per directory on any registered pool.
//
//   pdu [--pool NAME] [--threads N] [-b | --apparent-size] [--stats] PATH...
//
// Without -b the size is in 1024-byte blocks of allocated space, rounded up (du -s); with -b it
// is the apparent size in bytes (du -s -b). Unreadable entries are reported on stderr and make
// the exit status 1, as with du.
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "demos/disk_usage.hpp"
#include "registry/pool_choice.hpp"

int main(int argc, char** argv) {
  CLI::App app{"pdu: parallel disk usage, printed like du -s"};
  std::string pool_name(wslab::Scheduler::kName);
  std::size_t threads = 0;
  bool apparent = false, stats = false;
  std::vector<std::string> paths{"."};
  app.add_option("--pool", pool_name, "scheduler (a stage name)")->capture_default_str();
  app.add_option("-t,--threads", threads, "worker threads (0: one per hardware thread)");
  app.add_flag("-b,--apparent-size", apparent, "apparent size in bytes, like du -s -b");
  app.add_flag("--stats", stats, "print entries, time and throughput on stderr");
  app.add_option("paths", paths, "directories or files")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  try {
    auto pool = wslab::demo::make_any_pool(pool_name, threads);
    int status = 0;
    for (const std::string& path : paths) {
      const auto start = std::chrono::steady_clock::now();
      const wslab::demo::DiskUsage u = wslab::demo::disk_usage(*pool, path);
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      for (const std::string& e : u.errors)
        std::fprintf(stderr, "pdu: %s\n", e.c_str());
      if (!u.errors.empty()) status = 1;
      const std::uint64_t size = apparent ? u.apparent_bytes : (u.allocated_bytes + 1023) / 1024;
      std::printf("%llu\t%s\n", static_cast<unsigned long long>(size), path.c_str());
      if (stats) {
        const auto entries = u.directories + u.other_entries;
        std::fprintf(
            stderr,
            "pdu: %s: %llu directories, %llu other entries in %.3f s (%.0f entries/s) on %s x%zu\n",
            path.c_str(), static_cast<unsigned long long>(u.directories),
            static_cast<unsigned long long>(u.other_entries), seconds,
            static_cast<double>(entries) / seconds, pool_name.c_str(), pool->thread_count());
      }
    }
    return status;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "pdu: %s\n", e.what());
    return 2;
  }
}
