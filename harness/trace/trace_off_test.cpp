// Tracing compiled out (WSLAB_TRACING=0, the default): the hooks are empty, the pools run as
// usual, and a recorder refuses to start with a message that says how to turn tracing on.
#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <string>

#include "harness/trace/recorder.hpp"
#include "registry/pools.hpp"

static_assert(!wslab::trace::kCompiledIn, "trace_off_test must be built with WSLAB_TRACING=0");

namespace wslab::trace {
namespace {

TEST(TraceCompiledOut, RecorderRefusesToStartAndRecordsNothing) {
  Recorder recorder;
  try {
    recorder.start();
    FAIL() << "start() must refuse when tracing is compiled out";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("WSLAB_TRACING"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(recorder.recording());

  auto pool = make_pool(pool_names().front(), 2);
  std::atomic<int> ran{0};
  for (int i = 0; i < 100; ++i)
    pool->submit([&ran] { ran.fetch_add(1); });
  pool->wait_idle();
  EXPECT_EQ(ran.load(), 100);
  event(Event::steal, 1);
  EXPECT_EQ(recorder.recorded_events(), 0u);
  EXPECT_TRUE(recorder.threads().empty());
}

}  // namespace
}  // namespace wslab::trace
