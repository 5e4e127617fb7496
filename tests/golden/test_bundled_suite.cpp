// The bundled golden suite (data/golden): what it covers, and that the reference's two modes
// agree on every file of it.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>

#include "moe/golden/golden_file.hpp"
#include "moe/generator/case_spec.hpp"
#include "moe/reference/interpreter.hpp"
#include "moe/reference/storage_rounding.hpp"
#include "moe/spec/compression.hpp"
#include "bundled_suite.hpp"

using namespace moe;
namespace fs = std::filesystem;
using moe::test::kBundledSuite;
using moe::test::bundled_case;

namespace {

std::vector<golden::GoldenCase> load_suite() {
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(kBundledSuite))
        if (e.path().extension() == ".h5") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    std::vector<golden::GoldenCase> cases;
    for (const auto& f : files) cases.push_back(golden::read_golden(f));
    return cases;
}

bool all_finite(const Problem& p) {
    for (const auto& [n, t] : p.inputs)
        for (double v : t.to_f64())
            if (!std::isfinite(v)) return false;
    return true;
}

// Equal, or both NaN (NaN payloads are not part of the semantics).
bool same_class_and_value(const Tensor& a, const Tensor& b) {
    if (a.shape() != b.shape()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
        const double x = a.get(i), y = b.get(i);
        if (!(x == y || (std::isnan(x) && std::isnan(y)))) return false;
    }
    return true;
}

}  // namespace

TEST_CASE("dense and sparse modes agree bit for bit on every bundled case with finite data") {
    const auto suite = load_suite();
    REQUIRE(suite.size() >= 40);
    std::size_t finite_cases = 0, nonfinite_cases = 0;
    for (const auto& c : suite) {
        CAPTURE(c.problem.name);
        const auto sparse = reference::run(c.problem, {reference::Mode::sparse, false, 2}).output;
        const auto dense = reference::run(c.problem, {reference::Mode::dense, false, 2}).output;
        if (all_finite(c.problem)) {
            ++finite_cases;
            CHECK(sparse == dense);
            CHECK(sparse == c.outputs.at("output"));
        } else {
            ++nonfinite_cases;
            CHECK(same_class_and_value(sparse, c.outputs.at("output")));
            const auto it = c.outputs.find("output_dense");
            CHECK(same_class_and_value(dense, it != c.outputs.end() ? it->second : c.outputs.at("output")));
        }
    }
    CHECK(finite_cases >= 40);
    CHECK(nonfinite_cases >= 2);
}

