// The catalogue's op parameters and value types (spec/catalog-format.md): a clamp limit of "inf"
// (+Inf is allowed: no clamping), the non-finite values the spec refuses, and every value of the
// wrong JSON type refused with the catalogue, the case and the key's path named, never with a
// JSON library's exception text.
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "moe/generator/case_spec.hpp"
#include "moe/spec/error.hpp"
#include "catalog_text.hpp"
#include "temp_dir.hpp"
#include "text_contains.hpp"

using namespace moe;
using namespace moe::generator;
using moe::test::has;

namespace {

const double kInf = std::numeric_limits<double>::infinity();

// One case `c` of the given type and convention with `more` (JSON members, each with a leading ", ").
std::string catalog(const std::string& more, const std::string& type = "GEMM2_BIAS_SWIGLU_CLAMP",
                    const std::string& convention = "openvino") {
    return R"({"format": "moe-catalog", "format_version": 1, "cases": [{"name": "c", "expert_type": ")" + type +
           R"(", "convention": ")" + convention +
           R"(", "seed": 7, "shape": {"tokens": 4, "hidden": 8, "inter": 4, "experts": 4, "topk": 2})" + more + "}]}";
}

std::vector<CaseSpec> load_text(const std::string& text) { return moe::test::load_catalog_text(text); }

std::string load_error(const std::string& text) { return moe::test::catalog_text_error(text); }

}  // namespace

TEST_CASE("catalogue: a clamp limit of \"inf\" is read as +Inf, in params and in either convention's attribute") {
    // Before: params' values were taken with json::value(), so a string was an nlohmann type_error.
    for (const char* conv : {"openvino", "spec"}) {
        CAPTURE(conv);
        const auto c = load_text(catalog(R"(, "params": {"swish_beta": 1.702, "clamp_limit": "inf"})",
                                         "GEMM2_BIAS_SWIGLU_CLAMP", conv));
        REQUIRE(c.size() == 1);
        const ResolvedParams r = resolve(c[0].attributes);
        CHECK(r.clamp_limit == kInf);
        CHECK(r.swish_beta == 1.702);
    }
    // The attribute that is the clamp limit: expert_alpha in openvino, expert_beta in spec.
    auto a = load_text(catalog(R"(, "attributes": {"expert_alpha": "inf", "expert_beta": 1.702})")).at(0).attributes;
    CHECK(a.expert_alpha == kInf);
    CHECK(resolve(a).clamp_limit == kInf);
    a = load_text(catalog(R"(, "attributes": {"expert_alpha": 1.702, "expert_beta": "inf"})", "GEMM2_BIAS_SWIGLU_CLAMP",
                          "spec"))
            .at(0)
            .attributes;
    CHECK(a.expert_beta == kInf);
    CHECK(resolve(a).clamp_limit == kInf);
    // Through defaults and expansion like any other value.
    const auto e = load_text(R"({"format": "moe-catalog", "format_version": 1,
        "defaults": {"params": {"swish_beta": 1.0, "clamp_limit": "inf"}},
        "cases": [{"name": "c", "expert_type": "GEMM2_BIAS_SWIGLU_CLAMP", "convention": "openvino", "seed": 7,
                   "shape": {"tokens": 4, "hidden": 8, "inter": 4, "experts": 4, "topk": 2},
                   "expand": {"params": [{"suffix": "inf", "value": {"clamp_limit": "inf"}},
                                         {"suffix": "seven", "value": {"clamp_limit": 7}}]}}]})");
    REQUIRE(e.size() == 2);
    CHECK(e[0].name == "c_inf");
    CHECK(resolve(e[0].attributes).clamp_limit == kInf);
    CHECK(resolve(e[1].attributes).clamp_limit == 7.0);
    // GEMM3 has no clamp: its limit is ignored, whatever it is (spec/README.md, section 5).
    CHECK(resolve(load_text(catalog(R"(, "params": {"clamp_limit": "inf"})", "GEMM3_SWIGLU")).at(0).attributes)
              .clamp_limit == 0.0);
}

