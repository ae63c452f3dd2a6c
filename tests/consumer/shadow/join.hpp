#error "a consumer header named join.hpp was picked up instead of wslab's"
