// A module interface unit over wslab's headers, for a program that writes `import wslab;`.
// wslab ships headers; this file is what a user compiles into a module (scripts/consumer.sh
// builds it with clang++-19 and libc++-19 and imports it). Export the names the program uses.
module;
#include <wslab/threadpool.hpp>
export module wslab;
export namespace wslab {
using wslab::async;
using wslab::co_join;
using wslab::CoTask;
using wslab::first_ready;
using wslab::Future;
using wslab::join;
using wslab::operator co_await;
using wslab::schedule;
using wslab::sync_wait;
using wslab::TaskGroup;
using wslab::ThreadPool;
using wslab::when_all;
using wslab::when_any;
using wslab::with_worker;
using wslab::WorkerRef;
}  // namespace wslab
