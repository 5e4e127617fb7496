// The opencl backend's kernels one at a time (moe/backends/opencl_testing.hpp), each on inputs
// taken from the reference's stage data and checked against the next stage: gather, the first
// GEMM(s) and the down GEMM per expert and over all experts in one launch, SwiGLU,
// scatter-reduce. Cases: an empty expert, one expert taking every token (45: a full block of
// moe_gemm_small plus a remainder for moe_gemm_rows), T = 1, T = 8 (decode: every expert's rows
// go to moe_gemm_rows), T = 45 (no tile divides it: partial blocks of moe_gemm_small), 56
// tokens on one expert (a partial block of moe_gemm), 70 tokens on one expert (a full block of
// moe_gemm plus a remainder of a few rows for moe_gemm_rows), and H = 200, I = 70 (several
// column tiles of either block shape and several k-steps, so the double-buffered loop
// alternates); both expert types, both weight layouts (conventions spec and openvino; NK
// weights are on the device twice: as given, streamed by moe_gemm_rows_*_nk in the decode and
// remainder cases (T = 1: the one-row variant; remainders of 5-8 rows: the full one), and
// transposed for the tiled kernels).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>

#include "moe/backends/opencl_backend.hpp"
#include "moe/backends/opencl_testing.hpp"
#include "moe/backends/routing_plan.hpp"
#include "conformance_check.hpp"
#include "moe/generator/synthesize.hpp"
#include "moe/reference/interpreter.hpp"
#include "moe/spec/compression.hpp"
#include "small_cases.hpp"

using namespace moe;
namespace oclt = backends::opencl_testing;

