// The cpu backend on compressed weights (spec/compressed.md): the decode kernels that read the
// stored bytes (every type, with and without zero points, groups of 32 and more, 1 to 8 rows), the
// portable path (other group sizes), and prefill on weights dequantised by prepare() or per call,
// each judged by the product's comparison with the backend's declared precision; the result does
// not depend on the thread count; 4-bit weights in decode on either dot-product engine, as the
// option or MOE_CPU_DECODE_PRODUCTS chooses. White-box: the bf16 dot-product kernels against the f64 product
// (and their fallback on activations they do not take).
#include <doctest/doctest.h>

#include <immintrin.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "cache_line_vector.hpp"
#include "compressed_kernels.hpp"
#include "compressed_weights_support.hpp"
#include "conformance_check.hpp"
#include "cpu_features.hpp"
#include "e4m3_decode.hpp"
#include "element_convert.hpp"
#include "int_dot_activations.hpp"
#include "parallel_work.hpp"
#include "moe/backends/cpu_backend.hpp"
#include "moe/generator/synthesize.hpp"
#include "moe/spec/compression.hpp"
#include "moe/spec/error.hpp"
#include "small_cases.hpp"

using namespace moe;
using moe::backends::CpuBackend;
using moe::backends::CpuOptions;

namespace {

Problem compressed_problem(ExpertType type, DType wtype, std::size_t gs, bool zp, std::size_t T, DType data = DType::f32,
                           std::size_t H = 64, std::size_t I = 64) {
    auto spec = test::small_spec(type, Convention::openvino, T, H, I, 4, 2, data);
    spec.attributes = attributes_for(type, Convention::openvino, 1.702, 7.0);
    generator::CompressionSpec cs;
    cs.type = wtype;
    cs.group_size = wtype == DType::f4e2m1 ? kMxBlock : gs;
    cs.scale_dtype = wtype == DType::f4e2m1 ? DType::f8e8m0 : wtype == DType::f8e4m3 ? DType::f32 : DType::f16;
    if (zp) cs.zero_point = generator::CompressionSpec::ZeroPoint::weight_type;
    spec.compression = cs;
    return generator::synthesize(spec);
}

std::string cpu_verdict(const Problem& p, int threads, bool prepare, Tensor* out = nullptr,
                        backends::DecodeProducts products = backends::DecodeProducts::automatic) {
    CpuBackend cpu(CpuOptions{threads, backends::CpuMutation::none, products});
    if (prepare) cpu.prepare(p);
    const Output o = cpu.run(p, false);
    if (out) *out = o.output;
    return test::verdict(test::golden_case(p), o.output, cpu.precision_for(p));
}

}  // namespace

TEST_CASE("cpu, compressed weights: every type, decode kernels and the portable path, 1 to 8 rows") {
    for (DType t : {DType::u8, DType::i8, DType::u4, DType::i4, DType::f4e2m1, DType::f8e4m3, DType::f8e5m2})
        for (std::size_t gs : {std::size_t{32}, std::size_t{64}, std::size_t{16}})
            for (bool zp : {false, true}) {
                if (zp && !is_integer_weight(t)) continue;
                if (t == DType::f4e2m1 && gs != 32) continue;
                for (std::size_t T : {std::size_t{1}, std::size_t{3}, std::size_t{8}}) {
                    for (ExpertType et : {ExpertType::gemm2_bias_swiglu_clamp, ExpertType::gemm3_swiglu}) {
                        const Problem p = compressed_problem(et, t, gs, zp, T);
                        CAPTURE(dtype_name(t));
                        CAPTURE(gs);
                        CAPTURE(zp);
                        CAPTURE(T);
                        Tensor one, two;
                        CHECK(cpu_verdict(p, 1, false, &one) == "PASS");
                        CHECK(cpu_verdict(p, 2, true, &two) == "PASS");
                        CHECK(one == two);  // threads, and prepare() (decode keeps the stored bytes)
                    }
                }
            }
}

