#include "moe/generator/golden_builder.hpp"

#include <chrono>
#include <algorithm>
#include <cmath>
#include <vector>

#include "moe/reference/exactness.hpp"
#include "moe/spec/error.hpp"
#include "moe/generator/synthesize.hpp"
#include "moe/reference/error_terms.hpp"
#include "moe/reference/interpreter.hpp"
#include "moe/reference/storage_rounding.hpp"

namespace moe::generator {

namespace {

bool has_non_finite(const Problem& p) {
    std::vector<double> block(1 << 16);
    for (const auto& [name, t] : p.inputs) {
        // Integer codes, indices and E2M1 hold no NaN or infinity: decoding GPT-OSS's 0.8 G MXFP4
        // codes here took about 40 % of generating its cases.
        if (is_integer_weight(t.dtype()) || is_index_type(t.dtype()) || t.dtype() == DType::f4e2m1) continue;
        for (std::size_t begin = 0; begin < t.size(); begin += block.size()) {
            const std::size_t n = std::min(block.size(), t.size() - begin);
            t.to_f64(begin, n, block.data());
            for (std::size_t i = 0; i < n; ++i)
                if (!std::isfinite(block[i])) return true;
        }
    }
    return false;
}

// A storage-rounding case (CaseSpec::rounded_storage) must test something, values the type
// lacks, and no correct rounding of them may show in the output; returns how many it has.
std::size_t certify_storage_rounding(const CaseSpec& spec, const Problem& p, int threads) {
    const auto stages = reference::run(p, {reference::Mode::sparse, true, threads}).stages;
    const std::string type(dtype_name(spec.rounded_storage));
    const std::size_t lacking = reference::values_storage_lacks(stages, spec.rounded_storage);
    if (lacking == 0)
        throw InputError("case " + spec.name + " declares rounded_storage " + type + " but every intermediate is a " +
                         type + " value: declare exact_storage");
    if (auto why = reference::storage_rounding_shows(p, stages, spec.rounded_storage, threads))
        throw InputError("case " + spec.name + " declares rounded_storage " + type + " but rounding shows: " + *why);
    return lacking;
}

// Equal element by element, NaN matching NaN whatever its payload or sign.
bool same_values(const Tensor& a, const Tensor& b) {
    if (a.shape() != b.shape()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
        const double x = a.get(i), y = b.get(i);
        if (!(x == y || (std::isnan(x) && std::isnan(y)))) return false;
    }
    return true;
}

}  // namespace

void compute_outputs(golden::GoldenCase& c, const BuildOptions& o, BuildReport* report) {
    const auto start = std::chrono::steady_clock::now();
    reference::Result sparse = reference::run(c.problem, {reference::Mode::sparse, o.stages, o.threads});
    const auto seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    c.outputs.clear();
    c.stages.clear();
    // With NaN or Inf in the data, the dense formula also multiplies the non-finite outputs of
    // unselected experts by 0; keep its result too when it differs.
    if (has_non_finite(c.problem)) {
        reference::Result dense = reference::run(c.problem, {reference::Mode::dense, false, o.threads});
        if (!same_values(dense.output, sparse.output)) {
            c.outputs.emplace("output_dense", std::move(dense.output));
            if (report) report->dense_differs = true;
        }
    }
    c.outputs.emplace("output", std::move(sparse.output));
    c.stages = std::move(sparse.stages);
    // The magnitudes a backend's tolerance is built from (spec/tolerance.md), so that tools
    // outside the project need none of our code to compute bounds.
    for (auto& [name, t] : reference::error_terms(c.problem, false, o.threads).output)
        c.outputs.emplace("bound_" + name, std::move(t));
    if (report) report->reference_seconds = seconds;
}

golden::GoldenCase build_golden(const CaseSpec& spec, const BuildOptions& o, BuildReport* report) {
    BuildReport local;
    BuildReport& r = report ? *report : local;
    golden::GoldenCase c;
    SynthesisReport sr;
    c.problem = synthesize(spec, &sr);
    r.dropped_pairs = sr.dropped_pairs;
    validate(c.problem);
    if (spec.exact) {
        try {
            const bool rounded = spec.rounded_storage != DType::f32;
            r.exact_bits = reference::certify_exact(c.problem, 24, rounded ? spec.rounded_storage : spec.exact_storage,
                                                    rounded);
        } catch (const InputError& e) {
            throw InputError("case " + spec.name + " is declared exact but is " + e.what());
        }
        if (spec.rounded_storage != DType::f32) r.values_rounded = certify_storage_rounding(spec, c.problem, o.threads);
    } else if (spec.kink_guard) {
        r.kinks = keep_off_kinks(c.problem, spec, o.threads);
    }
    c.seed = spec.seed;
    c.generator = kGeneratorName;
    c.tier = spec.tier;
    c.description = spec.description;
    if (spec.routing.extended()) {
        // The router and the capacity drops are not stored as data: say them in the text.
        if (!c.description.empty()) c.description += " ";
        c.description += std::string("[routing: router ") + router_name(spec.routing.router) + ", " +
                         std::to_string(sr.dropped_pairs) + " dropped pairs]";
    }
    c.exact = spec.exact;
    compute_outputs(c, o, &r);
    return c;
}

}  // namespace moe::generator