TEST_CASE("catalogue: the non-finite values the spec refuses are refused under their key") {
    const std::pair<std::string, std::string> refused[] = {
        // swish beta must be finite, the clamp limit >= 0 and not NaN (spec/README.md, section 9).
        {catalog(R"(, "params": {"swish_beta": "inf", "clamp_limit": 7})"),
         R"(case c, key params.swish_beta: swish beta must be finite, got "inf")"},
        {catalog(R"(, "params": {"swish_beta": "nan"})", "GEMM3_SWIGLU"), R"(key params.swish_beta: swish beta must be finite, got "nan")"},
        {catalog(R"(, "params": {"clamp_limit": "nan"})"),
         R"(case c, key params.clamp_limit: the clamp limit must be >= 0 or "inf" (no clamping), got "nan")"},
        {catalog(R"(, "params": {"clamp_limit": "-inf"})"), R"(key params.clamp_limit: the clamp limit must be >= 0)"},
        {catalog(R"(, "params": {"clamp_limit": -1.5})"), R"(key params.clamp_limit: the clamp limit must be >= 0 or "inf" (no clamping), got -1.5)"},
        // The attributes: resolve() says what each means, the message names the attribute given.
        {catalog(R"(, "attributes": {"expert_alpha": "-inf"})"),
         "case c, key attributes.expert_alpha: attribute expert_alpha (clamp limit) must be >= 0"},
        {catalog(R"(, "attributes": {"expert_beta": "inf"})"),
         "case c, key attributes.expert_beta: attribute expert_beta (swish beta) must be finite, got inf"},
        {catalog(R"(, "attributes": {"expert_alpha": "nan"})", "GEMM2_BIAS_SWIGLU_CLAMP", "spec"),
         "key attributes.expert_alpha: attribute expert_alpha (swish beta) must be finite, got nan"},
        {catalog(R"(, "attributes": {"expert_beta": "nan"})", "GEMM2_BIAS_SWIGLU_CLAMP", "spec"),
         "key attributes.expert_beta: attribute expert_beta (clamp limit) must be >= 0"},
        {catalog(R"(, "attributes": {"expert_beta": -2})", "GEMM2_BIAS_SWIGLU_CLAMP", "spec"),
         "key attributes.expert_beta: attribute expert_beta (clamp limit) must be >= 0"},
        // The lane and gate_idx refusals of attributes_for() and resolve(), under their key.
        {catalog(R"(, "params": {"gate_lane": 0})", "GEMM2_BIAS_SWIGLU_CLAMP", "spec"),
         "key params.gate_lane: the spec convention fixes the swish lane"},
        {catalog(R"(, "params": {"gate_lane": 2})"), "key params.gate_lane: attribute gate_idx = 2 (expected 0 or 1)"},
        {catalog(R"(, "attributes": {"gate_idx": 3})"), "key attributes.gate_idx: attribute gate_idx = 3 (expected 0 or 1)"},
        {catalog(R"(, "attributes": {"gate_idx": 1})", "GEMM3_SWIGLU", "spec"),
         "key attributes.gate_idx: attribute gate_idx is not part of the spec convention"},
    };
    for (const auto& [text, message] : refused) {
        CAPTURE(text);
        const auto got = load_error(text);
        CAPTURE(got);
        CHECK(has(got, message));
    }
}

