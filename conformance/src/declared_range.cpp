// Whether a case lies within the range of the types a backend declares (spec/tolerance.md,
// "Beyond a declared type's range"). The error model assumes nothing overflows: a partial sum, a
// stage value or a dequantised weight past a type's largest value is an infinity in that type,
// and the NaN or infinity that follows is the type's overflow, not a fault the bound can judge.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "moe/conformance/tolerance.hpp"
#include "moe/reference/error_terms.hpp"
#include "moe/spec/compression.hpp"
#include "type_limits.hpp"

namespace moe::conformance {

namespace {

std::string beyond(const std::string& what, double value, DType type) {
    char buf[256];
    std::snprintf(buf, sizeof buf, "%s: up to %.4g, beyond %s's largest value %.4g", what.c_str(), value,
                  std::string(dtype_name(type)).c_str(), largest_finite(type));
    return buf;
}

}  // namespace

namespace {

// The largest finite |value| of an input where it may exceed `limit`; 0, without reading the
// input, where its type cannot hold a finite value past `limit` (bf16 or f16 data against f32
// compute): reading a model-sized weight element by element was half of a failing comparison.
double input_max_abs(const Tensor& t, double limit) {
    if (largest_finite(t.dtype()) <= limit) return 0.0;
    std::vector<double> chunk(std::min<std::size_t>(t.size(), 1u << 16));
    double m = 0.0;
    for (std::size_t i = 0; i < t.size(); i += chunk.size()) {
        const std::size_t n = std::min(chunk.size(), t.size() - i);
        t.to_f64(i, n, chunk.data());
        for (std::size_t j = 0; j < n; ++j)
            if (std::isfinite(chunk[j])) m = std::max(m, std::fabs(chunk[j]));
    }
    return m;
}

// The largest finite |W_f| of a compressed weight (exact, as dequantize_weight(f64) holds it),
// one row at a time: an f64 copy of a model-sized weight's every expert is gigabytes.
double dequantised_max_abs(const Problem& p, const char* weight) {
    const WeightCompression c = *weight_compression(p, weight);
    std::vector<double> row(c.K);
    double m = 0.0;
    for (std::size_t r = 0; r < c.E * c.N; ++r) {
        dequantize_rows(p, weight, c, r / c.N, r % c.N, 1, row.data());
        for (const double v : row)
            if (std::isfinite(v)) m = std::max(m, std::fabs(v));
    }
    return m;
}

// The checks on the error analysis's magnitudes (beyond_declared_range's last step).
std::optional<std::string> terms_beyond(const reference::ErrorTerms& terms, const Precision& prec) {
    const DType c = prec.compute, m = prec.storage;
    // Partial sums and stage values, from the error analysis's magnitudes: first_acc at the first
    // GEMM's stages is sum |W||x| + |b| (no partial sum is larger, in any order), down_acc at the
    // down stage likewise; *_store is |value|, which the storage type must also hold.
    for (const auto& [key, t] : terms.stages) {
        const std::string stage = key.substr(0, key.find('/')), term = key.substr(key.find('/') + 1);
        const bool first = stage == "gate_up" || stage == "gate" || stage == "up";
        const bool sums = (first && term == "first_acc") || (stage == "down" && term == "down_acc");
        const bool values = (first && term == "first_store") || (stage == "act" && term == "act_store") ||
                            (stage == "down" && term == "down_store");
        const double v = finite_max_abs(t);
        if (sums && v > largest_finite(c)) return beyond("the " + stage + " stage's partial sums", v, c);
        if (values && v > std::min(largest_finite(c), largest_finite(m)))
            return beyond("the " + stage + " stage's values", v, largest_finite(c) <= largest_finite(m) ? c : m);
    }
    const auto out = terms.output.find("down_store");  // sum_k |w_k||y_k|: the routing sum's partial sums
    if (out != terms.output.end() && finite_max_abs(out->second) > largest_finite(c))
        return beyond("the routing sum's partial sums", finite_max_abs(out->second), c);
    return std::nullopt;
}

}  // namespace

std::optional<std::string> beyond_declared_range(const Problem& p, const Precision& prec, int threads,
                                                 std::map<std::string, Tensor>* stage_terms) {
    const DType c = prec.compute;
    // Inputs rounded to the compute type, which may hold fewer bits or a smaller range than the
    // data type (f16 on bf16 data: 65504 against 3.4e38); weights dequantised into their type.
    // (A scale or zero point is not rounded to it: it enters through the dequantised weight.)
    for (const auto& [name, t] : p.inputs)
        if (!is_compressed_weight(t.dtype()) && !is_compression_input(name) && is_floating(t.dtype()))
            if (const double v = input_max_abs(t, largest_finite(c)); v > largest_finite(c))
                return beyond("the values of " + name, v, c);
    // swish's beta, rounded to the compute type: an infinite beta times a zero gate is NaN where
    // the reference's swish(0) is 0. (A finite beta times a gate past the range gives swish's
    // limits, which are right; a clamp limit past it clamps nothing the type can hold.)
    const double beta = std::fabs(resolve(p.attributes).swish_beta);
    if (beta > largest_finite(c)) return beyond("swish's beta", beta, c);
    for (const char* w : {kWeight0, kWeight1, kWeight2})
        if (p.has(w) && is_compressed_weight(p.input(w).dtype())) {
            const double v = dequantised_max_abs(p, w);
            if (v > largest_finite(prec.dequant_type()))
                return beyond(std::string(w) + " dequantised", v, prec.dequant_type());
        }
    reference::ErrorTerms terms = reference::error_terms(p, true, threads);
    std::optional<std::string> why = terms_beyond(terms, prec);
    if (stage_terms) *stage_terms = std::move(terms.stages);
    return why;
}

}  // namespace moe::conformance
