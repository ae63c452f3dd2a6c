#error "a consumer header named thread_pool.hpp was picked up instead of wslab's"
