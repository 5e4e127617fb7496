// The cpu backend's vectorized activations against their scalar definition: NaN, infinities,
// clamp edges and zeros exactly; everything else within the exp polynomial's error.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "activation_kernels.hpp"

using namespace moe::backends::cpu;

namespace {

std::vector<float> inputs(std::size_t n, std::uint32_t seed) {
    std::vector<float> v = {NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 7.0f, -7.0f, 6.9999995f, 88.0f, -88.0f,
                            89.0f, -104.0f, -120.0f, 120.0f, 1e-30f, -1e-30f, 50.0f, -50.0f};
    std::uint32_t s = seed;
    while (v.size() < n) {
        s = s * 1664525u + 1013904223u;
        const float unit = static_cast<float>(s >> 8) / 16777216.0f;  // [0, 1)
        v.push_back((unit - 0.5f) * (s % 3 == 0 ? 240.0f : 16.0f));
    }
    return v;
}

// Largest |vector - scalar| in units of the scalar value's u = 2^-24; fails on any NaN/inf/zero
// mismatch.
double compare(const std::vector<float>& got, const std::vector<float>& want) {
    double worst = 0;
    for (std::size_t j = 0; j < want.size(); ++j) {
        CAPTURE(j);
        CAPTURE(want[j]);
        CAPTURE(got[j]);
        if (std::isnan(want[j])) {
            CHECK(std::isnan(got[j]));
        } else if (std::isinf(want[j]) || want[j] == 0.0f) {
            CHECK(got[j] == want[j]);
        } else {
            const double diff = std::fabs(static_cast<double>(got[j]) - want[j]);
            REQUIRE(diff <= 4.0 * std::ldexp(1.0, -24) * std::fabs(want[j]) + 1e-44);
            worst = std::max(worst, diff / (std::ldexp(1.0, -24) * std::fabs(want[j])));
        }
    }
    return worst;
}

}  // namespace

TEST_CASE("interleaved swiglu (GEMM2): vector equals scalar up to the exp polynomial") {
    double worst = 0;
    for (std::size_t I : {1u, 7u, 8u, 9u, 16u, 17u, 45u, 2880u}) {
        for (int lane : {0, 1}) {
            for (float limit : {7.0f, INFINITY}) {
                for (float beta : {1.702f, 1.0f, 0.25f}) {
                    CAPTURE(I);
                    CAPTURE(lane);
                    CAPTURE(limit);
                    CAPTURE(beta);
                    const auto first = inputs(2 * I, static_cast<std::uint32_t>(I * 31 + lane));
                    std::vector<float> got(I + 1, 123.0f), want(I);
                    swiglu_interleaved_row(first.data(), got.data(), I, lane, limit, beta);
                    scalar_swiglu_interleaved_row(first.data(), want.data(), I, lane, limit, beta);
                    CHECK(got[I] == 123.0f);  // nothing written past the row
                    got.resize(I);
                    worst = std::max(worst, compare(got, want));
                }
            }
        }
    }
    std::printf("interleaved swiglu: worst difference %.2f u\n", worst);
}

TEST_CASE("interleaved swiglu (GEMM2): a NaN in either lane gives NaN (the spec's clamp and minimum keep it)") {
    // Comparing vector against scalar cannot see a rule both break: clamp(NaN, -L, L) written
    // max(-L, min(x, L)) returned -L in both once.
    for (int lane : {0, 1})
        for (int nan_lane : {0, 1}) {
            CAPTURE(lane);
            CAPTURE(nan_lane);
            std::vector<float> first(2 * 17, 0.5f);
            first[2 * 3 + static_cast<std::size_t>(nan_lane)] = NAN;
            std::vector<float> vec(17), scalar(17);
            swiglu_interleaved_row(first.data(), vec.data(), 17, lane, 7.0f, 1.702f);
            scalar_swiglu_interleaved_row(first.data(), scalar.data(), 17, lane, 7.0f, 1.702f);
            CHECK(std::isnan(vec[3]));
            CHECK(std::isnan(scalar[3]));
            CHECK(!std::isnan(vec[2]));
        }
}

TEST_CASE("split swiglu (GEMM3): vector equals scalar up to the exp polynomial") {
    double worst = 0;
    for (std::size_t I : {1u, 15u, 16u, 33u, 768u}) {
        for (float beta : {1.0f, 1.702f}) {
            CAPTURE(I);
            CAPTURE(beta);
            const auto gate = inputs(I, static_cast<std::uint32_t>(I)), up = inputs(I, static_cast<std::uint32_t>(I + 7));
            std::vector<float> got(I + 1, 123.0f), want(I);
            swiglu_split_row(gate.data(), up.data(), got.data(), I, beta);
            scalar_swiglu_split_row(gate.data(), up.data(), want.data(), I, beta);
            CHECK(got[I] == 123.0f);
            got.resize(I);
            worst = std::max(worst, compare(got, want));
        }
    }
    std::printf("split swiglu: worst difference %.2f u\n", worst);
}