TEST_CASE("cpu, compressed weights: 1 and 2 threads bit-identical on experts above the parallel bound") {
    // The cases above are small enough that every loop stays on the calling thread
    // (parallel_work.hpp); these are not: H = I = 512, so even a one-row GEMM (512 x 1024 or 1024
    // x 512 weights) splits its rows between the threads. Decode (1, 3 rows) and prefill sizes,
    // f32 and bf16 data (the f32 decode kernels and the bf16 dot kernels).
    const std::size_t H = 512, I = 512;
    REQUIRE(H * I >= backends::cpu::kMinParallelWork);
    for (DType t : {DType::u8, DType::i8, DType::u4, DType::i4, DType::f4e2m1, DType::f8e4m3, DType::f8e5m2})
        for (DType data : {DType::f32, DType::bf16})
            for (std::size_t T : {std::size_t{1}, std::size_t{3}, std::size_t{40}}) {
                const bool zp = is_integer_weight(t);
                const Problem p = compressed_problem(ExpertType::gemm3_swiglu, t, 32, zp, T, data, H, I);
                CAPTURE(dtype_name(t));
                CAPTURE(dtype_name(data));
                CAPTURE(T);
                Tensor one, two;
                CHECK(cpu_verdict(p, 1, false, &one) == "PASS");
                CHECK(cpu_verdict(p, 2, false, &two) == "PASS");
                CHECK(one == two);
            }
}

TEST_CASE("cpu, 4-bit weights in decode: int8 and bf16 products both pass, as the option or the environment chooses") {
    using backends::DecodeProducts;
    const char* kVariable = "MOE_CPU_DECODE_PRODUCTS";
    ::unsetenv(kVariable);
    // The choice: the options', else the environment's, else the processor's (never automatic).
    const DecodeProducts fallback = backends::cpu_decode_products_default();
    CHECK(fallback == (backends::cpu::cpu_prefers_int_dot() ? DecodeProducts::int8 : DecodeProducts::bf16));
    CHECK(CpuBackend().decode_products() == fallback);
    for (const auto& [value, want] : std::vector<std::pair<std::string, DecodeProducts>>{
             {"int8", DecodeProducts::int8}, {"bf16", DecodeProducts::bf16}, {"auto", fallback}, {"", fallback}}) {
        CAPTURE(value);
        ::setenv(kVariable, value.c_str(), 1);
        CHECK(CpuBackend().decode_products() == want);
        CHECK(CpuBackend(CpuOptions{1, backends::CpuMutation::none, DecodeProducts::bf16}).decode_products() ==
              DecodeProducts::bf16);  // the options first
    }
    ::setenv(kVariable, "fast", 1);
    CHECK_THROWS_WITH_AS(CpuBackend(), doctest::Contains("MOE_CPU_DECODE_PRODUCTS: 'fast' is not auto, int8 or bf16"),
                         InputError);
    ::unsetenv(kVariable);
    // What the description says is what runs: int8 only where the CPU has its kernels.
    const std::string int8_said =
        CpuBackend(CpuOptions{1, backends::CpuMutation::none, DecodeProducts::int8}).description();
    CHECK((int8_said.find("int8 products") != std::string::npos) == backends::cpu::cpu_has_int_dot());
    // Both engines on bf16 decode problems above the parallel bound (H = I = 512), each within the
    // declared precision, and each the same on 1 and 2 threads; where the CPU runs both, their
    // first GEMMs differ somewhere (int8 lane sums exact, bf16's rounded in f32: the choice is
    // real; MXFP4's few-bit products often sum exactly either way).
    const bool both = backends::cpu::cpu_has_int_dot() && backends::cpu::cpu_has_avx512_bf16();
    std::size_t differ = 0;
    for (DType t : {DType::u4, DType::i4, DType::f4e2m1})
        for (std::size_t T : {std::size_t{1}, std::size_t{4}}) {
            Problem p = compressed_problem(ExpertType::gemm2_bias_swiglu_clamp, t, 32, t != DType::f4e2m1, T,
                                           DType::bf16, 512, 512);
            // Hidden states spanning 12 binades a block: on the int8 grid (exact lane sums), where
            // the bf16 engine's f32 sums round.
            Tensor& x = p.inputs.at(kHiddenStates);
            for (std::size_t i = 0; i < x.size(); ++i)
                x.set(i, std::ldexp((i % 3 == 0 ? -1 : 1) * (0.5 + 0.49 * std::abs(std::sin(0.7 * double(i)))),
                                    static_cast<int>(i % 13) - 6));
            CAPTURE(dtype_name(t));
            CAPTURE(T);
            Tensor int8_one, int8_two, bf16_one, bf16_two;
            CHECK(cpu_verdict(p, 1, false, &int8_one, DecodeProducts::int8) == "PASS");
            CHECK(cpu_verdict(p, 2, false, &int8_two, DecodeProducts::int8) == "PASS");
            CHECK(cpu_verdict(p, 1, false, &bf16_one, DecodeProducts::bf16) == "PASS");
            CHECK(cpu_verdict(p, 2, false, &bf16_two, DecodeProducts::bf16) == "PASS");
            CHECK(int8_one == int8_two);
            CHECK(bf16_one == bf16_two);
            if (both) {
                const auto first_gemm = [&](DecodeProducts products) {
                    return CpuBackend(CpuOptions{1, backends::CpuMutation::none, products}).run(p, true).stages.at("gate_up");
                };
                differ += !(first_gemm(DecodeProducts::int8) == first_gemm(DecodeProducts::bf16));
            }
        }
    if (both) CHECK(differ > 0);
}

