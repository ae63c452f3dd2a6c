#error "a consumer header named latch.hpp was picked up instead of wslab's"