namespace {

// Largest |got - want| over the largest |want| (or absolute when want is all zeros).
double rel_diff(const std::vector<float>& got, const std::vector<double>& want) {
    REQUIRE(got.size() == want.size());
    double scale = 0, diff = 0;
    for (std::size_t i = 0; i < want.size(); ++i) {
        scale = std::max(scale, std::fabs(want[i]));
        diff = std::max(diff, std::fabs(double(got[i]) - want[i]));
    }
    return scale > 0 ? diff / scale : diff;
}

// Rows of a [T, K, width] stage in the plan's order, for plan pairs [begin, begin + count).
std::vector<double> stage_rows(const Tensor& stage, const backends::RoutingPlan& plan, std::size_t begin,
                               std::size_t count) {
    const std::size_t width = stage.shape().back();
    std::vector<double> v;
    v.reserve(count * width);
    for (std::size_t r = begin; r < begin + count; ++r) {
        const std::size_t row = std::size_t(plan.token[r]) * plan.topk + plan.slot[r];
        for (std::size_t j = 0; j < width; ++j) v.push_back(stage.get(row * width + j));
    }
    return v;
}

std::vector<float> to_f32(const std::vector<double>& v) { return std::vector<float>(v.begin(), v.end()); }

struct Case {
    const char* what;
    std::size_t T;
    std::vector<std::size_t> exclude, always;
    std::size_t H = 33, I = 19;  // no dimension is a multiple of a tile
};

const std::vector<Case>& cases() {
    static const std::vector<Case> list = {
        {"empty experts 1 and 3", 45, {1, 3}, {}},
        {"expert 0 takes every token", 45, {}, {0}},
        {"T = 1", 1, {}, {}},
        {"T = 8 (decode: moe_gemm_rows only)", 8, {}, {}},
        {"T = 45", 45, {}, {}},
        {"expert 0 takes 56 tokens (a partial moe_gemm block)", 56, {}, {0}},
        {"expert 0 takes 70 tokens (a block and a few-row remainder)", 70, {}, {0}},
        // GPU bodies (MOE_OPENCL_GEMM=wide): 64 + 26 rows (a small block and a tiny tile), the
        // other experts about 22 rows each (tiny tiles); 128 + 12 rows (a big block, a tiny tile).
        {"expert 0 takes 90 tokens (a small block and a tiny remainder)", 90, {}, {0}},
        {"expert 0 takes 140 tokens (a big block and a tiny remainder)", 140, {}, {0}},
        {"H = 200, I = 70 (several column tiles and k-steps)", 45, {}, {}, 200, 70},
        {"T = 3, H = 600 (decode GEMMs over more than two of the NK rows kernel's k-steps)", 3, {}, {}, 600, 70},
        // GPU bodies: rows of 298 floats (1192 bytes) are not all 16-byte aligned, so the NK rows
        // kernel's whole k-step takes vloadn rather than whole-vector loads.
        {"T = 3, H = 298 (decode: a whole k-step on rows not 16-byte aligned, then a partial one)", 3, {}, {}, 298, 70},
    };
    return list;
}

// Every kernel of the pipeline on one problem, against the reference's stages.
void check_kernels(const Problem& p) {
    const auto ref = reference::run(p, {reference::Mode::sparse, true, 1});
    const ResolvedParams rp = resolve(p.attributes);
    const bool gemm2 = p.attributes.expert_type == ExpertType::gemm2_bias_swiglu_clamp;
    const bool kn = rp.weight_layout == WeightLayout::KN;
    const Tensor& x = p.input(kHiddenStates);
    const Tensor& idx = p.input(kTopkIndices);
    const std::size_t H = x.shape().back(), E = p.input(kWeight0).shape()[0];
    const auto plan = backends::make_routing_plan(idx, E);
    const std::size_t T = plan.tokens, K = plan.topk, pairs = T * K;
    const Tensor& act = ref.stages.at("act");
    const std::size_t I = act.shape().back();

    // gather: row r is x[token[r]], widened exactly.
    const auto gathered = oclt::gather(x, plan.token);
    {
        std::vector<double> want;
        for (std::size_t r = 0; r < pairs; ++r)
            for (std::size_t h = 0; h < H; ++h) want.push_back(x.get(std::size_t(plan.token[r]) * H + h));
        CHECK(rel_diff(gathered, want) == 0.0);
    }

    // First GEMM(s) and down GEMM, one expert at a time, every expert (the empty ones too: M = 0).
    const Tensor* b0 = gemm2 && p.has(kBias0) ? &p.input(kBias0) : nullptr;
    const Tensor* b1 = gemm2 && p.has(kBias1) ? &p.input(kBias1) : nullptr;
    for (std::size_t e = 0; e < E; ++e) {
        CAPTURE(e);
        const std::size_t begin = plan.offsets[e], M = plan.counts[e];
        const std::vector<float> A(gathered.begin() + std::ptrdiff_t(begin * H),
                                   gathered.begin() + std::ptrdiff_t((begin + M) * H));
        const auto first = oclt::gemm(A, M, p.input(kWeight0), kn, e, b0);
        CHECK(rel_diff(first, stage_rows(ref.stages.at(gemm2 ? "gate_up" : "gate"), plan, begin, M)) < 2e-5);
        if (!gemm2) {
            const auto up = oclt::gemm(A, M, p.input(kWeight1), kn, e);
            CHECK(rel_diff(up, stage_rows(ref.stages.at("up"), plan, begin, M)) < 2e-5);
        }
        const auto act_rows = to_f32(stage_rows(act, plan, begin, M));
        const auto down = oclt::gemm(act_rows, M, p.input(gemm2 ? kWeight1 : kWeight2), kn, e, b1);
        CHECK(rel_diff(down, stage_rows(ref.stages.at("down"), plan, begin, M)) < 2e-5);
    }

    // The same GEMMs over every expert in one launch per kernel, as the pipeline runs them.
    {
        const auto first = oclt::gemm_experts(gathered, plan.counts, p.input(kWeight0), kn, b0);
        CHECK(rel_diff(first, stage_rows(ref.stages.at(gemm2 ? "gate_up" : "gate"), plan, 0, pairs)) < 2e-5);
        if (!gemm2) {
            const auto up = oclt::gemm_experts(gathered, plan.counts, p.input(kWeight1), kn);
            CHECK(rel_diff(up, stage_rows(ref.stages.at("up"), plan, 0, pairs)) < 2e-5);
        }
        const auto act_rows = to_f32(stage_rows(act, plan, 0, pairs));
        const auto down = oclt::gemm_experts(act_rows, plan.counts, p.input(gemm2 ? kWeight1 : kWeight2), kn, b1);
        CHECK(rel_diff(down, stage_rows(ref.stages.at("down"), plan, 0, pairs)) < 2e-5);
    }

    // SwiGLU on the reference's first-GEMM values of every pair ([T, K] order).
    {
        const Tensor& f = ref.stages.at(gemm2 ? "gate_up" : "gate");
        std::vector<float> first(f.size()), up;
        for (std::size_t i = 0; i < f.size(); ++i) first[i] = float(f.get(i));
        if (!gemm2) {
            const Tensor& u = ref.stages.at("up");
            for (std::size_t i = 0; i < u.size(); ++i) up.push_back(float(u.get(i)));
        }
        const auto got = oclt::swiglu(first, up, pairs, I, gemm2, float(rp.swish_beta), float(rp.clamp_limit),
                                      rp.gate_lane);
        std::vector<double> want(act.size());
        for (std::size_t i = 0; i < act.size(); ++i) want[i] = act.get(i);
        CHECK(rel_diff(got, want) < 1e-5);
    }

    // Scatter-reduce of the reference's down rows (in plan order) with the routing weights.
    {
        const Tensor& rw = p.input(kRoutingWeights);
        std::vector<float> slot_weight(pairs);
        for (std::size_t i = 0; i < pairs; ++i) {
            const std::size_t flat = rp.routing_layout == RoutingLayout::compact
                                         ? i
                                         : static_cast<std::size_t>(idx.get_index(i)) * T + i / K;
            slot_weight[i] = float(rw.get(flat));
        }
        const auto down = to_f32(stage_rows(ref.stages.at("down"), plan, 0, pairs));
        const std::vector<std::uint32_t> position(plan.position.begin(), plan.position.end());
        const auto got = oclt::scatter_reduce(down, slot_weight, position, T, K, H);
        std::vector<double> want(ref.output.size());
        for (std::size_t i = 0; i < want.size(); ++i) want[i] = ref.output.get(i);
        CHECK(rel_diff(got, want) < 2e-5);
    }
}

// Compressed weights for the compressed kernels' tests: the code type, group size (0: per
// channel), zero point of the weight's type or none, I, the scales' layout; scales in f16 (E8M0
// for MXFP4, f32 for E4M3, as those formats come).
struct CompressedWeights {
    DType type;
    std::size_t gs;
    bool zp;
    std::size_t I = 64;
    generator::CompressionSpec::ScaleLayout layout = generator::CompressionSpec::ScaleLayout::ENG;
};

// A problem with H = 64, E = 4, K = 2 and the weights of `w`.
Problem compressed_problem(const CompressedWeights& w, ExpertType et, std::size_t T, DType data) {
    auto spec = test::small_spec(et, Convention::openvino, T, 64, w.I, 4, 2, data);
    spec.attributes = attributes_for(et, Convention::openvino, 1.702, 7.0);
    generator::CompressionSpec cs;
    cs.type = w.type;
    cs.group_size = w.gs;
    cs.scale_dtype = w.type == DType::f4e2m1 ? DType::f8e8m0 : w.type == DType::f8e4m3 ? DType::f32 : DType::f16;
    if (w.zp) cs.zero_point = generator::CompressionSpec::ZeroPoint::weight_type;
    cs.scale_layout = w.layout;
    spec.compression = cs;
    return generator::synthesize(spec);
}

}  // namespace