TEST_CASE("cpu, compressed weights: prefill on weights dequantised by prepare() or per call, every data type") {
    for (DType data : {DType::f32, DType::f16, DType::bf16, DType::f64})
        for (DType t : {DType::u4, DType::f4e2m1, DType::f8e4m3}) {
            const Problem p = compressed_problem(ExpertType::gemm2_bias_swiglu_clamp, t, 32, t == DType::u4, 48, data);
            CAPTURE(dtype_name(data));
            CAPTURE(dtype_name(t));
            Tensor unprepared, prepared;
            CHECK(cpu_verdict(p, 2, false, &unprepared) == "PASS");
            CHECK(cpu_verdict(p, 2, true, &prepared) == "PASS");
            if (data != DType::f64) CHECK(unprepared == prepared);  // the same f32 weights, the same library
        }
}

TEST_CASE("cpu prepare() packs compressed weights only when an expert can get more rows than decode takes") {
    // T <= 8: every GEMM on them is a decode, which reads the stored bytes; an f32 copy would
    // never be read. T = 9: a prefill GEMM may come, and its f32 weights are made once here.
    for (std::size_t T : {std::size_t{1}, std::size_t{8}, std::size_t{9}}) {
        const Problem p = compressed_problem(ExpertType::gemm3_swiglu, DType::u4, 32, true, T);
        CAPTURE(T);
        CpuBackend cpu(CpuOptions{2});
        cpu.prepare(p);
        const std::size_t f32_copy = 3 * 4 * 64 * 64 * sizeof(float);  // three weights, E = 4, 64 x 64
        if (T <= 8) CHECK(cpu.prepared_bytes() == 0);
        else CHECK(cpu.prepared_bytes() >= f32_copy);
        CHECK(test::verdict(test::golden_case(p), cpu.run(p, false).output, cpu.precision_for(p)) == "PASS");
    }
    // Weights stored in the data type are still packed for any T (the library's blocked layout).
    const auto plain = generator::synthesize(test::small_spec(ExpertType::gemm3_swiglu, Convention::openvino, 1, 64, 64, 4, 2,
                                                              DType::f32));
    CpuBackend cpu(CpuOptions{2});
    cpu.prepare(plain);
    CHECK(cpu.prepared_bytes() >= 3 * 4 * 64 * 64 * sizeof(float));
}

TEST_CASE("cpu declares f32 dequantisation for compressed weights") {
    const CpuBackend cpu;
    CHECK(cpu.precision(DType::f32).dequant_type() == DType::f32);
    CHECK(cpu.precision(DType::bf16).dequant_type() == DType::f32);
    CHECK(cpu.precision(DType::f64).dequant_type() == DType::f64);
}

// ---- white-box: the bf16 dot-product kernels (AVX512_BF16) on bf16 activations ---------------

