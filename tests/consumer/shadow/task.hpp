#error "a consumer header named task.hpp was picked up instead of wslab's"
