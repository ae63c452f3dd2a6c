// mandelbrot: a size x size escape-time image, one task per row, all submitted from outside.
// Rows through the set take up to max_iter iterations per pixel and rows outside it almost none,
// so the load is uneven and a pool has to balance it. No recursion: this is a pool used as a
// plain parallel loop.
//
// Verification: every row ran exactly once (a per-row counter), and the FNV-1a hash of the
// iteration counts equals the hash of a sequential render made by the driver.
#pragma once

#include <fmt/format.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/workloads/workload.hpp"

namespace wslab::bench {

class MandelbrotWorkload final : public Workload {
 public:
  static Params make_params(std::uint64_t size, std::uint64_t max_iterations) {
    Params p;
    p.set("size", size).set("iters", max_iterations);
    return p;
  }

  // The view: the whole set, square pixels.
  static constexpr double kLeft = -2.0, kTop = -1.3, kSpan = 2.6;

  static std::uint16_t escape_time(double cx, double cy, std::uint32_t max_iterations) noexcept {
    double x = 0, y = 0;
    std::uint32_t i = 0;
    while (i < max_iterations && x * x + y * y <= 4.0) {
      const double xt = x * x - y * y + cx;
      y = 2.0 * x * y + cy;
      x = xt;
      ++i;
    }
    return static_cast<std::uint16_t>(i);
  }

  static void render_row(std::uint16_t* row, std::uint32_t y, std::uint32_t size,
                         std::uint32_t max_iterations) noexcept {
    const double scale = kSpan / size;
    const double cy = kTop + (y + 0.5) * scale;
    for (std::uint32_t x = 0; x < size; ++x) {
      row[x] = escape_time(kLeft + (x + 0.5) * scale, cy, max_iterations);
    }
  }

  static std::uint64_t fnv1a(const std::vector<std::uint16_t>& pixels) noexcept {
    std::uint64_t h = 0xcbf29ce484222325ull;
    for (std::uint16_t v : pixels) {
      h = (h ^ (v & 0xffu)) * 0x100000001b3ull;
      h = (h ^ (v >> 8)) * 0x100000001b3ull;
    }
    return h;
  }

  struct Shape {
    std::uint32_t size, max_iterations;
  };
  static Shape shape_of(const Params& p) {
    const std::uint64_t size = p.u64("size"), iters = p.u64("iters");
    if (size == 0 || size > 16384) throw std::invalid_argument("mandelbrot: size must be 1..16384");
    if (iters == 0 || iters > 65535) {
      throw std::invalid_argument("mandelbrot: iters must be 1..65535 (counts are 16-bit)");
    }
    return {static_cast<std::uint32_t>(size), static_cast<std::uint32_t>(iters)};
  }

  static std::vector<std::uint16_t> render_sequential(const Shape& s) {
    std::vector<std::uint16_t> image(std::size_t{s.size} * s.size);
    for (std::uint32_t y = 0; y < s.size; ++y) {
      render_row(&image[std::size_t{y} * s.size], y, s.size, s.max_iterations);
    }
    return image;
  }

  std::string_view name() const noexcept override { return "mandelbrot"; }
  std::string_view summary() const noexcept override {
    return "escape-time image, one external task per row (uneven rows: load balancing)";
  }

  std::string reference(const Params& p) const override {
    return std::to_string(fnv1a(render_sequential(shape_of(p))));
  }

  CellInfo describe(const Params& p, const std::string&) const override {
    const Shape s = shape_of(p);
    return {fmt::format("{}x{} i{}", s.size, s.size, s.max_iterations), "pixels",
            static_cast<double>(s.size) * s.size, s.size};
  }

  std::unique_ptr<CellRun> prepare(const Params& p, const std::string& expected) const override {
    return std::make_unique<Run>(shape_of(p), parse_numbers(expected, 1, "mandelbrot")[0]);
  }

  std::optional<Params> shrink(const Params& p, const std::string&,
                               std::uint64_t max_tasks) const override {
    // Fewer rows would be a different image; the row count is small anyway.
    if (shape_of(p).size <= max_tasks) return p;
    return std::nullopt;
  }

 private:
  class Run final : public CellRun {
   public:
    Run(Shape s, std::uint64_t expected_hash)
        : shape_(s),
          expected_hash_(expected_hash),
          image_(std::size_t{s.size} * s.size),
          row_runs_(s.size) {}

    // The sentinel 0xffff is no valid count (iters <= 65535 only reaches it if every pixel
    // escapes at the last step); a row that never ran leaves it and changes the hash.
    void reset() override {
      std::fill(image_.begin(), image_.end(), std::uint16_t{0xffff});
      for (auto& r : row_runs_)
        r.store(0, std::memory_order_relaxed);
    }

    void run(Executor& ex) override {
      for (std::uint32_t y = 0; y < shape_.size; ++y) {
        ex.submit([this, y] {
          render_row(&image_[std::size_t{y} * shape_.size], y, shape_.size, shape_.max_iterations);
          row_runs_[y].fetch_add(1, std::memory_order_relaxed);  // wait() orders it for verify
        });
      }
      ex.wait();
    }

    Verdict verify() const override {
      std::uint32_t missing = 0, repeated = 0;
      for (const auto& r : row_runs_) {
        const std::uint32_t n = r.load(std::memory_order_relaxed);
        missing += n == 0;
        repeated += n > 1;
      }
      const std::uint64_t hash = fnv1a(image_);
      if (missing == 0 && repeated == 0 && hash == expected_hash_) return {};
      return {false,
              fmt::format("mandelbrot {}x{}: {} rows never ran, {} rows ran more than "
                          "once, image hash {:016x} (expected {:016x})",
                          shape_.size, shape_.size, missing, repeated, hash, expected_hash_)};
    }

   private:
    Shape shape_;
    std::uint64_t expected_hash_;
    std::vector<std::uint16_t> image_;
    std::vector<std::atomic<std::uint32_t>> row_runs_;
  };
};

}  // namespace wslab::bench