namespace {

using moe::test::bf16_rows;
using moe::test::check_against_f64;
using moe::test::random_weights;
using moe::test::Weights;

// One vdpbf16ps on 16 lanes (the caller checks that the CPU has it).
__attribute__((target("avx512f,avx512bw,avx512bf16"))) void dpbf16(const float* acc, const std::uint16_t* a,
                                                                  const std::uint16_t* b, float* out) {
    const __m512 r = _mm512_dpbf16_ps(_mm512_loadu_ps(acc), (__m512bh)_mm512_loadu_si512(a),
                                      (__m512bh)_mm512_loadu_si512(b));
    _mm512_storeu_ps(out, r);
}

}  // namespace

// The kernels' 64-byte loads of activations start on a line only if their buffers do (the arranged
// rows are whole chunks apart): a split load costs the bf16 dot kernels a tenth of their rate.
TEST_CASE("cpu decode kernels: the activation buffers start on a 64-byte line, whatever their size") {
    using namespace moe::backends::cpu;
    for (std::size_t n : {1u, 3u, 17u, 100u, 2880u, 5888u, 100000u}) {
        CacheLineVector<std::uint16_t> words(n);
        CacheLineVector<float> floats(n);
        CacheLineVector<double> doubles(n);
        CHECK(reinterpret_cast<std::uintptr_t>(words.data()) % 64 == 0);
        CHECK(reinterpret_cast<std::uintptr_t>(floats.data()) % 64 == 0);
        CHECK(reinterpret_cast<std::uintptr_t>(doubles.data()) % 64 == 0);
        floats.resize(3 * n + 5);  // a reallocation keeps it
        CHECK(reinterpret_cast<std::uintptr_t>(floats.data()) % 64 == 0);
    }
    IntActivations x;
    const std::vector<float> a(2880, 0.5f);
    REQUIRE(arrange_int(a.data(), 1, a.size(), a.size(), 1.0, x));
    CHECK(x.rows.size() == 23);
    for (const auto& chunk : x.rows) CHECK(reinterpret_cast<std::uintptr_t>(chunk.digits) % 64 == 0);
}

TEST_CASE("cpu, compressed weights: this CPU's vdpbf16ps is the f32 chain the dot kernels' bound assumes") {
    // dot_chunk_decode.hpp: each lane adds the odd pair's exact product, then the even one's,
    // each addition rounded to nearest even. The bound the backend declares rests on it, so it is
    // checked on the machine that runs the tests: products and sums in the normal range (the
    // kernels' inputs never reach the subnormal range the instruction flushes).
    if (!moe::backends::cpu::cpu_has_avx512_bf16()) return;
    std::mt19937 rng(20261126);
    const auto value = [&] {  // |v| in [2^-16, 2^20), either sign
        return static_cast<std::uint16_t>((0x3780 + rng() % 0x1200) | ((rng() & 1u) << 15));
    };
    const auto bf16_value = [](std::uint16_t bits) { return static_cast<float>(moe::bf16_bits_to_f64(bits)); };
    std::size_t lanes = 0, chain = 0;
    for (int it = 0; it < 20000; ++it) {
        std::uint16_t a[32], b[32];
        float acc[16], got[16];
        for (int i = 0; i < 32; ++i) {
            a[i] = value();
            b[i] = value();
        }
        for (float& c : acc)
            c = std::ldexp(static_cast<float>(static_cast<int>(rng() % 2000001) - 1000000),
                           static_cast<int>(rng() % 24) - 30);
        dpbf16(acc, a, b, got);
        for (int i = 0; i < 16; ++i, ++lanes) {
            volatile float odd = acc[i] + bf16_value(a[2 * i + 1]) * bf16_value(b[2 * i + 1]);  // exact product, one rounding
            const float expected = odd + bf16_value(a[2 * i]) * bf16_value(b[2 * i]);
            if (std::memcmp(&expected, &got[i], 4) == 0) ++chain;
        }
    }
    CHECK(chain == lanes);
}

