// `import wslab;` (wslab.cppm beside this file): join, a coroutine fork and an awaited future.
// A program that defines coroutines includes <coroutine> itself, before the import.
#include <coroutine>
#include <cstdio>
import wslab;

wslab::CoTask<long> fib(int n) {
  if (n < 2) co_return n;
  auto [a, b] = co_await wslab::co_join(fib(n - 1), fib(n - 2));
  co_return a + b;
}

wslab::CoTask<int> answer(wslab::ThreadPool& pool) {
  co_return co_await pool.async([] { return 42; });
}

int main() {
  wslab::ThreadPool pool(2);
  const long f = pool.run(fib(20));
  const int a = pool.run(answer(pool));
  auto [x, y] = pool.join([] { return 1; }, [] { return 2; });
  const bool ok = f == 6765 && a == 42 && x + y == 3;
  std::puts(ok ? "module consumer: ok" : "module consumer: wrong result");
  return ok ? 0 : 1;
}