TEST_CASE("opencl kernels one by one against the reference's stages") {
    backends::OpenclBackend b;
    REQUIRE_MESSAGE(b.availability().available, b.availability().reason);
    for (auto type : {ExpertType::gemm2_bias_swiglu_clamp, ExpertType::gemm3_swiglu}) {
        for (auto conv : {Convention::spec, Convention::openvino}) {
            for (const auto& c : cases()) {
                CAPTURE(expert_type_name(type));
                CAPTURE(convention_name(conv));
                CAPTURE(c.what);
                auto spec = test::small_spec(type, conv, c.T, c.H, c.I, 5, 2, DType::f32);
                spec.routing.exclude = c.exclude;
                spec.routing.always = c.always;
                const Problem p = generator::synthesize(spec);
                const auto plan = backends::make_routing_plan(p.input(kTopkIndices), 5);
                for (std::size_t e : c.exclude) REQUIRE(plan.counts[e] == 0);
                for (std::size_t e : c.always) REQUIRE(plan.counts[e] == c.T);
                check_kernels(p);
            }
        }
    }
}

TEST_CASE("opencl kernels: weights read in their own type (f16, bf16), both layouts") {
    for (auto dtype : {DType::f16, DType::bf16}) {
        for (auto conv : {Convention::spec, Convention::openvino}) {
            // H = 600: the GPU bodies' NK rows kernel over two whole k-steps of 256 and a partial
            // third, with whole-vector loads (1200-byte rows); H = 300: one whole step with vloadn
            // (600-byte rows, not all 16-byte aligned) and a partial one; H = 33 a single partial step.
            for (std::size_t H : {33u, 300u, 600u})
                for (std::size_t T : {8u, 45u}) {  // moe_gemm_rows only; mostly moe_gemm
                    CAPTURE(dtype_name(dtype));
                    CAPTURE(convention_name(conv));
                    CAPTURE(T);
                    CAPTURE(H);
                    // The reference widens the stored f16/bf16 values exactly, and so do the kernels.
                    const Problem p =
                        test::small_problem(ExpertType::gemm2_bias_swiglu_clamp, conv, T, H, 19, 5, 2, dtype);
                    check_kernels(p);
                }
        }
    }
}

