// The cpu backend on compressed weights (spec/compressed.md): the decode kernels that read the
// stored bytes (every type, with and without zero points, groups of 32 and more, 1 to 8 rows), the
// portable path (other group sizes), and prefill on weights dequantised by prepare() or per call,
// each judged by the product's comparison with the backend's declared precision; the result does
// not depend on the thread count.
#include <doctest/doctest.h>

#include "conformance_check.hpp"
#include "moe/backends/cpu_backend.hpp"
#include "moe/generator/synthesize.hpp"
#include "moe/spec/compression.hpp"
#include "small_cases.hpp"

using namespace moe;
using moe::backends::CpuBackend;
using moe::backends::CpuOptions;

namespace {

Problem compressed_problem(ExpertType type, DType wtype, std::size_t gs, bool zp, std::size_t T, DType data = DType::f32) {
    auto spec = test::small_spec(type, Convention::openvino, T, 64, 64, 4, 2, data);
    spec.attributes = attributes_for(type, Convention::openvino, 1.702, 7.0);
    generator::CompressionSpec cs;
    cs.type = wtype;
    cs.group_size = wtype == DType::f4e2m1 ? kMxBlock : gs;
    cs.scale_dtype = wtype == DType::f4e2m1 ? DType::f8e8m0 : wtype == DType::f8e4m3 ? DType::f32 : DType::f16;
    if (zp) cs.zero_point = generator::CompressionSpec::ZeroPoint::weight_type;
    spec.compression = cs;
    return generator::synthesize(spec);
}

std::string cpu_verdict(const Problem& p, int threads, bool prepare, Tensor* out = nullptr) {
    CpuBackend cpu(CpuOptions{threads});
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

TEST_CASE("cpu declares f32 dequantisation for compressed weights") {
    const CpuBackend cpu;
    CHECK(cpu.precision(DType::f32).dequant_type() == DType::f32);
    CHECK(cpu.precision(DType::bf16).dequant_type() == DType::f32);
    CHECK(cpu.precision(DType::f64).dequant_type() == DType::f64);
}
