// placeholder: the conformance suite is being written
#include <gtest/gtest.h>
#include "harness/pools.hpp"
TEST(Registry, Placeholder) { EXPECT_FALSE(wslab::pool_names().empty()); }
