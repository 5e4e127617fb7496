#include "moe/conformance/compare.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "moe/conformance/exact_storage.hpp"
#include "moe/reference/error_terms.hpp"
#include "moe/reference/interpreter.hpp"
#include "moe/spec/compression.hpp"

namespace moe::conformance {

namespace {

enum class Class { finite, nan, pos_inf, neg_inf };
Class class_of(double v) {
    if (std::isnan(v)) return Class::nan;
    if (std::isinf(v)) return v > 0 ? Class::pos_inf : Class::neg_inf;
    return Class::finite;
}

constexpr std::size_t kMaxViolations = 10;

// An empty grid for a T x H output (rows and columns capped at RatioGrid::kMaxSide).
RatioGrid empty_grid(std::size_t T, std::size_t H) {
    RatioGrid g;
    g.tokens = T;
    g.features = H;
    g.rows = std::min(T, RatioGrid::kMaxSide);
    g.cols = std::min(H, RatioGrid::kMaxSide);
    g.cells.assign(g.rows * g.cols, 0.0);
    return g;
}

void note_ratio(RatioGrid& g, std::size_t token, std::size_t feature, double ratio) {
    double& cell = g.cells[(token * g.rows / g.tokens) * g.cols + feature * g.cols / g.features];
    if (ratio > cell || std::isnan(ratio)) cell = std::isnan(ratio) ? INFINITY : ratio;
}

// Whether every value of `narrow` is a value of `wide`: an output of type `wide` can hold the
// exact case's reference itself, and rounding to it changes nothing the data type held.
bool holds_every_value_of(DType wide, DType narrow) {
    return wide == narrow || wide == DType::f64 ||
           (wide == DType::f32 && (narrow == DType::f16 || narrow == DType::bf16));
}

// Where a comparison passes but its bounds cannot tell an output from nothing: elements whose
// bound is not finite though the reference is (any finite value passes there), and elements
// whose bound is at least |ref| (a zero output passes there: a declared bf16 accumulation's
// g(n, 2^-8) sum |W||x| exceeds |ref| on sums of a few dozen terms; spec/tolerance.md).
struct LooseBounds {
    std::size_t compared = 0, unbounded = 0;  // finite reference elements
    std::size_t nonzero = 0, at_least_ref = 0;  // of them, those not zero
};

std::optional<std::string> loose_bounds_reason(const LooseBounds& b) {
    if (b.unbounded)
        return std::to_string(b.unbounded) + " of " + std::to_string(b.compared) +
               " finite reference elements have no finite bound: any finite output passes there";
    if (b.nonzero && b.at_least_ref * 10 >= b.nonzero * 9)  // 90 % or more, as for zero outputs
        return std::to_string(b.at_least_ref) + " of " + std::to_string(b.nonzero) +
               " nonzero reference elements have a bound of at least |ref| under the declared precision: there an "
               "output of zeros passes as well";
    return std::nullopt;
}

// "worst 1 x bound" must not describe an element past its bound: more digits until it shows.
std::string ratio_text(double ratio) {
    char buf[40];
    for (int digits = 3; digits <= 17; ++digits) {
        std::snprintf(buf, sizeof buf, "%.*g", digits, ratio);
        if (!(ratio > 1.0) || std::strtod(buf, nullptr) > 1.0) break;
    }
    return buf;
}

}  // namespace

std::map<std::string, Tensor> output_error_terms(const golden::GoldenCase& c, int threads) {
    std::map<std::string, Tensor> terms;
    for (const auto& name : reference::error_term_names()) {
        auto it = c.outputs.find("bound_" + name);
        if (it == c.outputs.end()) return reference::error_terms(c.problem, false, threads).output;
        terms.emplace(name, it->second);
    }
    return terms;
}

Comparison compare_output(const golden::GoldenCase& c, const Tensor& got, const Precision& precision,
                          int threads) {
    Comparison r;
    const Tensor& ref = c.outputs.at("output");
    if (got.shape() != ref.shape()) {
        r.status = Status::fail;
        r.reason = "output shape " + shape_to_string(got.shape()) + " differs from hidden_states' " +
                   shape_to_string(ref.shape());
        return r;
    }
    const Dims d = validate(c.problem);
    const DType data = c.problem.input(kHiddenStates).dtype();
    const ToleranceModel model = tolerance_model(precision, c.problem, d);
    r.exact = c.exact && exact_comparison_applies(c.exact, precision,
                                                  storage_loses_nothing(c, precision.storage, got.dtype(), threads),
                                                  has_compressed_weights(c.problem));
    const auto terms = output_error_terms(c, threads);
    const auto dense_it = c.outputs.find("output_dense");
    const Tensor* dense = dense_it == c.outputs.end() ? nullptr : &dense_it->second;
    const std::size_t H = d.H;

    // The underflow floor (spec/tolerance.md, "Underflow") can only loosen a bound, and reads every
    // weight: it is computed for a comparison that fails without it, which then runs again.
    std::vector<double> underflow;
    std::size_t overflowed = 0;  // non-finite outputs where the reference is finite
    LooseBounds loose;
    Metrics& m = r.metrics;
    // Filled for every comparison (a max per element), kept for failing ones only.
    RatioGrid grid;
    const auto compare_elements = [&] {
        overflowed = 0;
        loose = LooseBounds{};
        m = Metrics{};
        grid = empty_grid(H ? ref.size() / H : 0, H);
        for (std::size_t i = 0; i < ref.size(); ++i) {
            const double want = ref.get(i), have = got.get(i);
            const double alt = dense ? dense->get(i) : want;
            ++m.elements;
            double bound;
            if (r.exact) {
                bound = std::fabs(round_to(data, want) - want);
            } else {
                bound = model.output_rounding * std::fabs(want) + model.output_floor + model.routing_floor +
                        (underflow.empty() ? 0.0 : underflow[i]);
                for (const auto& [name, t] : terms) bound += model.output_coefficient.at(name) * t.get(i);
                if (std::isfinite(want) && std::isfinite(alt)) {
                    ++loose.compared;
                    loose.unbounded += !std::isfinite(bound);
                    loose.nonzero += want != 0.0;
                    loose.at_least_ref += want != 0.0 && bound >= std::fabs(want);
                }
            }
            bool ok;
            double err = 0.0, ratio = 0.0;
            // A finite reference beyond the data type's range (or within its bound of it) rounds to
            // an infinity of its sign: that infinity is the correct output, not an error.
            const auto judge_overflow = [&] {
                ok = std::isinf(have) && std::signbit(have) == std::signbit(want) &&
                     std::isinf(round_to(data, want + std::copysign(r.exact ? 0.0 : bound, want)));
                err = ok ? 0.0 : INFINITY;
                ratio = ok ? (std::isinf(round_to(data, want)) ? 0.0 : 1.0) : INFINITY;
            };
            if (class_of(want) != Class::finite || class_of(alt) != Class::finite) {
                // Compared by class: either reading's class is acceptable; a finite value where the
                // sparse reading is finite must also be within its bound, and an infinity there is
                // judged by the overflow rule, as where both readings are finite.
                const Class g = class_of(have);
                ok = g == class_of(want) || g == class_of(alt);
                if (ok && g == Class::finite && class_of(want) == Class::finite) {
                    err = std::fabs(have - want);
                    ok = err <= bound;
                    ratio = err == 0.0 ? 0.0 : err / bound;
                } else if (!ok && class_of(want) == Class::finite && std::isinf(have)) {
                    judge_overflow();
                } else {
                    ratio = ok ? 0.0 : INFINITY;
                    if (!ok) err = INFINITY;  // a value of the wrong class: no finite error describes it
                }
            } else if (class_of(have) != Class::finite) {
                judge_overflow();
            } else if (r.exact) {
                // Zero tolerance: the reference correctly rounded to the data type, or, in an output
                // of a type that holds every value of the data type (a plugin declaring an f32
                // output for bf16 data), the reference itself, which the case's grid makes exact
                // there; nothing else (an f16 output of an f32 case is the reference rounded once
                // more).
                err = std::fabs(have - want);
                ok = have == round_to(data, want) ||
                     (holds_every_value_of(got.dtype(), data) && have == round_to(got.dtype(), want));
                ratio = ok ? 0.0 : INFINITY;
            } else {
                err = std::fabs(have - want);
                ok = err <= bound;
                ratio = err == 0.0 ? 0.0 : (bound > 0.0 ? err / bound : INFINITY);
            }
            // An element of the wrong class (NaN or Inf where a finite value belongs, or the reverse)
            // makes the maxima inf: an all-NaN output must not read as "max error 0".
            m.max_abs_error = std::max(m.max_abs_error, err);
            if (!std::isfinite(err)) {
                m.max_rel_error = m.max_ulps = INFINITY;
            } else {
                if (want != 0.0 && std::isfinite(want))
                    m.max_rel_error = std::max(m.max_rel_error, err / std::fabs(want));
                if (std::isfinite(want)) m.max_ulps = std::max(m.max_ulps, err / ulp(precision.compute, want));
            }
            note_ratio(grid, i / H, i % H, ratio);
            const ElementReport e{i / H, i % H, want, have, r.exact ? 0.0 : bound};
            if (!m.worst || ratio > m.worst_ratio) {
                m.worst_ratio = ratio;
                m.worst = e;
            }
            if (!ok && std::isfinite(want) && !std::isfinite(have)) ++overflowed;
            if (!ok) {
                ++m.over_bound;
                if (m.violations.size() < kMaxViolations) m.violations.push_back(e);
            }
        }
    };
    compare_elements();
    // A comparison that fails first asks whether the declared types can hold the computation at
    // all (spec/tolerance.md, "Beyond a declared type's range"): the error model, the underflow
    // floor included, assumes they can; beyond it the floor grows with the out-of-range values and
    // would pass any output.
    std::optional<std::string> out_of_range;
    if (m.over_bound) out_of_range = beyond_declared_range(c.problem, precision, threads, &r.stage_terms);
    if (m.over_bound && !r.exact && !out_of_range) {
        underflow = underflow_floor(c.problem, precision, d);
        compare_elements();
    }
    if (m.over_bound && out_of_range) {
        // Not judged: the declared types cannot hold the computation. Not compared, so no metrics.
        r.status = Status::skip;
        r.reason = "beyond the declared precision's range: " + *out_of_range + " (" + std::to_string(m.over_bound) +
                   " output elements outside their bound, " + std::to_string(overflowed) +
                   " of them not finite where the reference is)";
        m = Metrics{};
    } else if (m.over_bound) {
        r.status = Status::fail;
        m.ratio_grid = std::move(grid);
        char buf[120];
        std::snprintf(buf, sizeof buf, "%zu of %zu elements outside their bound (%.2f%%), worst ", m.over_bound,
                      m.elements, 100.0 * static_cast<double>(m.over_bound) / static_cast<double>(m.elements));
        r.reason = buf + ratio_text(m.worst_ratio) + " x bound";
    } else if (auto loose_why = loose_bounds_reason(loose)) {
        r.status = Status::mistrusted;
        r.reason = "the output passes, but " + *loose_why;
    } else if (auto why = vacuous_case(c)) {
        r.status = Status::mistrusted;
        r.reason = *why;
    } else if (auto why_got = vacuous_output(got)) {
        r.status = Status::mistrusted;
        r.reason = *why_got;
    }
    if (r.status != Status::fail) r.stage_terms.clear();  // only a failure's stage search reads them
    return r;
}

namespace {

// Elements a trivial output can match: exact zeros, and NaN or Inf.
struct Uninformative {
    std::size_t zeros = 0, nonfinite = 0;
    std::size_t total() const { return zeros + nonfinite; }
    bool most_of(std::size_t size) const { return total() * 10 >= size * 9; }  // 90 % or more
};

Uninformative uninformative(const Tensor& t) {
    Uninformative u;
    for (std::size_t i = 0; i < t.size(); ++i) {
        const double v = t.get(i);
        u.zeros += v == 0.0;
        u.nonfinite += !std::isfinite(v);
    }
    return u;
}

}  // namespace

std::optional<std::string> vacuous_output(const Tensor& got) {
    // Where a weight holds a NaN that the sparse reading never multiplies (an expert no token
    // uses, a lane the activation drops), the dense reading is NaN everywhere, and a dense
    // backend's all-NaN output is correct; an output of NaN everywhere passes that case whatever
    // else the backend computes, so the pass says nothing about its arithmetic.
    if (got.size() == 0) return std::nullopt;
    const Uninformative u = uninformative(got);
    if (!u.most_of(got.size())) return std::nullopt;
    return "the output passes, but " + std::to_string(u.total()) + " of " + std::to_string(got.size()) +
           " of its elements are zero or not finite (" + std::to_string(u.zeros) + " zero, " +
           std::to_string(u.nonfinite) + " NaN or Inf): an output of only such values would pass as well";
}

std::optional<std::string> vacuous_case(const golden::GoldenCase& c) {
    const Tensor& ref = c.outputs.at("output");
    if (ref.size() == 0) return std::nullopt;  // T = 0: the check is the shape, which holds
    // Zeros and non-finite values alike: a backend that returns zeros (or NaN, say, from one FP8
    // NaN code in every expert's weights) everywhere matches them without computing anything.
    if (const Uninformative u = uninformative(ref); u.most_of(ref.size())) {
        const std::string of = " of " + std::to_string(ref.size()) + " reference elements are ";
        if (u.nonfinite == 0) return std::to_string(u.zeros) + of + "zero";
        return std::to_string(u.total()) + of + "zero or not finite (" + std::to_string(u.zeros) + " zero, " +
               std::to_string(u.nonfinite) + " NaN or Inf)";
    }
    // GEMM2: when (nearly) every lane is clamped on both sides, the activation is a constant
    // and the first GEMM's values are not tested.
    const auto gu = c.stages.find("gate_up");
    if (c.problem.attributes.expert_type == ExpertType::gemm2_bias_swiglu_clamp && gu != c.stages.end()) {
        const ResolvedParams rp = resolve(c.problem.attributes);
        std::size_t lanes = 0, saturated = 0;
        for (std::size_t i = 0; i + 1 < gu->second.size(); i += 2) {
            const double gate = gu->second.get(i + rp.gate_lane), lin = gu->second.get(i + 1 - rp.gate_lane);
            ++lanes;
            saturated += gate >= rp.clamp_limit && std::fabs(lin) >= rp.clamp_limit;
        }
        if (lanes && saturated * 100 >= lanes * 95)
            return std::to_string(saturated) + " of " + std::to_string(lanes) +
                   " activation lanes saturated (gate >= limit and |lin| >= limit)";
    }
    return std::nullopt;
}

std::optional<StageDivergence> first_divergent_stage(const golden::GoldenCase& c,
                                                     const std::map<std::string, Tensor>& got_stages,
                                                     const Precision& precision, int threads,
                                                     const std::map<std::string, Tensor>* stage_terms) {
    return check_stages(c, got_stages, precision, threads, stage_terms).first;
}

StageCheck check_stages(const golden::GoldenCase& c, const std::map<std::string, Tensor>& got_stages,
                        const Precision& precision, int threads, const std::map<std::string, Tensor>* stage_terms) {
    const Problem& p = c.problem;
    const Dims d = validate(p);
    const ToleranceModel model = tolerance_model(precision, p, d);
    std::map<std::string, Tensor> computed;
    if (!stage_terms) computed = reference::error_terms(p, true, threads).stages;
    const std::map<std::string, Tensor>& terms = stage_terms ? *stage_terms : computed;
    std::map<std::string, Tensor> want = c.stages;
    if (want.empty()) want = reference::run(p, {reference::Mode::sparse, true, threads}).stages;
    std::optional<StageDivergence> first;
    std::vector<std::pair<std::string, double>> per_stage;
    for (const auto& stage : reference::stage_names(p.attributes.expert_type)) {
        auto g = got_stages.find(stage);
        auto w = want.find(stage);
        if (g == got_stages.end() || w == want.end()) continue;
        if (g->second.shape() != w->second.shape()) {
            StageDivergence s;
            s.stage = stage + " (shape " + shape_to_string(g->second.shape()) + ", expected " +
                      shape_to_string(w->second.shape()) + ")";
            s.worst_ratio = INFINITY;
            per_stage.emplace_back(stage, INFINITY);
            if (!first) first = s;
            break;  // the later stages cannot be compared element by element either
        }
        const std::size_t F = w->second.shape()[2];
        StageDivergence worst;
        worst.stage = stage;
        for (std::size_t i = 0; i < w->second.size(); ++i) {
            const double ref = w->second.get(i), have = g->second.get(i);
            if (!std::isfinite(ref)) continue;  // non-finite stages are judged at the output
            double bound = 0.0;
            for (const auto& [key, t] : terms) {
                const auto slash = key.find('/');
                if (key.compare(0, slash, stage) == 0 && slash == stage.size())
                    bound += model.stage_coefficient.at(key.substr(slash + 1)) * t.get(i);
            }
            const double err = std::isfinite(have) ? std::fabs(have - ref) : INFINITY;
            const double ratio = err == 0.0 ? 0.0 : (bound > 0.0 ? err / bound : INFINITY);
            if (ratio > worst.worst_ratio) {
                worst.worst_ratio = ratio;
                worst.token = i / F / d.K;
                worst.slot = i / F % d.K;
                worst.feature = i % F;
                worst.reference = ref;
                worst.got = have;
                worst.bound = bound;
            }
        }
        per_stage.emplace_back(stage, worst.worst_ratio);
        if (worst.worst_ratio > 1.0 && !first) first = worst;
    }
    if (first) first->per_stage = per_stage;
    return {std::move(first), std::move(per_stage)};
}

}  // namespace moe::conformance