TEST_CASE("the bundled suite covers what spec/README.md promises") {
    const auto suite = load_suite();
    std::set<std::string> seen;
    auto mark = [&](bool cond, const std::string& what) {
        if (cond) seen.insert(what);
    };
    for (const auto& c : suite) {
        const Problem& p = c.problem;
        const Dims d = validate(p);
        const ResolvedParams r = resolve(p.attributes);
        const bool gemm2 = p.attributes.expert_type == ExpertType::gemm2_bias_swiglu_clamp;
        CHECK_MESSAGE(c.stages.size() == reference::stage_names(p.attributes.expert_type).size(), p.name);
        mark(true, std::string(expert_type_name(p.attributes.expert_type)) + "/" +
                       std::string(convention_name(p.attributes.convention)));
        mark(true, "data " + std::string(dtype_name(p.input(kHiddenStates).dtype())));
        mark(true, "index " + std::string(dtype_name(p.input(kTopkIndices).dtype())));
        mark(true, "hidden rank " + std::to_string(p.input(kHiddenStates).rank()));
        mark(p.input(kTopkIndices).rank() == 3, "indices [B, S, K]");
        mark(gemm2 && p.has(kBias0) && p.has(kBias1), "gemm2 with biases");
        mark(gemm2 && !p.has(kBias0) && !p.has(kBias1), "gemm2 without biases");
        mark(gemm2 && p.has(kBias0) && p.input(kBias0).rank() == 2, "bias [E, N]");
        mark(gemm2 && p.has(kBias0) && p.input(kBias0).rank() == 3, "bias [E, 1, N]");
        mark(gemm2 && r.gate_lane == 0, "gate lane 0");
        mark(gemm2 && r.gate_lane == 1 && p.attributes.convention == Convention::openvino, "gate_idx 1");
        mark(d.T == 0, "T = 0");
        mark(d.T == 1, "T = 1");
        mark(d.T % 2 == 1 && d.T > 1, "odd T");
        mark(d.T > 32 && d.T % 4 != 0 && d.H % 8 != 0 && d.I % 8 != 0, "sizes off every tile");
        mark(d.K == 1, "K = 1");
        mark(d.K == d.E, "K = E");
        mark(!all_finite(p), "NaN/Inf");
        mark(c.outputs.count("output_dense") != 0, "dense reading differs");
        mark(c.exact && gemm2, "exact GEMM2");
        mark(c.exact && !gemm2, "exact GEMM3");
        mark(gemm2 && r.swish_beta == 1.702 && r.clamp_limit == 7.0, "GPT-OSS attributes");
        // Storage-rounding cases (spec/tolerance.md, "Zero tolerance"): for each narrow data type,
        // every stage has values the type lacks in a case where no correct rounding shows.
        const DType data = p.input(kHiddenStates).dtype();
        if (c.exact && (data == DType::bf16 || data == DType::f16) &&
            !reference::storage_rounding_shows(p, c.stages, data, 1))
            for (const auto& [name, t] : c.stages)
                mark(reference::values_storage_lacks({{name, t}}, data) > 0,
                     "storage rounding " + std::string(dtype_name(data)) + " " + name);
        // Compressed weights (spec/compressed.md): every type with both expert types, grouped and
        // per channel, zero points in the weight's type and as f16, every scale layout, exact.
        if (const auto wc = weight_compression(p, kWeight0)) {
            const std::string t = std::string(dtype_name(wc->weight));
            mark(true, "compressed " + t + " " + std::string(expert_type_name(p.attributes.expert_type)));
            mark(wc->groups > 1, "compressed " + t + " per group");
            mark(wc->groups == 1 && wc->scale_rows, "compressed " + t + " per channel");
            mark(wc->zero_point.has_value(), "compressed " + t + " zero point");
            mark(wc->zero_point == DType::f16, "compressed zero point f16");
            mark(wc->zero_point == wc->weight, "compressed zero point in the weight type");
            mark(!wc->scale_rows, "compressed per tensor");
            mark(!wc->scale_rows && wc->groups > 1, "compressed [E, 1, G] with G > 1");
            mark(wc->weight == DType::u4 && wc->scale != DType::f16, "compressed u4 with bf16 or f32 scales");
            mark(p.input("weight_0_scale").rank() == 4, "compressed scale [E, N, G, 1]");
            mark(c.exact, "exact compressed " + t);
            mark(wc->group_size == 128 && d.H == 128 && d.I == 256, "OpenVINO GPU test shape");
            // Each weight its own group size (the scale shapes allow it): a kernel that takes
            // weight_0's for all passes every case whose weights share one.
            for (const char* other : {kWeight1, kWeight2}) {
                const auto oc = weight_compression(p, other);
                if (oc && oc->group_size != wc->group_size)
                    mark(true, std::string("compressed ") + (gemm2 ? "GEMM2" : "GEMM3") + " weights of different group sizes");
            }
        }
        // Expert usage extremes.
        std::vector<std::size_t> count(d.E, 0);
        for (std::size_t i = 0; i < d.T * d.K; ++i) ++count[static_cast<std::size_t>(p.input(kTopkIndices).get_index(i))];
        mark(d.T > 0 && std::count(count.begin(), count.end(), 0) > 0, "an expert with no token");
        mark(d.T > 1 && d.K < d.E && std::count(count.begin(), count.end(), d.T) > 0, "an expert with every token");
        // A grouped GEMM's tiles: one expert with more than one 64-row tile; a 128-entry expert table.
        mark(d.T > 0 && *std::max_element(count.begin(), count.end()) > 64, "an expert with more than 64 rows");
        mark(d.E > 128, "E > 128");
        // Routing scenarios (catalogue routing keys): router front-ends are named in the
        // description, the load scenarios by case-name prefix and checked on the indices.
        for (const char* router : {"softmax_topk", "topk_softmax", "sigmoid_bias", "group_limited"})
            if (c.description.find(std::string("[routing: router ") + router + ",") != std::string::npos) {
                mark(true, std::string("router ") + router);
                mark(d.T == 1, std::string("router ") + router + " at T = 1");
            }
        auto prefixed = [&](const char* prefix) { return p.name.rfind(prefix, 0) == 0; };
        if (prefixed("route_balanced") && d.T > 1) {
            CHECK_MESSAGE(std::count(count.begin(), count.end(), d.T * d.K / d.E) == static_cast<std::ptrdiff_t>(d.E), p.name);
            mark(true, "balanced load");
        }
        mark(prefixed("route_zipf") && d.T >= 64, "Zipf skew at T = 64");
        if (prefixed("route_hot_expert")) {
            CHECK_MESSAGE(*std::max_element(count.begin(), count.end()) > d.T / 2, p.name);
            mark(true, "hot expert");
        }
        if (prefixed("route_shared_expert") && d.T > 0) {
            const auto shared = p.input(kTopkIndices).get_index(0);
            bool every = true;
            for (std::size_t t = 0; t < d.T; ++t) every &= p.input(kTopkIndices).get_index(t * d.K) == shared;
            CHECK_MESSAGE(every, p.name);
            mark(every, "shared expert");
        }
        if (prefixed("route_capacity")) {
            const auto pos = c.description.find(" dropped pairs]");
            const auto start = c.description.rfind(", ", pos);
            REQUIRE_MESSAGE((pos != std::string::npos && start != std::string::npos), p.name);
            const auto dropped = std::stoul(c.description.substr(start + 2, pos - start - 2));
            std::size_t zeros = 0;
            const Tensor& w = p.input(kRoutingWeights);
            if (w.shape() == p.input(kTopkIndices).shape())
                for (std::size_t i = 0; i < w.size(); ++i) zeros += w.get(i) == 0.0;
            CHECK_MESSAGE(zeros == dropped, p.name);
            mark(dropped > 0, "capacity drops");
        }
        // GEMM2: the minimum (gate > L) and both clamp edges (lin > L, lin < -L) are reached.
        // (A limit of +inf clamps nothing: there is no edge to reach.)
        mark(gemm2 && std::isinf(r.clamp_limit), "clamp limit +inf");
        if (gemm2 && d.T > 0 && all_finite(p) && r.clamp_limit > 0 && !std::isinf(r.clamp_limit)) {
            const Tensor& gu = c.stages.at("gate_up");
            bool min_active = false, clamp_hi = false, clamp_lo = false;
            for (std::size_t i = 0; i < gu.size(); i += 2) {
                const double gate = gu.get(i + r.gate_lane), lin = gu.get(i + 1 - r.gate_lane);
                min_active |= gate > r.clamp_limit;
                clamp_hi |= lin > r.clamp_limit;
                clamp_lo |= lin < -r.clamp_limit;
            }
            mark(min_active && clamp_hi && clamp_lo, "minimum and clamp active");
            if (r.swish_beta == 1.702) CHECK_MESSAGE(min_active, p.name);
        }
    }
    for (const char* want :
         {"GEMM2_BIAS_SWIGLU_CLAMP/spec", "GEMM2_BIAS_SWIGLU_CLAMP/openvino", "GEMM3_SWIGLU/spec", "GEMM3_SWIGLU/openvino",
          "data f32", "data f16", "data bf16", "data f64", "index i32", "index i64", "hidden rank 2", "hidden rank 3",
          "indices [B, S, K]", "gemm2 with biases", "gemm2 without biases", "bias [E, N]", "bias [E, 1, N]", "gate lane 0",
          "gate_idx 1", "T = 0", "T = 1", "odd T", "sizes off every tile", "K = 1", "K = E", "NaN/Inf",
          "dense reading differs", "exact GEMM2", "exact GEMM3", "GPT-OSS attributes", "an expert with no token",
          "an expert with every token", "minimum and clamp active", "router softmax_topk", "router topk_softmax",
          "router sigmoid_bias", "router group_limited", "router softmax_topk at T = 1", "router topk_softmax at T = 1",
          "router sigmoid_bias at T = 1", "router group_limited at T = 1", "balanced load", "Zipf skew at T = 64",
          "hot expert", "shared expert", "capacity drops", "compressed zero point f16",
          "compressed zero point in the weight type", "compressed per tensor", "compressed scale [E, N, G, 1]",
          "OpenVINO GPU test shape", "exact compressed f4e2m1", "compressed [E, 1, G] with G > 1",
          "compressed u4 with bf16 or f32 scales", "an expert with more than 64 rows", "E > 128", "clamp limit +inf",
          "compressed GEMM2 weights of different group sizes", "compressed GEMM3 weights of different group sizes"}) {
        CHECK_MESSAGE(seen.count(want), "the bundled suite has no case with: ", want);
    }
    for (const char* t : {"u8", "i8", "u4", "i4", "f4e2m1", "f8e4m3", "f8e5m2"}) {
        const std::string type = t;
        for (const char* et : {"GEMM2_BIAS_SWIGLU_CLAMP", "GEMM3_SWIGLU"})
            CHECK_MESSAGE(seen.count("compressed " + type + " " + et), "no compressed case: ", type, " ", et);
        CHECK_MESSAGE(seen.count("compressed " + type + " per group"), "no grouped case: ", type);
        CHECK_MESSAGE(seen.count("exact compressed " + type), "no exact compressed case: ", type);
        if (type == "f4e2m1") continue;  // MXFP4's blocks are 32: no per-channel form
        CHECK_MESSAGE(seen.count("compressed " + type + " per channel"), "no per-channel case: ", type);
        if (type[0] != 'f') CHECK_MESSAGE(seen.count("compressed " + type + " zero point"), "no zero point: ", type);
    }
    for (const char* t : {"bf16", "f16"})
        for (const char* stage : {"gate_up", "gate", "up", "act", "down"})
            CHECK_MESSAGE(seen.count(std::string("storage rounding ") + t + " " + stage), "no storage-rounding case: ", t,
                          " ", stage);
}

TEST_CASE("the catalogue's full tier holds the model-shaped cases") {
    const auto cases = generator::load_catalog(fs::path(MOE_SOURCE_DIR) / "conformance/catalog/bundled.json");
    bool gptoss = false, qwen = false;
    for (const auto& c : cases) {
        gptoss |= c.tier == "full" && c.hidden == 2880 && c.inter == 2880 && c.experts == 32 && c.topk == 4;
        qwen |= c.tier == "full" && c.hidden == 2048 && c.inter == 768 && c.experts == 128 && c.topk == 8;
        // Every case of the quick and ci tiers is bundled.
        if (c.tier != "full") CHECK_MESSAGE(fs::exists(bundled_case(c.name + ".h5")), c.name);
    }
    CHECK(gptoss);
    CHECK(qwen);
}