TEST_CASE("cpu, compressed weights: the bf16 dot kernels against the f64 product, and their fallback") {
    using namespace moe::backends::cpu;
    std::mt19937 rng(20240613);
    // K: a row's last step (M = 1) of 1 to 4 chunks, whole or ending in a partial one (544: a
    // partial one alone; 640: one; 768: two; 384: three; 1184: one and a partial; 2880: two and a
    // partial; 480: three and a partial); 480 and 1184 have an odd number of groups of 32, so every
    // other row's zero points start at an odd nibble.
    moe::test::for_each_dot_case(
        {384, 480, 544, 640, 768, 1184, 2880}, 72, rng, [&](const WeightView& W, std::size_t N, std::size_t K, std::size_t M) {
            std::vector<float> A = bf16_rows(M, K, rng), C1(M * N), C2(M * N);
            CHECK(compressed_uses_bf16_dot(A.data(), M, K, W) == cpu_has_avx512_bf16());
            CHECK_FALSE(compressed_uses_int_dot(A.data(), M, K, W));  // these rows span 21 binades and more
            compressed_gemm(A.data(), M, K, W, N, C1.data(), N, 1);
            check_against_f64(A, M, W, C1);
            compressed_gemm(A.data(), M, K, W, N, C2.data(), N, 2);
            CHECK(C1 == C2);  // threads
            // A tiny activation (below 2^-100, bf16): the dot kernels would flush its products
            // to zero; the call takes the f32 kernels and is still right.
            A[(M - 1) * K + K / 3] = std::ldexp(1.0f, -110);
            A[(M - 1) * K + K / 3 + 1] = -std::ldexp(1.0f, -120);
            CHECK_FALSE(compressed_uses_bf16_dot(A.data(), M, K, W));
            compressed_gemm(A.data(), M, K, W, N, C1.data(), N, 1);
            check_against_f64(A, M, W, C1);
            // Not bf16 (f32 data): the f32 kernels.
            A[(M - 1) * K + K / 3] = 1.0f + std::ldexp(1.0f, -20);
            A[(M - 1) * K + K / 3 + 1] = 0.0f;
            CHECK_FALSE(compressed_uses_bf16_dot(A.data(), M, K, W));
        });
}

// MXFP4's E8M0 scales are read as stored, each code shifted into an f32's exponent field, with 0
// (2^-127, an f32 subnormal) and 255 (NaN) set apart (e8m0_as_f32): rows of such codes beside
// ordinary ones, one row of A and two (two weight rows a pass), both engines.
TEST_CASE("cpu, MXFP4 in the dot kernels: rows whose E8M0 scales hold 0 or 255, beside rows that do not") {
    using namespace moe::backends::cpu;
    using moe::backends::DecodeProducts;
    if (!cpu_has_avx512_bf16()) return;  // the kernels under test are not taken on this CPU
    std::mt19937 rng(20261128);
    for (std::size_t K : {std::size_t{480}, std::size_t{2880}}) {
        const std::size_t N = 24, G = K / 32;
        moe::test::Weights w = moe::test::random_weights(DType::f4e2m1, 1, N, K, 32, DType::u4, rng);
        unsigned char* e = w.scale.data();
        // Whole rows of the smallest scales, so that a block read wrong shows against the bound.
        for (std::size_t g = 0; g < G; ++g) {
            e[3 * G + g] = static_cast<unsigned char>(g % 2);  // 2^-127 and 2^-126 in turn
            e[13 * G + g] = 1;                                 // 2^-126: normal, read as stored
            e[16 * G + g] = 0;                                 // beside the ordinary row 17 at M = 2
            e[5 * G + g] = g < 64 ? 1 : 0;                     // 0s past the first 64 scales (K = 2880)
        }
        e[8 * G + G - 1] = 255;  // NaN, in the row's last block (the partial chunk's at 480)
        e[21 * G + 7] = 254;     // 2^127
        for (const DecodeProducts products : {DecodeProducts::bf16, DecodeProducts::int8})
        for (std::size_t M : {std::size_t{1}, std::size_t{2}}) {
            if (products == DecodeProducts::int8 && !cpu_has_int_dot()) continue;
            CAPTURE(K);
            CAPTURE(M);
            const std::string engine = moe::backends::decode_products_name(products);
            CAPTURE(engine);
            // Activations of magnitude 2^6..2^10: the rows scaled by 2^-127 sum to normal f32
            // values well above the bound's floor, and 2^127 times 6 times them stays finite
            // in f64 but not in f32, where the spec's W_f (6 * 2^127) already overflows.
            std::vector<float> A(M * K);
            for (float& a : A)
                a = (rng() % 2 ? -1.0f : 1.0f) * std::ldexp(1.0f + static_cast<float>(rng() % 128) / 128.0f,
                                                            6 + static_cast<int>(rng() % 4));
            const WeightView W = w.view(0, false);
            REQUIRE(compressed_uses_bf16_dot(A.data(), M, K, W));
            // Both engines read the stored scales (these activations lie on the int8 one's grid).
            REQUIRE(compressed_uses_int_dot(A.data(), M, K, W, products) == (products == DecodeProducts::int8));
            std::vector<float> C(M * N);
            compressed_gemm(A.data(), M, K, W, N, C.data(), N, 1, products);
            std::vector<double> wf(N * K);
            dequantize_rows(W, 0, N, wf.data());
            std::vector<float> wf32(N * K);
            dequantize_rows(W, 0, N, wf32.data());
            for (std::size_t m = 0; m < M; ++m)
                for (std::size_t n = 0; n < N; ++n) {
                    CAPTURE(n);
                    const float c = C[m * N + n];
                    if (n == 8) {
                        CHECK(std::isnan(c));
                        continue;
                    }
                    bool overflows = false;  // the spec's W_f rounded to f32: 6 * 2^127 is infinite
                    double exact = 0.0, mag = 0.0;
                    for (std::size_t k = 0; k < K; ++k) {
                        overflows = overflows || std::isinf(wf32[n * K + k]);
                        exact += wf[n * K + k] * A[m * K + k];
                        mag += std::abs(wf[n * K + k] * A[m * K + k]);
                    }
                    if (overflows) {
                        CHECK(!std::isfinite(c));
                        continue;
                    }
                    CHECK(std::abs(c - exact) <= static_cast<double>(K + 3) * std::ldexp(1.0, -24) * mag);
                }
        }
    }
}

