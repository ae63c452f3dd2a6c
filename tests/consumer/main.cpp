// What an engineer's first program with the installed library looks like; exits non-zero if any
// result is wrong.
#include <wslab/stage4_chase_lev/chase_lev_pool.hpp>
#include <wslab/threadpool.hpp>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <functional>
#include <numeric>
#include <vector>

namespace {

int failures = 0;

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "consumer: wrong result: %s\n", what);
    ++failures;
  }
}

wslab::CoTask<long> co_fib(int n) {
  if (n < 2) co_return n;
  auto [a, b] = co_await wslab::co_join(co_fib(n - 1), co_fib(n - 2));
  co_return a + b;
}

wslab::CoTask<int> await_future(wslab::ThreadPool& pool) {
  co_return co_await pool.async([] { return 6 * 7; });
}

long fib(wslab::ThreadPool& pool, int n) {
  if (n < 2) return n;
  auto [a, b] = pool.join([&] { return fib(pool, n - 1); }, [&] { return fib(pool, n - 2); });
  return a + b;
}

}  // namespace

int main() {
  wslab::ThreadPool pool(2);

  std::atomic<int> spawned{0};
  for (int i = 0; i < 1000; ++i)
    pool.spawn([&spawned] { spawned.fetch_add(1); });
  pool.wait_all();
  check(spawned.load() == 1000, "spawn + wait_all");

  auto answer = pool.async([] { return 6 * 7; });
  check(answer.get() == 42, "async");

  std::vector<long> v(100000);
  std::iota(v.begin(), v.end(), 0L);
  pool.parallel_for(v.begin(), v.end(), [](long& x) { x *= 2; });
  const long sum = pool.parallel_reduce(v.begin(), v.end(), 0L, std::plus<>{});
  check(sum == 99999L * 100000L, "parallel_for + parallel_reduce");

  std::vector<int> w(50000);
  for (std::size_t i = 0; i < w.size(); ++i)
    w[i] = static_cast<int>((i * 7919) % 50000);
  pool.parallel_sort(w.begin(), w.end());
  check(std::is_sorted(w.begin(), w.end()), "parallel_sort");

  check(fib(pool, 20) == 6765, "join");
  check(pool.run(co_fib(20)) == 6765, "co_join");
  check(pool.run(await_future(pool)) == 42, "co_await future");

  wslab::ChaseLevPool textbook(2);
  std::atomic<int> ran{0};
  for (int i = 0; i < 100; ++i)
    textbook.submit([&ran] { ran.fetch_add(1); });
  textbook.wait_idle();
  check(ran.load() == 100, "stage 4 pool");

  if (failures == 0) std::puts("consumer: ok");
  return failures == 0 ? 0 : 1;
}