TEST_CASE("opencl testing hooks: one kernel launch on host data") {
    // A 2 x 3 block times expert 1 of a [2, 2, 3] NK weight tensor, plus its bias.
    const Tensor w = Tensor::from_f64(DType::f32, {2, 2, 3}, {0, 0, 0, 0, 0, 0, 1, 2, 3, -1, 0, 1});
    const Tensor bias = Tensor::from_f64(DType::f32, {2, 2}, {0, 0, 0.5, -0.5});
    const auto c = oclt::gemm({1, 1, 1, 2, 0, -1}, 2, w, false, 1, &bias);
    CHECK(c == std::vector<float>{6.5f, -0.5f, -0.5f, -3.5f});
    CHECK(oclt::gemm({}, 0, w, false, 0).empty());
    const Tensor x = Tensor::from_f64(DType::bf16, {3, 2}, {1, 2, 3, 4, 5, 6});
    CHECK(oclt::gather(x, {2, 0, 2}) == std::vector<float>{5, 6, 1, 2, 5, 6});
}

TEST_CASE("opencl prepare(): weights uploaded once and reused for the same problem only; kernel times") {
    backends::OpenclBackend b;
    REQUIRE_MESSAGE(b.availability().available, b.availability().reason);
    const Problem p = test::small_problem(ExpertType::gemm2_bias_swiglu_clamp, Convention::openvino, 45, 33, 19, 5, 2);
    const Problem q = test::small_problem(ExpertType::gemm3_swiglu, Convention::spec, 9, 33, 19, 5, 2);
    const auto fresh = b.run(p, false).output;
    b.prepare(p);
    const auto prepared = b.run(p, false).output;
    for (std::size_t i = 0; i < fresh.size(); ++i) REQUIRE(prepared.get(i) == fresh.get(i));
    // Another problem after prepare(p) is uploaded as it runs, and is right.
    CHECK(test::verdict(test::golden_case(q), b.run(q, false).output, b.precision(DType::f32)) == "PASS");
    const auto times = b.last_kernel_times();
    for (const char* k : {"moe_mask_gen", "moe_gather", "moe_scatter_reduce"}) {
        CAPTURE(k);
        REQUIRE(times.count(k) == 1);
        CHECK(times.at(k) >= 0.0);
    }
    // q is decode-like with NK weights: the first GEMM's rows kernels store the activation, and
    // no moe_swiglu runs (opencl_pipeline.hpp, PipelineOptions::fuse).
    CHECK(times.count("moe_swiglu") == 0);
    // q's experts have 1-8 rows each: its GEMMs run as moe_gemm_rows (the few-rows kernel).
    REQUIRE(times.count("moe_gemm_rows") == 1);
    CHECK(times.at("moe_gemm_rows") > 0.0);
    // p (T = 45, about 18 rows per expert) runs as moe_gemm_small (blocks of fewer rows).
    b.run(p, false);
    REQUIRE(b.last_kernel_times().count("moe_gemm_small") == 1);
    CHECK(b.last_kernel_times().at("moe_gemm_small") > 0.0);
    // 70 tokens on expert 0: a full block of moe_gemm, a few-row remainder; the others' rows in
    // small blocks or moe_gemm_rows.
    auto spec = test::small_spec(ExpertType::gemm3_swiglu, Convention::spec, 70, 33, 19, 5, 2, DType::f32);
    spec.routing.always = {0};
    b.run(generator::synthesize(spec), false);
    for (const char* k : {"moe_gemm", "moe_gemm_small", "moe_gemm_rows"}) {
        CAPTURE(k);
        REQUIRE(b.last_kernel_times().count(k) == 1);
    }
}

