// Catalogue files: JSON, read with nlohmann::json (ordered, so expansions keep their order).
#include "moe/generator/case_spec.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <set>

#include "catalog_json.hpp"
#include "compression_keys.hpp"
#include "moe/spec/compression.hpp"
#include "moe/spec/error.hpp"

namespace moe::generator {

using catalog_json::Json;
using catalog_json::Where;
using catalog_json::check_keys;
using catalog_json::get;
using catalog_json::number_or_special;
using catalog_json::parse_attributes;
using catalog_json::parse_params;
using catalog_json::shown;

namespace {

Fill parse_fill(const Json& j, const Where& w, const std::string& key) {
    check_keys(j, {"kind", "scale", "range", "bits", "value", "min_exp", "max_exp"}, w, key);
    const Where fw = w.in(key);
    Fill f;
    const auto kind = get<std::string>(j, "kind", fw);
    if (kind == "uniform") f.kind = Fill::Kind::uniform;
    else if (kind == "normal") f.kind = Fill::Kind::normal;
    else if (kind == "dyadic") f.kind = Fill::Kind::dyadic;
    else if (kind == "constant") f.kind = Fill::Kind::constant;
    else if (kind == "log_uniform") f.kind = Fill::Kind::log_uniform;
    else w.fail(key + ".kind", "unknown fill '" + kind + "' (uniform, normal, dyadic, constant, log_uniform)");
    if (j.contains("scale")) f.scale = get<double>(j, "scale", fw);
    if (j.contains("range")) f.range = get<std::int64_t>(j, "range", fw);
    if (j.contains("bits")) f.bits = get<int>(j, "bits", fw);
    if (j.contains("value")) f.value = number_or_special(j.at("value"), w, key + ".value");
    if (f.kind == Fill::Kind::dyadic && (f.range < 1 || f.bits < 0 || f.bits > 60))
        w.fail(key, "a dyadic fill needs range >= 1 and 0 <= bits <= 60");
    if (j.contains("min_exp")) f.min_exp = get<int>(j, "min_exp", fw);
    if (j.contains("max_exp")) f.max_exp = get<int>(j, "max_exp", fw);
    if (f.kind == Fill::Kind::log_uniform && (f.min_exp > f.max_exp || f.min_exp < -200 || f.max_exp > 200))
        w.fail(key, "a log_uniform fill needs -200 <= min_exp <= max_exp <= 200");
    return f;
}

// The router front-ends and the load scenarios (balanced, shared_expert, capacity_factor).
void parse_extended_routing(const Json& r, CaseSpec& c, const Where& w) {
    RoutingSpec& rt = c.routing;
    const Where rw = w.in("routing");
    if (r.contains("router")) {
        const auto name = get<std::string>(r, "router", rw);
        const auto k = parse_router(name);
        if (!k) w.fail("routing.router", "unknown router '" + name +
                                             "' (none, softmax_topk, topk_softmax, sigmoid_bias, group_limited)");
        rt.router = *k;
    }
    const bool routed = rt.router != RouterKind::none;
    const bool grouped = rt.router == RouterKind::group_limited;
    auto only_if = [&](const char* key, bool ok, const std::string& why) {
        if (r.contains(key) && !ok) w.fail(std::string("routing.") + key, why);
    };
    for (const char* key : {"exclude", "always", "skew", "weights"})
        only_if(key, !routed, "applies to router none only (the router chooses the experts and weights)");
    only_if("n_group", grouped, "applies to router group_limited only");
    only_if("topk_group", grouped, "applies to router group_limited only");
    only_if("normalize", routed && rt.router != RouterKind::topk_softmax,
            "applies to routers softmax_topk, sigmoid_bias and group_limited only");
    only_if("logit_scale", routed, "applies to a router other than none only");
    only_if("bias_scale", routed && rt.router != RouterKind::softmax_topk,
            "applies to routers topk_softmax, sigmoid_bias and group_limited only");
    if (r.contains("n_group")) rt.n_group = get<std::size_t>(r, "n_group", rw);
    if (r.contains("topk_group")) rt.topk_group = get<std::size_t>(r, "topk_group", rw);
    if (r.contains("normalize")) rt.normalize = get<bool>(r, "normalize", rw);
    if (r.contains("logit_scale")) rt.logit_scale = get<double>(r, "logit_scale", rw);
    if (r.contains("bias_scale")) rt.bias_scale = get<double>(r, "bias_scale", rw);
    if (!(rt.logit_scale > 0.0) || !std::isfinite(rt.logit_scale))
        w.fail("routing.logit_scale", "must be a finite number > 0");
    if (!(rt.bias_scale >= 0.0) || !std::isfinite(rt.bias_scale))
        w.fail("routing.bias_scale", "must be a finite number >= 0");
    if (r.contains("balanced")) rt.balanced = get<bool>(r, "balanced", rw);
    if (r.contains("shared_expert")) {
        const auto s = get<std::size_t>(r, "shared_expert", rw);
        if (s >= c.experts) w.fail("routing.shared_expert", "expert " + std::to_string(s) + " is not below experts = " +
                                                                std::to_string(c.experts));
        if (std::count(rt.exclude.begin(), rt.exclude.end(), s) || std::count(rt.always.begin(), rt.always.end(), s))
            w.fail("routing.shared_expert", "the shared expert may not be listed in exclude or always");
        if (c.topk < 1) w.fail("routing.shared_expert", "needs topk >= 1");
        rt.shared_expert = s;
    }
    if (r.contains("capacity_factor")) {
        rt.capacity_factor = get<double>(r, "capacity_factor", rw);
        if (!(rt.capacity_factor > 0.0) || !std::isfinite(rt.capacity_factor))
            w.fail("routing.capacity_factor", "must be a finite number > 0");
    }
    if (rt.balanced) {
        if (routed || !rt.exclude.empty() || !rt.always.empty() || rt.skew > 0.0 || rt.shared_expert)
            w.fail("routing.balanced", "cannot be combined with router, exclude, always, skew or shared_expert");
        const std::size_t pairs = c.tokens() * c.topk;
        if (c.experts == 0 || pairs % c.experts != 0)
            w.fail("routing.balanced", "needs experts = " + std::to_string(c.experts) + " to divide T*K = " +
                                           std::to_string(pairs));
    }
    if (grouped) {
        const std::size_t Er = c.experts - (rt.shared_expert ? 1 : 0), Kr = c.topk - (rt.shared_expert ? 1 : 0);
        if (rt.n_group == 0 || Er % rt.n_group != 0)
            w.fail("routing.n_group", "must divide the " + std::to_string(Er) + " routed experts");
        if (rt.topk_group == 0 || rt.topk_group > rt.n_group) w.fail("routing.topk_group", "must be in [1, n_group]");
        if (rt.topk_group * (Er / rt.n_group) < Kr)
            w.fail("routing.topk_group", "the kept groups hold fewer than the " + std::to_string(Kr) + " routed slots");
    }
}

CaseSpec parse_case(const Json& j, const Where& w) {
    check_keys(j, {"name", "tier", "description", "expert_type", "convention", "attributes", "params", "shape", "dtype",
                   "index_dtype", "biases", "bias_layout", "seed", "fill", "routing", "overrides", "exact", "exact_storage",
                   "rounded_storage", "kink_guard", "weight_dtype", "group_size", "scale_dtype", "zero_point", "scale_layout",
                   "fp8_values", "compressed_weights"},
               w, "");
    CaseSpec c;
    c.name = get<std::string>(j, "name", w);
    if (j.contains("tier")) c.tier = get<std::string>(j, "tier", w);
    if (c.tier != "quick" && c.tier != "ci" && c.tier != "full") w.fail("tier", "expected quick, ci or full");
    if (j.contains("description")) c.description = get<std::string>(j, "description", w);
    ExpertType type;
    Convention conv;
    const auto type_name = get<std::string>(j, "expert_type", w), conv_name = get<std::string>(j, "convention", w);
    try {
        type = parse_expert_type(type_name);
    } catch (const InputError& e) {
        w.fail("expert_type", e.what());
    }
    try {
        conv = parse_convention(conv_name);
    } catch (const InputError& e) {
        w.fail("convention", e.what());
    }
    if (j.contains("attributes") && j.contains("params")) w.fail("params", "give attributes or params, not both");
    c.attributes = j.contains("attributes") ? parse_attributes(j.at("attributes"), type, conv, w)
                   : j.contains("params")   ? parse_params(j.at("params"), type, conv, w)
                                            : default_attributes(type, conv);
    try {  // checked key by key above; resolve() has the last word
        resolve(c.attributes);
    } catch (const InputError& e) {
        w.fail(j.contains("params") ? "params" : "attributes", e.what());
    }

    const Json& s = j.contains("shape") ? j.at("shape") : Json::object();
    check_keys(s, {"tokens", "batch", "seq", "hidden", "inter", "experts", "topk", "indices"}, w, "shape");
    const Where sw = w.in("shape");
    if (s.contains("tokens") == (s.contains("batch") || s.contains("seq")))
        w.fail("shape", "give either tokens (rank-2 hidden) or batch and seq (rank-3 hidden)");
    if (s.contains("tokens")) {
        c.seq = get<std::size_t>(s, "tokens", sw);
    } else {
        c.rank3 = true;
        c.batch = get<std::size_t>(s, "batch", sw);
        c.seq = get<std::size_t>(s, "seq", sw);
    }
    c.hidden = get<std::size_t>(s, "hidden", sw);
    c.inter = get<std::size_t>(s, "inter", sw);
    c.experts = get<std::size_t>(s, "experts", sw);
    c.topk = get<std::size_t>(s, "topk", sw);
    if (s.contains("indices")) {
        const auto layout = get<std::string>(s, "indices", sw);
        if (layout != "TK" && layout != "BSK") w.fail("shape.indices", "expected TK or BSK");
        c.indices_bsk = layout == "BSK";
        if (c.indices_bsk && !c.rank3) w.fail("shape.indices", "BSK indices need a rank-3 hidden (batch, seq)");
    }

    auto dtype = [&](const char* key, DType def) {
        if (!j.contains(key)) return def;
        const auto name = get<std::string>(j, key, w);
        const auto t = parse_dtype(name);
        if (!t) w.fail(key, "unknown element type '" + name + "'");
        return *t;
    };
    c.dtype = dtype("dtype", DType::f32);
    c.index_dtype = dtype("index_dtype", DType::i32);
    if (!is_floating(c.dtype)) w.fail("dtype", "data type must be f64, f32, f16 or bf16");
    if (!is_index_type(c.index_dtype)) w.fail("index_dtype", "index type must be i32 or i64");
    if (j.contains("biases")) c.bias_0 = c.bias_1 = get<bool>(j, "biases", w);
    if (j.contains("bias_layout")) {
        const auto layout = get<std::string>(j, "bias_layout", w);
        if (layout != "E1N" && layout != "EN") w.fail("bias_layout", "expected E1N or EN");
        c.bias_rank2 = layout == "EN";
    }
    c.seed = get<std::uint64_t>(j, "seed", w);
    if (j.contains("fill")) {
        check_keys(j.at("fill"),
                   {kHiddenStates, kWeight0, kBias0, kWeight1, kBias1, kWeight2}, w, "fill");
        for (const auto& [input, f] : j.at("fill").items()) c.fills[input] = parse_fill(f, w, "fill." + input);
    }
    if (j.contains("routing")) {
        const Json& r = j.at("routing");
        check_keys(r, {"exclude", "always", "weights", "skew", "router", "n_group", "topk_group", "normalize",
                       "logit_scale", "bias_scale", "balanced", "shared_expert", "capacity_factor"},
                   w, "routing");
        const Where rw = w.in("routing");
        if (r.contains("skew")) c.routing.skew = get<double>(r, "skew", rw);
        if (!(c.routing.skew >= 0.0)) w.fail("routing.skew", "the Zipf exponent must be >= 0");
        if (r.contains("exclude")) c.routing.exclude = get<std::vector<std::size_t>>(r, "exclude", rw);
        if (r.contains("always")) c.routing.always = get<std::vector<std::size_t>>(r, "always", rw);
        for (const auto* list : {&c.routing.exclude, &c.routing.always}) {
            const char* key = list == &c.routing.exclude ? "routing.exclude" : "routing.always";
            std::set<std::size_t> seen;
            for (std::size_t e : *list) {
                if (e >= c.experts) w.fail(key, "expert " + std::to_string(e) + " is not below experts = " + std::to_string(c.experts));
                if (!seen.insert(e).second) w.fail(key, "expert " + std::to_string(e) + " is listed twice");
            }
        }
        const auto weights = r.contains("weights") ? get<std::string>(r, "weights", rw) : std::string("softmax");
        if (weights == "softmax") c.routing.weights = RoutingSpec::Weights::softmax;
        else if (weights == "random") c.routing.weights = RoutingSpec::Weights::random;
        else if (weights == "dyadic") c.routing.weights = RoutingSpec::Weights::dyadic;
        else if (weights == "wide") c.routing.weights = RoutingSpec::Weights::wide;
        else w.fail("routing.weights", "expected softmax, random, dyadic or wide");
        parse_extended_routing(r, c, w);
    }
    if (j.contains("overrides")) {
        if (!j.at("overrides").is_array()) w.fail("overrides", "expected a list of objects");
        for (const auto& o : j.at("overrides")) {
            check_keys(o, {"input", "index", "value"}, w, "overrides");
            if (!o.contains("value")) w.fail("overrides.value", "missing");
            c.overrides.push_back({get<std::string>(o, "input", w.in("overrides")),
                                   get<std::vector<std::size_t>>(o, "index", w.in("overrides")),
                                   number_or_special(o.at("value"), w, "overrides.value")});
        }
    }
    if (j.contains("exact")) c.exact = get<bool>(j, "exact", w);
    c.exact_storage = dtype("exact_storage", DType::f32);
    if (j.contains("exact_storage") && (!c.exact || !is_floating(c.exact_storage) || c.exact_storage == DType::f64))
        w.fail("exact_storage", "needs exact = true and one of f32, f16, bf16");
    // "data": the case's data type, so that one entry expanded over dtype declares each its own.
    const bool rounded_as_data = j.contains("rounded_storage") && j.at("rounded_storage").is_string() &&
                                 j.at("rounded_storage").get<std::string>() == "data";
    c.rounded_storage = rounded_as_data ? c.dtype : dtype("rounded_storage", DType::f32);
    if (j.contains("rounded_storage") &&
        (!c.exact || (c.rounded_storage != DType::f16 && c.rounded_storage != DType::bf16) || j.contains("exact_storage")))
        w.fail("rounded_storage", "needs exact = true, no exact_storage, and f16, bf16 or \"data\" (the data type, f16 or bf16)");
    if (j.contains("kink_guard")) c.kink_guard = get<bool>(j, "kink_guard", w);
    parse_compression(j, c, w);
    return c;
}

std::string suffix_of(const std::string& key, const Json& v, const Where& w) {
    if (v.is_object() || v.is_array()) {
        if (!v.is_object() || !v.contains("suffix") || !v.at("suffix").is_string())
            w.fail("expand." + key, "a structured value needs the form {\"suffix\": \"...\", \"value\": ...}");
        return v.at("suffix").get<std::string>();
    }
    if (v.is_boolean()) return v.get<bool>() ? key : "no_" + key;
    if (v.is_string()) return v.get<std::string>();
    return key + v.dump();
}

// A case name becomes the file <name>.h5 inside --out, so it may not leave that folder (/, \\,
// "..", an absolute path), hide the file (a leading '.', "" making ".h5") or carry control
// characters into file names and messages. Returns what is wrong, or "".
std::string case_name_problem(const std::string& name) {
    if (name.empty()) return "it is empty";
    if (name.find_first_of("/\\") != std::string::npos) return "it contains '/' or '\\'";
    if (name.front() == '.') return "it starts with '.'";
    for (const unsigned char ch : name)
        if (ch < 0x20 || ch == 0x7f) return "it contains a control character";
    return "";
}

// The cartesian product of the case's "expand" lists, each combination a case of its own.
std::vector<Json> expand(const Json& j, const Where& w) {
    std::vector<Json> out{j};
    if (!j.contains("expand")) return out;
    const Json& ex = j.at("expand");
    if (!ex.is_object()) w.fail("expand", "expected an object of lists");
    for (const auto& [key, values] : ex.items()) {
        if (!values.is_array() || values.empty()) w.fail("expand." + key, "expected a non-empty list");
        std::vector<Json> next;
        for (const auto& base : out) {
            for (const auto& v : values) {
                Json c = base;
                c[key] = v.is_object() && v.contains("value") ? v.at("value") : v;
                c["name"] = get<std::string>(c, "name", w) + "_" + suffix_of(key, v, w);
                next.push_back(std::move(c));
            }
        }
        out = std::move(next);
    }
    for (auto& c : out) c.erase("expand");
    return out;
}

}  // namespace

Fill default_fill(const CaseSpec& c, const std::string& input) {
    Fill f;
    f.kind = Fill::Kind::uniform;
    // Uniform weights with scale sqrt(3 / fan_in) give unit-variance pre-activations for
    // unit-variance inputs.
    if (input == kHiddenStates) f.scale = 1.0;
    else if (input == kBias0 || input == kBias1) f.scale = 0.5;
    else {
        const bool down = input == kWeight2 || (input == kWeight1 && c.attributes.expert_type ==
                                                                         ExpertType::gemm2_bias_swiglu_clamp);
        f.scale = std::sqrt(3.0 / static_cast<double>(down ? c.inter : c.hidden));
    }
    return f;
}

double generation_bytes(const CaseSpec& c, bool stages) {
    // T from B and S here: c.tokens() wraps where their product passes 2^64.
    const double T = static_cast<double>(c.batch) * static_cast<double>(c.seq), H = static_cast<double>(c.hidden),
                 I = static_cast<double>(c.inter), E = static_cast<double>(c.experts), K = static_cast<double>(c.topk);
    const bool gemm2 = c.attributes.expert_type == ExpertType::gemm2_bias_swiglu_clamp;
    const double size = static_cast<double>(dtype_size(c.dtype));
    // Inputs: hidden [T, H], three I x H matrices per expert (GEMM2's 2I x H and H x I; compressed
    // weights counted at the data type), biases, and the routing: indices and compact weights
    // [T, K], dense weights [E, T] (synthesize() makes both). Held throughout.
    const double data = T * H + 3 * E * I * H + (gemm2 && (c.bias_0 || c.bias_1) ? E * (2 * I + H) : 0) + T * K + E * T;
    const double inputs = size * data + static_cast<double>(dtype_size(c.index_dtype)) * T * K;
    // The rest in f64, in phases. Every reference run holds the hidden rows, the dense routing,
    // its output and one expert's operands: weights and their magnitudes, and up to T rows of
    // each GEMM's input, output and (error_terms()) their six bound terms.
    const double run = 8 * (2 * T * H + E * T + 4 * I * H + T * (6 * I + 8 * H));
    const double all_stages = 8 * T * K * (3 * I + H);  // [T, K, features], 3I + H features either type
    // compute_outputs(): the stages (with --stages), the output and its six bound_* [T, H], and
    // error_terms()' six [T, K, H] per-slot terms.
    const double outputs = run + (stages ? all_stages : 0) + 8 * (7 * T * H + 6 * T * K * H);
    // GEMM2's kink guard first: the inputs widened to f64 (next to a copy in their type) and two
    // runs with every stage, the first run's gate_up [T, K, 2I] kept.
    const bool guard = gemm2 && c.kink_guard && !c.exact;
    const double kinks = guard ? (8 + size) * data + run + all_stages + 8 * T * K * (2 * I + H) : 0;
    // Data that may hold NaN or Inf (overrides, constant and log_uniform fills) is also run in
    // the dense mode: E copies of every intermediate and of the temporaries between them, measured
    // at 10I + 3H features for GEMM2 (gate and linear halves, clamps, swish), 4I + 3H for GEMM3.
    bool non_finite = !c.overrides.empty();
    for (const auto& [input, f] : c.fills)
        non_finite = non_finite || f.kind == Fill::Kind::constant || f.kind == Fill::Kind::log_uniform;
    const double dense = non_finite ? run + (stages ? all_stages : 0) + 8 * E * T * ((gemm2 ? 10 : 4) * I + 3 * H) : 0;
    return inputs + std::max({outputs, kinks, dense});
}

static std::vector<CaseSpec> catalog_cases(const Json& root, const Where& w);

std::vector<CaseSpec> load_catalog(const std::filesystem::path& file) {
    Where w{file.string(), "", ""};
    std::ifstream in(file);
    if (!in) w.fail("", "cannot open the file");
    Json root;
    try {
        root = Json::parse(in);
    } catch (const nlohmann::json::exception& e) {  // parse_error, or out_of_range: a number like 1e400
        w.fail("", std::string("not valid JSON: ") + e.what());
    }
    try {
        return catalog_cases(root, w);
    } catch (const nlohmann::json::exception& e) {  // a top-level key of the wrong JSON type
        w.fail("", std::string("wrong type: ") + e.what());
    }
    return {};
}

static std::vector<CaseSpec> catalog_cases(const Json& root, const Where& w) {
    check_keys(root, {"format", "format_version", "description", "defaults", "cases"}, w, "");
    if (get<std::string>(root, "format", w) != "moe-catalog") w.fail("format", "expected \"moe-catalog\"");
    if (get<std::int64_t>(root, "format_version", w) != 1) w.fail("format_version", "expected 1");
    if (root.contains("description")) get<std::string>(root, "description", w);
    const Json defaults = root.contains("defaults") ? root.at("defaults") : Json::object();
    if (!defaults.is_object()) w.fail("defaults", shown(defaults) + " is not an object");
    std::vector<CaseSpec> cases;
    std::set<std::string> names;
    if (!root.contains("cases") || !root.at("cases").is_array()) w.fail("cases", "expected a list of cases");
    for (std::size_t i = 0; i < root.at("cases").size(); ++i) {
        const Json& entry = root.at("cases")[i];
        // A case without a name (or with one that is not a string) is named by its place.
        const Where at{w.file, "cases[" + std::to_string(i) + "]", ""};
        if (!entry.is_object()) at.fail("", shown(entry) + " is not an object");
        Json merged = defaults;
        for (const auto& [k, v] : entry.items()) merged[k] = v;
        const std::string name = merged.contains("name") ? get<std::string>(merged, "name", at) : at.name;
        for (const auto& j : expand(merged, {w.file, name, ""})) {
            Where ew = w;
            ew.name = j.contains("name") ? j.at("name").get<std::string>() : at.name;
            // Checked after expansion: a suffix is part of the file name too. The case is named
            // by its place in the file, the name being the fault.
            if (const auto problem = case_name_problem(ew.name); j.contains("name") && !problem.empty())
                at.fail("name", shown(j.at("name")) + " cannot be a case name: " + problem +
                                    " (a name is a file name in --out: not empty, no '/', '\\' or control characters, "
                                    "not starting with '.')");
            CaseSpec c;
            try {
                c = parse_case(j, ew);
            } catch (const nlohmann::json::exception& e) {
                ew.fail("", std::string("wrong type: ") + e.what());
            }
            if (!names.insert(c.name).second) ew.fail("name", "duplicate case name");
            cases.push_back(std::move(c));
        }
    }
    return cases;
}


}  // namespace moe::generator
