// moe-bench's median: the middle value, or for an even count the mean of the middle pair (the
// upper one alone reported the slower of two repetitions, and the 11th of the default 20).
#include <doctest/doctest.h>

#include "moe/bench/machine_rates.hpp"

TEST_CASE("moe-bench's median: the middle value; an even count, the middle pair's mean") {
    using moe::bench::median;
    CHECK(median({}) == 0.0);
    CHECK(median({5.0}) == 5.0);
    CHECK(median({3.0, 1.0}) == 2.0);
    CHECK(median({10.0, 1.0, 3.0, 2.0}) == 2.5);
    CHECK(median({4.0, 1.0, 9.0}) == 4.0);
}