TEST_CASE("opencl, compressed weights: decode tiles in moe_gemm_compressed_rows, 1 to 8 rows") {
    // H = I = 64: K and the group sizes 16, 32 are multiples of 16, so the few-row tiles run in
    // moe_gemm_compressed_rows* (lane groups on the GPU bodies, 4 columns a work-item on a CPU);
    // groups of 8 do not, and run in moe_gemm_compressed (moe_gemm_compressed_tiled on the GPU
    // bodies). Per channel with I = 40: the first GEMM (K = 64) runs in moe_gemm_compressed_rows*
    // with N = 40 or 80 columns, not a multiple of a work-group's 16 (one scale row shared by all
    // N in one of them), the down GEMM (K = 40) in the other kernel.
    backends::OpenclBackend b;
    REQUIRE_MESSAGE(b.availability().available, b.availability().reason);
    using W = CompressedWeights;
    const W weights[] = {{DType::u4, 32, true}, {DType::u4, 16, false}, {DType::i4, 32, false}, {DType::i4, 16, true},
                         {DType::f4e2m1, 32, false}, {DType::u8, 32, true}, {DType::i8, 16, false},
                         {DType::f8e4m3, 32, false}, {DType::f8e5m2, 16, false}, {DType::u4, 8, true},
                         {DType::u4, 0, true, 40, generator::CompressionSpec::ScaleLayout::E1G},
                         {DType::f8e4m3, 0, false, 40}};
    for (const W& w : weights)
        for (std::size_t T = 1; T <= 8; ++T)
            for (ExpertType et : {ExpertType::gemm2_bias_swiglu_clamp, ExpertType::gemm3_swiglu}) {
                if (T % 2 == 0 && et == ExpertType::gemm3_swiglu) continue;
                const Problem p = compressed_problem(w, et, T, DType::bf16);
                CAPTURE(dtype_name(w.type));
                CAPTURE(w.I);
                CAPTURE(w.gs);
                CAPTURE(w.zp);
                CAPTURE(T);
                CHECK(test::verdict(test::golden_case(p), b.run(p, false).output, b.precision_for(p)) == "PASS");
                const auto times = b.last_kernel_times();
                CHECK(times.count("moe_gemm_compressed_rows") == (w.gs % 16 == 0 ? 1u : 0u));
                const bool wide = b.description().find("GPU bodies") != std::string::npos;
                const bool all_rows = w.gs % 16 == 0 && w.I % 16 == 0;
                CHECK(times.count(wide ? "moe_gemm_compressed_tiled" : "moe_gemm_compressed") == (all_rows ? 0u : 1u));
                CHECK(times.count(wide ? "moe_gemm_compressed" : "moe_gemm_compressed_tiled") == 0u);
            }
}

