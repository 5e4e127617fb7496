#include "element_convert.hpp"

#include "cpu_features.hpp"

#include <immintrin.h>

#include <cstring>
#include <stdexcept>

#include "moe/spec/dtype.hpp"
#include "small_m_kernels.hpp"

namespace moe::backends::cpu {

namespace {

// F16C's conversion with round-to-nearest-even gives the same bits as f64_to_f16_bits on every
// finite and infinite value (an f32 widened to f64 is exact, so the rounding sees the same number).
__attribute__((target("avx512f,f16c"))) void f32_to_f16_avx512(const float* in, std::size_t count, std::uint16_t* out) {
    std::size_t i = 0;
    for (; i + 16 <= count; i += 16)
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i),
                            _mm512_cvtps_ph(_mm512_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    for (; i < count; ++i) out[i] = f64_to_f16_bits(in[i]);
}

}  // namespace

std::uint16_t f32_to_bf16_bits(float v) {
    std::uint32_t b;
    std::memcpy(&b, &v, 4);
    if ((b & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((b >> 16) | 0x40);  // quiet NaN
    b += 0x7fffu + ((b >> 16) & 1u);
    return static_cast<std::uint16_t>(b >> 16);
}

void widen_to_f32(const Tensor& t, std::size_t begin, std::size_t count, float* out) {
    const unsigned char* p = t.data() + begin * dtype_size(t.dtype());
    switch (t.dtype()) {
        case DType::f32: std::memcpy(out, p, count * sizeof(float)); return;
        case DType::f16: f16_to_f32(p, count, out); return;
        case DType::bf16:
            for (std::size_t i = 0; i < count; ++i) {
                std::uint16_t h;
                std::memcpy(&h, p + 2 * i, 2);
                const std::uint32_t b = static_cast<std::uint32_t>(h) << 16;
                std::memcpy(out + i, &b, 4);
            }
            return;
        case DType::f64:
            for (std::size_t i = 0; i < count; ++i) {
                double v;
                std::memcpy(&v, p + 8 * i, 8);
                out[i] = static_cast<float>(v);
            }
            return;
        default: throw std::logic_error("widen_to_f32: not a floating-point tensor");
    }
}

void narrow_from_f32(const float* in, std::size_t count, Tensor& t, std::size_t begin) {
    unsigned char* p = t.data() + begin * dtype_size(t.dtype());
    switch (t.dtype()) {
        case DType::f32: std::memcpy(p, in, count * sizeof(float)); return;
        case DType::f16:
            if (cpu_has_avx512()) return f32_to_f16_avx512(in, count, reinterpret_cast<std::uint16_t*>(p));
            for (std::size_t i = 0; i < count; ++i) {
                const std::uint16_t h = f64_to_f16_bits(in[i]);
                std::memcpy(p + 2 * i, &h, 2);
            }
            return;
        case DType::bf16:
            for (std::size_t i = 0; i < count; ++i) {
                const std::uint16_t h = f32_to_bf16_bits(in[i]);
                std::memcpy(p + 2 * i, &h, 2);
            }
            return;
        case DType::f64:
            for (std::size_t i = 0; i < count; ++i) {
                const double v = in[i];
                std::memcpy(p + 8 * i, &v, 8);
            }
            return;
        default: throw std::logic_error("narrow_from_f32: not a floating-point tensor");
    }
}

}  // namespace moe::backends::cpu