TEST_CASE("cpu, compressed weights: the f32 decode kernels on long groups (per channel) against the f64 product") {
    // Groups of 512 and more are summed in several chains with one or two rows of A: chunk counts
    // that the chains divide (20) and do not (19, 90), 1 to 3 rows, every 8-bit type and u4.
    using namespace moe::backends::cpu;
    std::mt19937 rng(20261124);
    std::normal_distribution<double> nd;
    for (DType t : {DType::u8, DType::i8, DType::u4, DType::f8e4m3, DType::f8e5m2})
        for (std::size_t K : {std::size_t{608}, std::size_t{640}, std::size_t{2880}})
            for (std::size_t gs : {K, std::size_t{960}}) {
                if (K % gs) continue;
                const bool zp = is_integer_weight(t);
                const std::size_t N = 40, G = K / gs;
                Weights w;
                w.w = Tensor(t, {1, N, K});
                for (std::size_t i = 0; i < w.w.nbytes(); ++i) {
                    unsigned char b = static_cast<unsigned char>(rng());
                    if (t == DType::f8e4m3 && (b & 0x7f) == 0x7f) b ^= 1;     // not NaN
                    if (t == DType::f8e5m2 && (b & 0x7c) == 0x7c) b ^= 0x40;  // not infinite or NaN
                    w.w.data()[i] = b;
                }
                w.scale = Tensor(DType::f32, {1, N, G});
                w.zero = Tensor(t, {1, N, G});
                for (std::size_t i = 0; i < N * G; ++i) {
                    w.scale.set(i, std::ldexp(1.0 + (rng() % 1000) / 1000.0, static_cast<int>(rng() % 9) - 8));
                    const int z = static_cast<int>(rng() % 16);
                    if (zp) w.zero.set(i, t == DType::i8 ? z - 8 : z);
                }
                const WeightView W = w.view(0, zp);
                for (std::size_t M : {std::size_t{1}, std::size_t{2}, std::size_t{3}}) {
                    CAPTURE(dtype_name(t));
                    CAPTURE(K);
                    CAPTURE(gs);
                    CAPTURE(M);
                    std::vector<float> A(M * K), C1(M * N), C2(M * N);
                    for (float& a : A) a = static_cast<float>(nd(rng) * (1.0 + std::ldexp(1.0, -20)));  // not bf16
                    CHECK_FALSE(compressed_uses_bf16_dot(A.data(), M, K, W));
                    compressed_gemm(A.data(), M, K, W, N, C1.data(), N, 1);
                    check_against_f64(A, M, W, C1);
                    compressed_gemm(A.data(), M, K, W, N, C2.data(), N, 2);
                    CHECK(C1 == C2);  // threads
                }
            }
}

