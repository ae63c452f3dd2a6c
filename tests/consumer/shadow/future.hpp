#error "a consumer header named future.hpp was picked up instead of wslab's"
