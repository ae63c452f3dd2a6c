#error "a consumer header named scheduler.hpp was picked up instead of wslab's"