TEST_CASE("catalogue: a value of the wrong JSON type is refused naming its key, never with a library's text") {
    const std::string top = R"({"format": "moe-catalog", "format_version": 1, "cases": )";
    const std::string shape = R"("shape": {"tokens": 4, "hidden": 8, "inter": 4, "experts": 4, "topk": 2})";
    const std::pair<std::string, std::string> refused[] = {
        {catalog(R"(, "params": {"clamp_limit": "infinity"})"),
         R"(case c, key params.clamp_limit: "infinity" is not a number or "nan", "-nan", "inf", "-inf")"},
        {catalog(R"(, "params": {"clamp_limit": true})"), R"(key params.clamp_limit: true is not a number or "nan")"},
        {catalog(R"(, "params": {"swish_beta": "1.702"})"), R"(key params.swish_beta: "1.702" is not a number)"},
        {catalog(R"(, "params": {"swish_beta": null})"), R"(key params.swish_beta: null is not a number)"},
        {catalog(R"(, "params": {"gate_lane": "0"})"), R"(key params.gate_lane: "0" is not an integer)"},
        {catalog(R"(, "params": [7])"), "key params: expected an object"},
        {catalog(R"(, "attributes": {"expert_alpha": [7]})"), R"(key attributes.expert_alpha: [7] is not a number or "nan")"},
        {catalog(R"(, "attributes": {"expert_beta": {}})"), R"(key attributes.expert_beta: {} is not a number)"},
        // Elsewhere in the case: strings, booleans, numbers and lists of strings.
        {catalog(R"(, "description": 5)"), "case c, key description: 5 is not a string"},
        {catalog(R"(, "tier": ["ci"])"), R"(key tier: ["ci"] is not a string)"},
        {catalog(R"(, "dtype": 32)"), "key dtype: 32 is not a string"},
        {catalog(R"(, "biases": "yes")"), R"(key biases: "yes" is not true or false)"},
        {catalog(R"(, "exact": 1)"), "key exact: 1 is not true or false"},
        {catalog(R"(, "fill": {"hidden_states": {"kind": "uniform", "scale": "2"}})"),
         R"(key fill.hidden_states.scale: "2" is not a number)"},
        {catalog(R"(, "fill": {"hidden_states": {"kind": 1}})"), "key fill.hidden_states.kind: 1 is not a string"},
        {catalog(R"(, "routing": {"weights": 3})"), "case c, key routing.weights: 3 is not a string"},
        {catalog(R"(, "routing": {"skew": "1"})"), R"(key routing.skew: "1" is not a number)"},
        {catalog(R"(, "routing": {"router": "softmax_topk", "normalize": 0})"), "key routing.normalize: 0 is not true or false"},
        {catalog(R"(, "weight_dtype": "u4", "compressed_weights": [1])"), "key compressed_weights[0]: 1 is not a string"},
        {catalog(R"(, "weight_dtype": "u4", "compressed_weights": "weight_0")"),
         R"(key compressed_weights: "weight_0" is not a list of strings)"},
        {catalog(R"(, "overrides": {"input": "hidden_states", "index": [0, 0], "value": 1})"),
         "key overrides: expected a list of objects"},
        {catalog(R"(, "overrides": [{"input": 0, "index": [0, 0], "value": 1}])"), "key overrides.input: 0 is not a string"},
        // The top level and the case entries.
        {R"({"format": 5, "format_version": 1, "cases": []})", "key format: 5 is not a string"},
        {R"({"format": "moe-catalog", "format_version": 1, "description": [], "cases": []})",
         "key description: [] is not a string"},
        {R"({"format": "moe-catalog", "format_version": 1, "defaults": ["x"], "cases": [{}]})",
         R"(key defaults: ["x"] is not an object)"},
        {top + "[5]}", "case cases[0]: 5 is not an object"},
        {top + R"([{"name": 5, "expert_type": "GEMM3_SWIGLU", "convention": "spec", "seed": 1, )" + shape + "}]}",
         "case cases[0], key name: 5 is not a string"},
        {top + R"([{"expert_type": "GEMM3_SWIGLU", "convention": "spec", "seed": 1, )" + shape +
             R"(, "expand": {"seed": [1, 2]}}]})",
         "case cases[0], key name: missing"},
        {top + R"([{"name": "c", "expert_type": "GEMM3_SWIGLU", "convention": "spec", "seed": 1, )" + shape +
             R"(, "expand": {"name": [1, 2]}}]})",
         "key name: 1 is not a string"},
    };
    for (const auto& [text, message] : refused) {
        CAPTURE(text);
        const auto got = load_error(text);
        CAPTURE(got);
        CHECK(has(got, message));
        CHECK_FALSE(has(got, "json.exception"));
    }
}