TEST_CASE("opencl, compressed weights: one program per kind of weight, each built once") {
    // The compressed GEMMs are compiled with the weight, scale and zero-point types as constants
    // (Runtime::build_compressed): a problem whose weights are of two kinds (u4 with f16 scales and
    // u4 zero points, MXFP4) builds two programs in prepare(), its runs and later problems of
    // those kinds build nothing, and a new kind builds one more.
    backends::OpenclBackend b;
    REQUIRE_MESSAGE(b.availability().available, b.availability().reason);
    const auto builds = [&](const char* what) {
        const std::string d = b.description();
        std::size_t n = 0;
        for (auto at = d.find(what); at != std::string::npos; at = d.find(what, at + 1)) ++n;
        return n;
    };
    const auto mixed = [](std::size_t T) {
        Problem p = compressed_problem({DType::u4, 32, true}, ExpertType::gemm3_swiglu, T, DType::bf16);
        const Problem mx = compressed_problem({DType::f4e2m1, 32, false}, ExpertType::gemm3_swiglu, T, DType::bf16);
        p.inputs.at(kWeight1) = mx.inputs.at(kWeight1);
        p.inputs.at(scale_input(kWeight1)) = mx.inputs.at(scale_input(kWeight1));
        p.inputs.erase(zero_point_input(kWeight1));
        return p;
    };
    const Problem p = mixed(1);
    b.prepare(p);
    CHECK(builds("compressed-weight GEMMs") == 2);
    CHECK(builds("[u4, f16 scales, u4 zero points]") == 1);
    CHECK(builds("[f4e2m1, f8e8m0 scales]") == 1);
    CHECK(test::verdict(test::golden_case(p), b.run(p, false).output, b.precision_for(p)) == "PASS");
    CHECK(b.last_kernel_times().count("moe_gemm_compressed_rows") == 1u);
    const Problem q = mixed(3);  // not prepared: runs with the programs built for p
    CHECK(test::verdict(test::golden_case(q), b.run(q, false).output, b.precision_for(q)) == "PASS");
    CHECK(builds("compressed-weight GEMMs") == 2);
    const Problem r = compressed_problem({DType::i8, 16, false}, ExpertType::gemm2_bias_swiglu_clamp, 2, DType::bf16);
    CHECK(test::verdict(test::golden_case(r), b.run(r, false).output, b.precision_for(r)) == "PASS");
    CHECK(builds("compressed-weight GEMMs") == 3);
    CHECK(builds("[i8, f16 scales]") == 1);
}

TEST_CASE("opencl, compressed weights: rows of 16 groups and more (the parameters read 16 at a time)") {
    // The few-row kernels' CPU body reads a row's scales and zero points 16 groups at a time with
    // vector conversions, and the last (groups % 16) one at a time; the other cases' rows have
    // fewer than 16 groups. H = 544 in groups of 16: 34 groups a row of the first GEMM (two
    // vector reads and two single ones); in groups of 32: 17; H = 512 in groups of 32: 16 (one
    // vector read). Every
    // scale type and zero-point type the conversions take; the f16 scales of the first GEMM
    // scaled by 2^-12, most of them subnormal (their own branch of the f16 conversion), so a
    // wrong exponent there fails the case.
    backends::OpenclBackend b;
    REQUIRE_MESSAGE(b.availability().available, b.availability().reason);
    using ZP = generator::CompressionSpec::ZeroPoint;
    struct W {
        DType type;
        std::size_t H, gs;
        DType scale;
        ZP zp;
    };
    const W weights[] = {{DType::u4, 544, 16, DType::f16, ZP::weight_type}, {DType::i4, 544, 16, DType::bf16, ZP::f16},
                         {DType::i4, 512, 32, DType::f32, ZP::weight_type}, {DType::u8, 544, 16, DType::f32, ZP::weight_type},
                         {DType::i8, 512, 32, DType::f16, ZP::weight_type}, {DType::u4, 512, 32, DType::bf16, ZP::none},
                         {DType::f4e2m1, 544, 32, DType::f8e8m0, ZP::none}, {DType::f4e2m1, 512, 32, DType::f8e8m0, ZP::none}};
    for (const W& w : weights)
        for (std::size_t T : {1, 3}) {
            auto spec = test::small_spec(ExpertType::gemm3_swiglu, Convention::openvino, T, w.H, 64, 4, 2, DType::f32);
            generator::CompressionSpec cs;
            cs.type = w.type;
            cs.group_size = w.gs;
            cs.scale_dtype = w.scale;
            cs.zero_point = w.zp;
            spec.compression = cs;
            Problem p = generator::synthesize(spec);
            if (w.scale == DType::f16) {
                Tensor& s = p.inputs.at(scale_input(kWeight0));
                std::size_t subnormal = 0;
                for (std::size_t i = 0; i < s.size(); ++i) {
                    s.set(i, s.get(i) * 0x1p-12);
                    subnormal += s.get(i) != 0 && std::fabs(s.get(i)) < 0x1p-14;
                }
                REQUIRE(subnormal > s.size() / 2);
            }
            CAPTURE(dtype_name(w.type));
            CAPTURE(w.H);
            CAPTURE(cs.group_size);
            CAPTURE(dtype_name(w.scale));
            CAPTURE(static_cast<int>(w.zp));
            CAPTURE(T);
            CHECK(test::verdict(test::golden_case(p), b.run(p, false).output, b.precision_for(p)) == "PASS");
            CHECK(b.last_kernel_times().count("moe_gemm_compressed_rows") == 1u);
        }
}

