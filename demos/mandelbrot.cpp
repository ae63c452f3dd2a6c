// mandelbrot: renders the Mandelbrot set to a PNG with parallel_for over rows, on any registered
// pool, and reports the time and the speedup over the same pool with one thread.
//
//   mandelbrot [--pool NAME | --all-pools] [--threads N] [--width W] [--height H]
//              [--max-iter K] [--repeat R] [--output FILE.png]
//
// Rows differ wildly in cost (the set's interior iterates to the limit), which is exactly the
// imbalance work stealing and on-demand splitting are for. Every render of a run must produce
// the same pixels; the program checks it.
//
// "N threads" means N CPUs, on every pool: the speedup compares the same pool on one CPU and on
// N. Each render runs as one task of the pool while the calling thread sleeps
// (demo::run_on_pool, pool_choice.hpp). Called from main() directly, parallel_for would let main
// work too: on stages 1-4 beside all N workers, so "1 thread" would be two CPUs there. A
// one-thread pool uses one CPU on every stage (tests/one_cpu_per_thread_test.cpp checks it), and
// on a 2-core machine no pool's speedup can exceed 2.
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb/stb_image_write.h>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "registry/pool_choice.hpp"
#include "stage5_parallel_algos/algorithms/parallel_for.hpp"

namespace {

struct View {
  int width = 1920;
  int height = 1080;
  int max_iter = 1000;
};

// One RGB pixel from the smooth (fractional) escape count, on a simple cosine palette.
void shade(double x0, double y0, int max_iter, std::uint8_t* rgb) {
  double x = 0, y = 0, x2 = 0, y2 = 0;
  int i = 0;
  while (x2 + y2 <= 256.0 && i < max_iter) {
    y = 2 * x * y + y0;
    x = x2 - y2 + x0;
    x2 = x * x;
    y2 = y * y;
    ++i;
  }
  if (i == max_iter) {
    rgb[0] = rgb[1] = rgb[2] = 0;
    return;
  }
  const double smooth = i + 1 - std::log2(std::log2(x2 + y2) / 2);
  const double t = smooth * 0.05;
  rgb[0] = static_cast<std::uint8_t>(127.5 * (1 + std::cos(t)));
  rgb[1] = static_cast<std::uint8_t>(127.5 * (1 + std::cos(t + 2.1)));
  rgb[2] = static_cast<std::uint8_t>(127.5 * (1 + std::cos(t + 4.2)));
}

void render(wslab::IThreadPool& pool, const View& v, std::vector<std::uint8_t>& image) {
  image.assign(static_cast<std::size_t>(v.width) * static_cast<std::size_t>(v.height) * 3, 0);
  // The classic full view: x in [-2.5, 1], y centred, square pixels.
  const double scale = 3.5 / v.width;
  const double top = 0.5 * v.height * scale;
  wslab::demo::run_on_pool(pool, [&] {
    wslab::parallel_for(pool, 0, v.height, [&](int row) {
      const double y0 = top - row * scale;
      std::uint8_t* out =
          &image[static_cast<std::size_t>(row) * static_cast<std::size_t>(v.width) * 3];
      for (int col = 0; col < v.width; ++col)
        shade(-2.5 + col * scale, y0, v.max_iter, out + 3 * col);
    });
  });
}

// Median wall time of `repeat` renders, in seconds, after one small untimed render (a fresh
// pool's first call also carries its workers' start-up).
double time_render(wslab::IThreadPool& pool, const View& v, int repeat,
                   std::vector<std::uint8_t>& image) {
  render(pool, View{std::min(v.width, 64), std::min(v.height, 36), v.max_iter}, image);
  std::vector<double> times;
  for (int r = 0; r < repeat; ++r) {
    const auto start = std::chrono::steady_clock::now();
    render(pool, v, image);
    times.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"mandelbrot: parallel_for on any pool, PNG out, speedup over one thread"};
  View view;
  std::string pool_name(wslab::Scheduler::kName);
  std::size_t threads = 0;
  int repeat = 3;
  bool all_pools = false;
  std::string output = "mandelbrot.png";
  app.add_option("--pool", pool_name, "scheduler (a stage name)")->capture_default_str();
  app.add_flag("--all-pools", all_pools, "render with every registered pool, one after another");
  app.add_option("-t,--threads", threads, "worker threads (0: one per hardware thread)");
  app.add_option("--width", view.width, "image width")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 15));
  app.add_option("--height", view.height, "image height")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 15));
  app.add_option("--max-iter", view.max_iter, "iteration limit")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--repeat", repeat, "renders per measurement (the median is reported)")
      ->capture_default_str()
      ->check(CLI::Range(1, 100));
  app.add_option("-o,--output", output, "PNG file to write (empty: none)")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  std::vector<std::string> pools;
  if (all_pools) {
    pools = wslab::demo::pool_choices();
  } else {
    pools.push_back(pool_name);
  }
  try {
    std::vector<std::uint8_t> reference, image;
    std::printf("%dx%d, max %d iterations, median of %d renders\n", view.width, view.height,
                view.max_iter, repeat);
    for (const std::string& name : pools) {
      auto one = wslab::demo::make_any_pool(name, 1);
      auto many = wslab::demo::make_any_pool(name, threads);
      const double t1 = time_render(*one, view, repeat, image);
      if (reference.empty()) reference = image;
      const double tn = time_render(*many, view, repeat, image);
      if (image != reference) {
        std::fprintf(stderr, "mandelbrot: %s rendered different pixels\n", name.c_str());
        return 1;
      }
      std::printf("%-26s 1 thread %8.1f ms   %zu threads %8.1f ms   speedup %.2fx\n", name.c_str(),
                  t1 * 1e3, many->thread_count(), tn * 1e3, t1 / tn);
    }
    if (!output.empty()) {
      if (stbi_write_png(output.c_str(), view.width, view.height, 3, reference.data(),
                         view.width * 3) == 0) {
        std::fprintf(stderr, "mandelbrot: could not write %s\n", output.c_str());
        return 1;
      }
      std::printf("wrote %s\n", output.c_str());
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mandelbrot: %s\n", e.what());
    return 2;
  }
  return 0;
}