TEST_CASE("catalogue: every value of a full catalogue, replaced by each JSON type, is read or refused by key") {
    using Json = nlohmann::ordered_json;
    // Every key the format has, in a catalogue that is read as it is.
    const Json full = Json::parse(R"({"format": "moe-catalog", "format_version": 1, "description": "d",
        "defaults": {"tier": "ci", "dtype": "f32"},
        "cases": [
          {"name": "a", "description": "x", "expert_type": "GEMM2_BIAS_SWIGLU_CLAMP", "convention": "openvino",
           "params": {"swish_beta": 1.702, "clamp_limit": "inf", "gate_lane": 0},
           "shape": {"batch": 2, "seq": 2, "hidden": 8, "inter": 4, "experts": 4, "topk": 2, "indices": "BSK"},
           "index_dtype": "i64", "biases": true, "bias_layout": "EN", "seed": 3, "kink_guard": false,
           "fill": {"hidden_states": {"kind": "dyadic", "range": 4, "bits": 2}, "weight_0": {"kind": "constant", "value": "nan"},
                    "bias_0": {"kind": "log_uniform", "min_exp": -3, "max_exp": 3}, "weight_1": {"kind": "normal", "scale": 0.5}},
           "routing": {"exclude": [3], "always": [0], "skew": 1.0, "weights": "dyadic"},
           "overrides": [{"input": "hidden_states", "index": [0, 1, 2], "value": "-inf"}],
           "expand": {"seed": [1, {"suffix": "two", "value": 2}], "exact": [false]}},
          {"name": "b", "expert_type": "GEMM2_BIAS_SWIGLU_CLAMP", "convention": "spec",
           "attributes": {"expert_alpha": 1.0, "expert_beta": "inf"},
           "shape": {"tokens": 4, "hidden": 64, "inter": 32, "experts": 4, "topk": 2}, "seed": 4, "exact": true,
           "exact_storage": "bf16", "weight_dtype": "u4", "group_size": 32, "scale_dtype": "f16", "zero_point": "f16",
           "scale_layout": "E1G", "compressed_weights": ["weight_0"]},
          {"name": "c", "expert_type": "GEMM3_SWIGLU", "convention": "openvino",
           "attributes": {"expert_alpha": 0.0, "expert_beta": 1.5, "gate_idx": 0},
           "shape": {"tokens": 4, "hidden": 8, "inter": 4, "experts": 9, "topk": 2}, "seed": 5,
           "routing": {"router": "group_limited", "n_group": 4, "topk_group": 2, "normalize": false, "logit_scale": 2.0,
                       "bias_scale": 0.5, "shared_expert": 8, "capacity_factor": 1.5}},
          {"name": "d", "expert_type": "GEMM2_BIAS_SWIGLU_CLAMP", "convention": "openvino",
           "shape": {"tokens": 4, "hidden": 8, "inter": 4, "experts": 4, "topk": 2}, "seed": 6,
           "weight_dtype": "f8e4m3", "fp8_values": "bottom", "routing": {"balanced": true}}
        ]})");
    moe::test::TempDir dir;
    const auto file = dir / "cat.json";
    auto load = [&](const Json& j) {
        std::ofstream(file) << j.dump();
        try {
            load_catalog(file);
        } catch (const InputError& e) {
            return std::string(e.what());
        }
        return std::string();
    };
    REQUIRE(load(full) == "");

    std::vector<Json::json_pointer> paths;
    std::function<void(const Json&, const Json::json_pointer&)> walk = [&](const Json& j, const Json::json_pointer& at) {
        if (!at.empty()) paths.push_back(at);
        if (j.is_object())
            for (const auto& [k, v] : j.items()) walk(v, at / k);
        else if (j.is_array())
            for (std::size_t i = 0; i < j.size(); ++i) walk(j[i], at / i);
    };
    walk(full, Json::json_pointer());
    const Json kinds[] = {nullptr, true, -1, 2.5, "x", "inf", Json::array(), Json::array({1}), Json::array({"x"}),
                          Json::object(), Json{{"k", 1}}};
    std::size_t refusals = 0;
    for (const auto& path : paths) {
        for (const auto& kind : kinds) {
            Json j = full;
            j[path] = kind;
            const std::string got = load(j);
            if (got.empty()) continue;
            ++refusals;
            CAPTURE(path.to_string());
            CAPTURE(kind.dump());
            CAPTURE(got);
            CHECK(has(got, "catalog " + file.string()));
            CHECK_FALSE(has(got, "json.exception"));
            // Inside a case the key is named, or the case entry itself when it is not an object.
            if (path.to_string().rfind("/cases/", 0) == 0 && path.to_string().find('/', 7) != std::string::npos)
                CHECK(has(got, ", key "));
        }
    }
    CHECK(paths.size() > 100);
    CHECK(refusals > 500);
}

TEST_CASE("catalogue: a control character in a key or a case name is shown escaped, never sent to the terminal") {
    std::string got = load_error(catalog(R"(, "x\u001b[2J": 1)"));
    CHECK(has(got, "key x\\x1b[2J: unknown key"));
    CHECK_FALSE(has(got, "\x1b"));
    // A case name with one is refused as a file name, shown as JSON escapes (once: the message's
    // words are not escaped again, which doubled the escapes' backslashes).
    got = load_error(R"({"format": "moe-catalog", "format_version": 1, "cases": [{"name": "a\u0007b", "seed": 1}]})");
    CHECK(has(got, "\"a\\u0007b\" cannot be a case name"));
    CHECK_FALSE(has(got, "\x07"));
}
