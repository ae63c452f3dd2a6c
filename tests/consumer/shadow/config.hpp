#error "a consumer header named config.hpp was picked up instead of wslab's"