TEST_CASE("cpu, compressed weights: an infinite scale and codes times activations past f32's range, as the spec forms W_f") {
    // The decode kernels scale a group's sum once. W_f = (q - z) S is NaN where S = Inf meets q = z
    // (the sum scaled gives an infinity), and 1e37-sized activations times codes pass f32's range
    // where x W_f (S = 2^-24) does not. Every path: the f32 kernels, the bf16 dot kernels (bf16
    // activations), groups of 32 with f16 scales read as stored, and wider groups.
    using namespace moe::backends::cpu;
    std::mt19937 rng(20261126);
    for (DType t : {DType::u8, DType::i8, DType::u4, DType::i4})
        for (std::size_t gs : {std::size_t{32}, std::size_t{128}})
            for (bool zp : {false, true})
                for (bool bf16_data : {false, true}) {
                    CAPTURE(dtype_name(t));
                    CAPTURE(gs);
                    CAPTURE(zp);
                    CAPTURE(bf16_data);
                    const std::size_t N = 40, K = 384, G = K / gs, M = 3;
                    Weights w = random_weights(t, 1, N, K, gs, t, rng);  // codes: random bytes; zero points 4-bit
                    std::vector<float> A(M * K);
                    std::normal_distribution<double> nd;
                    for (float& a : A) {
                        const double v = nd(rng) * 1e37;
                        a = bf16_data ? static_cast<float>(bf16_bits_to_f64(f32_to_bf16_bits(static_cast<float>(v))))
                                      : static_cast<float>(v);
                    }
                    for (std::size_t i = 0; i < N * G; ++i) w.scale.set(i, std::ldexp(1.0, -24));
                    // Row 5, group 0: an infinite scale over a code equal to its zero point (0 without one).
                    w.scale.set(5 * G, INFINITY);
                    const double z = zp ? w.zero.get(5 * G) : 0.0;
                    const std::int64_t code = static_cast<std::int64_t>(z);
                    w.w.set(5 * K + 7, static_cast<double>(code));
                    const WeightView W = w.view(0, zp);
                    std::vector<float> C1(M * N), C2(M * N);
                    compressed_gemm(A.data(), M, K, W, N, C1.data(), N, 1);
                    compressed_gemm(A.data(), M, K, W, N, C2.data(), N, 2);
                    CHECK(std::memcmp(C1.data(), C2.data(), C1.size() * sizeof(float)) == 0);  // threads (NaN too)
                    std::size_t nan_rows = 0, finite = 0;
                    for (std::size_t m = 0; m < M; ++m)
                        for (std::size_t n = 0; n < N; ++n) {
                            if (n == 5) nan_rows += std::isnan(C1[m * N + n]);
                            else finite += std::isfinite(C1[m * N + n]);
                        }
                    CHECK(nan_rows == M);
                    CHECK(finite == M * (N - 1));
                    // With row 5's scale finite again: every element within the f32 bound of the f64
                    // product, the other rows as before.
                    w.scale.set(5 * G, std::ldexp(1.0, -24));
                    std::vector<float> C3(M * N);
                    compressed_gemm(A.data(), M, K, w.view(0, zp), N, C3.data(), N, 1);
                    check_against_f64(A, M, w.view(0, zp), C3);
                    for (std::size_t m = 0; m < M; ++m) C3[m * N + 5] = C1[m * N + 5] = 0.0f;
                    CHECK(C1 == C3);
                }
}