TEST_CASE("opencl, compressed weights: experts of more than 8 rows (prefill)") {
    // On the CPU bodies every expert's rows run in moe_gemm_compressed_rows*, in pieces of at most
    // 8 rows (8, 8, ..., then the rest in the 1, 2, 4 or 8-row kernel), each piece reading the
    // expert's weights again; moe_gemm_compressed takes only what the few-row kernels cannot
    // (groups of 8). The GPU bodies (MOE_OPENCL_GEMM=wide) run blocks of rows, and with groups
    // of 8 every tile, in moe_gemm_compressed_tiled. Expert 0 takes every token, so it has T rows: 45 = 5 pieces of 8 and
    // one of 5, 20 = 8 + 8 + 4; the other experts share the second choice.
    backends::OpenclBackend b;
    REQUIRE_MESSAGE(b.availability().available, b.availability().reason);
    const CompressedWeights weights[] = {{DType::u4, 32, true, 96}, {DType::f4e2m1, 32, false, 96},
                                         {DType::i8, 0, false, 96}, {DType::f8e5m2, 16, false, 96},
                                         {DType::u4, 8, true, 96}};
    for (const CompressedWeights& w : weights)
        for (std::size_t T : {20, 45})
            for (ExpertType et : {ExpertType::gemm2_bias_swiglu_clamp, ExpertType::gemm3_swiglu}) {
                Problem p = compressed_problem(w, et, T, DType::f32);
                // Expert 0 first in every token (the openvino convention routes by the indices as given).
                Tensor& idx = p.inputs.at(kTopkIndices);
                for (std::size_t t = 0; t < T; ++t)
                    if (idx.get(t * 2 + 1) == 0) idx.set(t * 2 + 1, idx.get(t * 2));
                for (std::size_t t = 0; t < T; ++t) idx.set(t * 2, 0);
                CAPTURE(dtype_name(w.type));
                CAPTURE(w.gs);
                CAPTURE(T);
                CAPTURE(static_cast<int>(et));
                CHECK(test::verdict(test::golden_case(p), b.run(p, false).output, b.precision_for(p)) == "PASS");
                const bool wide = b.description().find("GPU bodies") != std::string::npos;
                const bool rows_ok = w.gs % 16 == 0;  // K = 64 and I = 96 are multiples of 16
                const auto times = b.last_kernel_times();
                CHECK(times.count("moe_gemm_compressed_rows") == (rows_ok ? 1u : 0u));
                CHECK(times.count("moe_gemm_compressed") == (rows_ok || wide ? 0u : 1u));
                CHECK(times.count("moe_gemm_compressed_tiled") == (wide ? 1u : 0u));
            }
}
