#error "a consumer header named completion_flag.hpp was picked up instead of wslab's"
