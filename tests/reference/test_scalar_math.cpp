// The reference's own exp and the activations built on it.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "moe/reference/gemm.hpp"
#include "moe/reference/scalar_math.hpp"

using namespace moe::reference;

namespace {
// Distance in units in the last place between two finite doubles of the same sign.
double ulps(double a, double b) {
    if (a == b) return 0;
    std::int64_t ia, ib;
    std::memcpy(&ia, &a, 8);
    std::memcpy(&ib, &b, 8);
    return std::fabs(static_cast<double>(ia - ib));
}
}  // namespace

TEST_CASE("exp_portable is within 2 ulp of libm over the whole range") {
    double worst = 0;
    for (int i = 0; i <= 200000; ++i) {
        const double x = -745.0 + 1454.0 * i / 200000.0;
        const double want = std::exp(x);
        if (want == 0.0 || std::isinf(want) || want < std::numeric_limits<double>::min()) continue;
        worst = std::max(worst, ulps(exp_portable(x), want));
    }
    CHECK(worst <= 2.0);
    CHECK(exp_portable(0.0) == 1.0);
    CHECK(exp_portable(-0.0) == 1.0);
    CHECK(exp_portable(1.0) == doctest::Approx(2.718281828459045).epsilon(1e-15));
    CHECK(std::isinf(exp_portable(710.0)));
    CHECK(exp_portable(-746.0) == 0.0);
    CHECK(std::isnan(exp_portable(std::nan(""))));
    CHECK(exp_portable(-std::numeric_limits<double>::infinity()) == 0.0);
}

TEST_CASE("swish, minimum, clamp") {
    CHECK(swish(1.0, 1.0) == doctest::Approx(1.0 / (1.0 + std::exp(-1.0))).epsilon(1e-15));
    CHECK(swish(3.0, 0.0) == 1.5);  // beta 0: exactly x / 2
    CHECK(swish(-800.0, 1.0) == 0.0);
    CHECK(minimum(3.0, 2.0) == 2.0);
    CHECK(minimum(-3.0, 2.0) == -3.0);
    CHECK(std::isnan(minimum(std::nan(""), 2.0)));
    CHECK(clamp(5.0, -2.0, 2.0) == 2.0);
    CHECK(clamp(-5.0, -2.0, 2.0) == -2.0);
    CHECK(std::isnan(clamp(std::nan(""), -2.0, 2.0)));
    // (clamp(lin) + 1) * swish(min(gate)): lin 5 -> 2 + 1 = 3; gate 9 -> 2 -> 2 / (1 + e^-2).
    CHECK(gemm2_activation(9.0, 5.0, 2.0, 1.0) == doctest::Approx(3.0 * 2.0 / (1.0 + std::exp(-2.0))).epsilon(1e-15));
    CHECK(gemm3_activation(2.0, 3.0, 0.0) == 3.0);
}

TEST_CASE("the fixed-order dot product follows its documented order") {
    // Lane j sums a[k] b[k] for k = j mod 8; the lanes combine as a fixed tree. Pick values where
    // any other order gives a different double.
    PaddedMatrix a(1, 17), b(1, 17);
    for (std::size_t k = 0; k < 17; ++k) {
        a.row(0)[k] = (k % 3 == 0) ? 1e16 : 1.0 + k * 0.1;
        b.row(0)[k] = (k % 2 == 0) ? 1.0 : -1.0;
    }
    double lane[8] = {};
    for (std::size_t k = 0; k < 17; ++k) lane[k % 8] += a.row(0)[k] * b.row(0)[k];
    const double want = ((lane[0] + lane[4]) + (lane[2] + lane[6])) + ((lane[1] + lane[5]) + (lane[3] + lane[7]));
    double c = 0;
    gemm_abt(a, b, &c, 1, 1);
    CHECK(c == want);
    CHECK(dot_fixed_order(a.row(0), b.row(0), a.stride) == want);
}

TEST_CASE("gemm_abt: every tile shape and thread count give the same bits as the dot product") {
    for (std::size_t m : {1u, 3u, 4u, 5u, 9u}) {
        for (std::size_t n : {1u, 2u, 7u, 65u, 130u}) {
            PaddedMatrix a(m, 13), b(n, 13);
            for (std::size_t i = 0; i < a.data.size(); ++i) a.data[i] = (i % a.stride < 13) ? std::sin(1.0 + i) : 0.0;
            for (std::size_t i = 0; i < b.data.size(); ++i) b.data[i] = (i % b.stride < 13) ? std::cos(2.0 + i) : 0.0;
            std::vector<double> c1(m * n), c2(m * n);
            gemm_abt(a, b, c1.data(), n, 1);
            gemm_abt(a, b, c2.data(), n, 2);
            for (std::size_t i = 0; i < m; ++i)
                for (std::size_t j = 0; j < n; ++j) {
                    const double want = dot_fixed_order(a.row(i), b.row(j), a.stride);
                    REQUIRE(c1[i * n + j] == want);
                    REQUIRE(c2[i * n + j] == want);
                }
        }
    }
}

TEST_CASE("reshape_unfilled: storage reused from a larger matrix keeps the padding zero and the products unchanged") {
    // The reference refills one matrix per weight for every expert. Old values left in the
    // storage must never reach a product: the padding (columns 13..15 of a 13-wide row) is zeroed
    // whatever the storage held, here NaN everywhere.
    PaddedMatrix reused;
    reused.reshape_unfilled(9, 29);
    for (double& v : reused.data) v = std::numeric_limits<double>::quiet_NaN();
    for (std::size_t n : {7u, 2u, 9u}) {
        reused.reshape_unfilled(n, 13);
        REQUIRE(reused.rows == n);
        REQUIRE(reused.cols == 13);
        REQUIRE(reused.stride == 16);
        PaddedMatrix fresh(n, 13), a(3, 13);
        for (std::size_t r = 0; r < n; ++r)
            for (std::size_t k = 0; k < 13; ++k) reused.row(r)[k] = fresh.row(r)[k] = std::sin(1.0 + r * 13 + k);
        for (std::size_t i = 0; i < a.data.size(); ++i) a.data[i] = (i % a.stride < 13) ? std::cos(2.0 + i) : 0.0;
        for (std::size_t r = 0; r < n; ++r)
            for (std::size_t k = 13; k < 16; ++k) CHECK(reused.row(r)[k] == 0.0);
        std::vector<double> c1(3 * n), c2(3 * n);
        gemm_abt(a, fresh, c1.data(), n, 1);
        gemm_abt(a, reused, c2.data(), n, 1);
        for (std::size_t i = 0; i < c1.size(); ++i) CHECK(c1[i] == c2[i]);
    }
}
