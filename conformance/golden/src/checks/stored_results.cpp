#include "moe/golden/stored_results.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "moe/reference/error_terms.hpp"
#include "moe/reference/exactness.hpp"
#include "moe/reference/interpreter.hpp"
#include "moe/spec/error.hpp"
#include "moe/spec/problem.hpp"

namespace moe::golden {

namespace {

using Kind = FileError::Kind;

[[noreturn]] void fail(const std::filesystem::path& file, Kind kind, const std::string& where, const std::string& what) {
    throw FileError(kind, printable("golden file '" + file.string() + "': " + where + ": " + what));
}

std::string num(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.6g", v);
    return buf;
}

std::vector<std::size_t> sample_tokens(std::size_t T, std::size_t max_tokens) {
    std::vector<std::size_t> out;
    if (T <= max_tokens || max_tokens < 2) {
        for (std::size_t t = 0; t < T && (t < max_tokens || T <= max_tokens); ++t) out.push_back(t);
        return out;
    }
    for (std::size_t i = 0; i < max_tokens; ++i) out.push_back(i * (T - 1) / (max_tokens - 1));
    return out;
}

// Rows `tokens` of a tensor whose leading dims flatten to T rows of `row` elements each.
Tensor take_rows(const Tensor& t, const std::vector<std::size_t>& tokens, std::size_t row) {
    Tensor out(t.dtype(), {tokens.size(), row});
    const std::size_t bytes = row * dtype_size(t.dtype());
    for (std::size_t i = 0; i < tokens.size(); ++i)
        std::memcpy(out.data() + i * bytes, t.data() + tokens[i] * bytes, bytes);
    return out;
}

// Dense routing [E, T, 1] (or [E, B, S, 1]): the columns of `tokens`.
Tensor take_dense_routing(const Tensor& t, const std::vector<std::size_t>& tokens, std::size_t E, std::size_t T) {
    Tensor out(t.dtype(), {E, tokens.size(), 1});
    const std::size_t w = dtype_size(t.dtype());
    for (std::size_t e = 0; e < E; ++e)
        for (std::size_t i = 0; i < tokens.size(); ++i)
            std::memcpy(out.data() + (e * tokens.size() + i) * w, t.data() + (e * T + tokens[i]) * w, w);
    return out;
}

// The sampled tokens as a problem of their own; the weights are moved in from `full` (and must be
// moved back: WeightLoan).
Problem sub_problem(Problem& full, const Dims& d, const std::vector<std::size_t>& tokens) {
    Problem sub;
    sub.name = full.name;
    sub.attributes = full.attributes;
    sub.inputs[kHiddenStates] = take_rows(full.input(kHiddenStates), tokens, d.H);
    sub.inputs[kTopkIndices] = take_rows(full.input(kTopkIndices), tokens, d.K);
    const Tensor& rw = full.input(kRoutingWeights);
    sub.inputs[kRoutingWeights] = resolve(full.attributes).routing_layout == RoutingLayout::compact
                                      ? take_rows(rw, tokens, d.K)
                                      : take_dense_routing(rw, tokens, d.E, d.T);
    // Everything but the per-token inputs: weights, biases, and compressed weights' scales and
    // zero points.
    for (auto& [name, t] : full.inputs)
        if (name != kHiddenStates && name != kTopkIndices && name != kRoutingWeights) sub.inputs[name] = std::move(t);
    return sub;
}

class WeightLoan {
public:
    WeightLoan(Problem& full, Problem& sub) : full_(full), sub_(sub) {}
    ~WeightLoan() {
        for (auto& [name, t] : sub_.inputs)
            if (name != kHiddenStates && name != kTopkIndices && name != kRoutingWeights) full_.inputs[name] = std::move(t);
    }
    WeightLoan(const WeightLoan&) = delete;
    WeightLoan& operator=(const WeightLoan&) = delete;

private:
    Problem& full_;
    Problem& sub_;
};

enum class Class { finite, nan, pos_inf, neg_inf };
Class class_of(double v) {
    if (std::isnan(v)) return Class::nan;
    if (std::isinf(v)) return v > 0 ? Class::pos_inf : Class::neg_inf;
    return Class::finite;
}

bool agree(double stored, double fresh, double magnitude) {
    if (class_of(stored) != class_of(fresh)) return false;
    if (class_of(stored) != Class::finite) return true;
    return std::fabs(stored - fresh) <= kRelativeTolerance * magnitude;
}

std::string element(std::size_t token, std::size_t feature) {
    return "element [token " + std::to_string(token) + ", feature " + std::to_string(feature) + "]";
}

}  // namespace

std::size_t check_stored_results(const std::filesystem::path& file, GoldenCase& c, const StoredResultsOptions& o) {
    const Dims d = validate(c.problem);
    // `exact` sets every backend's tolerance to zero: a false claim fails correct backends.
    if (c.exact) {
        try {
            reference::certify_exact(c.problem);
        } catch (const InputError& e) {
            fail(file, Kind::malformed, "root attribute 'exact'",
                 std::string("is 1, but the case is not exact by construction (") + e.what() + ")");
        }
    }
    const auto out_it = c.outputs.find("output");
    if (out_it == c.outputs.end()) return 0;  // nothing stored to check (an inputs-only file)
    const Tensor& output = out_it->second;

    // Every stored bound: the output's shape, >= 0 everywhere. A non-finite bound (the
    // reference's own where the data holds Inf or NaN) puts its token into the recomputation.
    std::map<std::string, const Tensor*> stored_bounds;
    std::vector<std::size_t> tokens = sample_tokens(d.T, o.max_tokens);
    for (const auto& name : reference::error_term_names()) {
        auto it = c.outputs.find("bound_" + name);
        if (it == c.outputs.end()) continue;
        const std::string where = "dataset /outputs/bound_" + name;
        if (it->second.shape() != output.shape())
            fail(file, Kind::malformed, where, "shape " + shape_to_string(it->second.shape()) +
                                                   " differs from /outputs/output " + shape_to_string(output.shape()));
        for (std::size_t i = 0; i < it->second.size(); ++i) {
            const double v = it->second.get(i);
            if (v < 0.0)
                fail(file, Kind::malformed, where, element(i / d.H, i % d.H) + " is " + num(v) +
                                                       "; error bounds must be >= 0");
            if (!std::isfinite(v)) tokens.push_back(i / d.H);
        }
        stored_bounds.emplace(name, &it->second);
    }
    if (d.T == 0) return 0;

    std::sort(tokens.begin(), tokens.end());
    tokens.erase(std::unique(tokens.begin(), tokens.end()), tokens.end());
    Problem sub = sub_problem(c.problem, d, tokens);
    reference::Result fresh;
    reference::ErrorTerms terms;
    {
        WeightLoan loan(c.problem, sub);
        fresh = reference::run(sub, {reference::Mode::sparse, false, o.threads});
        terms = reference::error_terms(sub, false, o.threads);
    }
    for (std::size_t i = 0; i < tokens.size(); ++i) {
        for (std::size_t h = 0; h < d.H; ++h) {
            const std::size_t at = tokens[i] * d.H + h, here = i * d.H + h;
            double magnitude = std::fabs(fresh.output.get(here));
            for (const auto& [name, t] : terms.output) magnitude += t.get(here);
            const double want = fresh.output.get(here), got = output.get(at);
            if (!agree(got, want, std::isfinite(magnitude) ? magnitude : 0.0))
                fail(file, Kind::corrupt, "dataset /outputs/output",
                     element(tokens[i], h) + " is " + num(got) + " but the reference recomputed from the inputs gives " +
                         num(want) + " (the stored result does not belong to these inputs)");
            for (const auto& [name, stored] : stored_bounds) {
                const double s = stored->get(at), r = terms.output.at(name).get(here);
                if (!agree(s, r, std::max(std::fabs(s), std::fabs(r))))
                    fail(file, Kind::corrupt, "dataset /outputs/bound_" + name,
                         element(tokens[i], h) + " is " + num(s) + " but recomputing it from the inputs gives " +
                             num(r) + " (the stored error bounds do not belong to these inputs, or an older "
                                    "moe-golden computed them by other rules: generate the file again)");
            }
        }
    }
    return tokens.size();
}

}  // namespace moe::golden
