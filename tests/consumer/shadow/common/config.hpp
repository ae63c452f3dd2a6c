#error "a consumer header named common/config.hpp was picked up instead of wslab's"