TEST_CASE("cpu, E4M3 decode: the codes over 256 and the codes' values give the same bits, and a NaN code a NaN row") {
    // Activations of at least 2^-100 take the kernels on the codes' values over 256 (a group's sum
    // times 256); one activation below it, against a zero code in every row, takes the codes' own
    // values on the same sums. Every rounding is the same, so every bit (e4m3_decode.hpp).
    using namespace moe::backends::cpu;
    if (!cpu_has_avx512()) return;  // the portable path has no such choice
    std::mt19937 rng(20261128);
    std::normal_distribution<double> nd;
    for (std::size_t K : {std::size_t{640}, std::size_t{2880}})
        for (bool per_channel : {true, false}) {
            const std::size_t N = 48, G = per_channel ? 1 : K / 64, zero_at = 37;
            Weights w;
            w.w = Tensor(DType::f8e4m3, {1, N, K});
            for (std::size_t i = 0; i < w.w.nbytes(); ++i) {
                unsigned char b = static_cast<unsigned char>(rng());
                if ((b & 0x7f) == 0x7f) b ^= 1;  // not NaN
                if (i % K == zero_at) b = 0x80;  // -0
                w.w.data()[i] = b;
            }
            w.scale = Tensor(DType::f32, {1, N, G});
            for (std::size_t i = 0; i < N * G; ++i)
                w.scale.set(i, std::ldexp(1.0 + (rng() % 1000) / 1000.0, static_cast<int>(rng() % 9) - 4));
            const WeightView W = w.view(0, false);
            for (std::size_t M : {std::size_t{1}, std::size_t{3}}) {
                CAPTURE(K);
                CAPTURE(per_channel);
                CAPTURE(M);
                std::vector<float> A(M * K), C_over(M * N), C_values(M * N);
                for (float& a : A) a = static_cast<float>(nd(rng) * std::ldexp(1.0, static_cast<int>(rng() % 40) - 20));
                std::vector<float> A_tiny = A;
                A_tiny[zero_at] = std::copysign(std::ldexp(1.0f, -110), A[zero_at]);  // against every row's zero code
                REQUIRE(e4m3_over_256_rows_ok(A.data(), M, K, K));
                REQUIRE_FALSE(e4m3_over_256_rows_ok(A_tiny.data(), M, K, K));
                compressed_gemm(A.data(), M, K, W, N, C_over.data(), N, 1);
                compressed_gemm(A_tiny.data(), M, K, W, N, C_values.data(), N, 1);
                CHECK(std::memcmp(C_over.data(), C_values.data(), C_over.size() * sizeof(float)) == 0);
                check_against_f64(A, M, W, C_over);
                // Activations of 2^-124 to 2^-123 in magnitude (12 fractional bits) keep the codes'
                // own values: their products are multiples of 2^-145, so every sum of them is the
                // one of 2^124 times them, scaled exactly, down to f32's subnormals (grid 2^-149),
                // and so is each per-channel output of at least 2^-124. Over 256 the products
                // would be multiples of 2^-153, rounded in the subnormal range.
                std::vector<float> Y(M * K), X(M * K), C_y(M * N), C_x(M * N);
                for (std::size_t i = 0; i < Y.size(); ++i) {
                    Y[i] = static_cast<float>((rng() % 2 ? -1.0 : 1.0) * (1.0 + (rng() % 4096) / 4096.0));
                    X[i] = std::ldexp(Y[i], -124);
                }
                REQUIRE_FALSE(e4m3_over_256_rows_ok(X.data(), M, K, K));
                compressed_gemm(Y.data(), M, K, W, N, C_y.data(), N, 1);
                compressed_gemm(X.data(), M, K, W, N, C_x.data(), N, 1);
                std::size_t compared = 0;
                for (std::size_t i = 0; i < C_x.size(); ++i)
                    if (per_channel && std::fabs(C_y[i]) >= 1.0f) {
                        CHECK(C_x[i] == std::ldexp(C_y[i], -124));
                        ++compared;
                    }
                if (per_channel) CHECK(compared > C_x.size() / 2);
                // A NaN code (either sign) makes its row's outputs NaN, and only its row's, on
                // both paths.
                for (const unsigned char nan : {0x7f, 0xff}) {
                    const unsigned char kept = w.w.data()[5 * K + 100];
                    w.w.data()[5 * K + 100] = nan;
                    for (const std::vector<float>* a : {&A, &A_tiny}) {
                        std::vector<float> C(M * N);
                        compressed_gemm(a->data(), M, K, W, N, C.data(), N, 1);
                        for (std::size_t m = 0; m < M; ++m)
                            for (std::size_t n = 0; n < N; ++n) CHECK(std::isnan(C[m * N + n]) == (n == 5));
                    }
                    w.w.data()[5 * K + 100] = kept;
                }
            }
        }
}
