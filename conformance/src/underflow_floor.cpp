// The underflow floor of the tolerance (spec/tolerance.md, "Underflow"): the absolute errors of
// products and stored values that land in a type's subnormal range, where rounding is absolute
// (at most half the smallest subnormal), carried to the output through bounds on the slopes that
// the inputs alone give. Only the rounding in the subnormal range is new here: the relative
// errors of every step are the six magnitude terms'.
#include <algorithm>
#include <cmath>
#include <vector>

#include "moe/conformance/tolerance.hpp"
#include "moe/spec/compression.hpp"
#include "type_limits.hpp"

namespace moe::conformance {

namespace {

double half_subnormal(DType t) { return 0.5 * smallest_subnormal(t); }

// a b, with 0 for a zero factor (an unused type's 0 against an infinite magnitude is no term).
double times(double a, double b) { return a == 0.0 || b == 0.0 ? 0.0 : a * b; }

// max |v| over the finite values (non-finite data is compared by class, not by bound).
double finite_abs(double v) { return std::isfinite(v) ? std::fabs(v) : 0.0; }

// For each output n of a GEMM, the largest sum over k of |W(e, n, k)| of any expert: the most a
// unit change in every input can move output n. Compressed weights: their exact values.
std::vector<double> row_sums(const Problem& p, const char* name, WeightLayout layout) {
    if (!p.has(name)) return {};
    const Tensor& w = p.input(name);
    if (const auto c = weight_compression(p, name)) {
        std::vector<double> best(c->N, 0.0), row(c->K);
        for (std::size_t e = 0; e < c->E; ++e)
            for (std::size_t n = 0; n < c->N; ++n) {
                dequantize_rows(p, name, *c, e, n, 1, row.data());
                double s = 0.0;
                for (double v : row) s += finite_abs(v);
                best[n] = std::max(best[n], s);
            }
        return best;
    }
    const Shape& s = w.shape();  // [E, N, K] (NK) or [E, K, N] (KN)
    const std::size_t E = s[0], A = s[1], B = s[2];
    const std::size_t N = layout == WeightLayout::NK ? A : B;
    std::vector<double> best(N, 0.0), sums(N), stored(B);  // stored: one stored row, widened in one call
    for (std::size_t e = 0; e < E; ++e) {
        std::fill(sums.begin(), sums.end(), 0.0);
        for (std::size_t a = 0; a < A; ++a) {
            w.to_f64((e * A + a) * B, B, stored.data());
            for (std::size_t b = 0; b < B; ++b) sums[layout == WeightLayout::NK ? a : b] += finite_abs(stored[b]);
        }
        for (std::size_t n = 0; n < N; ++n) best[n] = std::max(best[n], sums[n]);
    }
    return best;
}

// The largest of those over every output: the first GEMM's errors reach every activation, and
// through them every output.
double max_row_sum(const Problem& p, const char* name, WeightLayout layout) {
    const std::vector<double> sums = row_sums(p, name, layout);
    return sums.empty() ? 0.0 : *std::max_element(sums.begin(), sums.end());
}

}  // namespace

std::vector<double> underflow_floor(const Problem& p, const Precision& prec, const Dims& d) {
    const ResolvedParams rp = resolve(p.attributes);
    const bool gemm2 = p.attributes.expert_type == ExpertType::gemm2_bias_swiglu_clamp;
    const DType data = p.input(kHiddenStates).dtype();
    const double hc = half_subnormal(prec.compute), hm = half_subnormal(prec.storage);
    // Inputs rounded to a compute type narrower than the data type, in precision or in exponent
    // range (f16 on bf16 data: exact down to 2^-14, then subnormal); weights to the dequantisation type.
    const bool inputs_rounded = unit_roundoff(prec.compute) > unit_roundoff(data) ||
                                smallest_subnormal(prec.compute) > smallest_subnormal(data);
    const double h_in = inputs_rounded ? hc : 0.0;
    const CompressedGemms compressed = compressed_gemms(p, prec.dequant_type());
    // Where D holds every value nothing underflows in it; the scaled partial sums round in C.
    const auto h_dequant = [&](bool read, bool exact) {
        return !read ? 0.0 : half_subnormal(exact ? prec.compute : prec.dequant_type());
    };
    const double h_first = h_dequant(compressed.first, compressed.first_exact);
    const double h_down = h_dequant(compressed.down, compressed.down_exact);

    const double r_first = std::max(max_row_sum(p, kWeight0, rp.weight_layout),
                                    gemm2 ? 0.0 : max_row_sum(p, kWeight1, rp.weight_layout));
    // The down GEMM's per output: a row tiny in every expert (E8M0 scale code 0 on one row) has
    // tiny outputs, where the largest row's floor would pass any value.
    const std::vector<double> down_rows = row_sums(p, gemm2 ? kWeight1 : kWeight2, rp.weight_layout);
    const double b_first = p.has(kBias0) ? finite_max_abs(p.input(kBias0)) : 0.0;
    const double H = static_cast<double>(d.H), I = static_cast<double>(d.I);

    const Tensor& x = p.input(kHiddenStates);
    const Tensor& w = p.input(kRoutingWeights);
    std::vector<double> floor(d.T * d.H, 0.0);
    for (std::size_t t = 0; t < d.T; ++t) {
        double x_max = 0.0;
        for (std::size_t j = 0; j < d.H; ++j) x_max = std::max(x_max, finite_abs(x.get(t * d.H + j)));
        double routing = 0.0;  // sum_k |w_k|
        if (rp.routing_layout == RoutingLayout::compact)
            for (std::size_t k = 0; k < d.K; ++k) routing += finite_abs(w.get(t * d.K + k));
        else
            for (std::size_t e = 0; e < d.E; ++e) routing += finite_abs(w.get(e * d.T + t));
        // |h| <= h_max; each activation output moves by at most 2.1 (h_max + 1) per unit change of
        // the two first-GEMM values it reads (|d swish| <= 1.1, |swish(z)| <= |z|), and |a| <= a_max.
        const double h_max = x_max * r_first + b_first;
        const double slope = 2.1 * (h_max + 1.0), a_max = h_max * (h_max + 1.0);
        // Absolute errors of the first GEMM's values, of the activation, of the down GEMM's.
        const double first = H * hc + hm + times(H * (h_first + h_in), x_max) + times(r_first, h_in);
        const double act = 8.0 * hc + hm;
        const double down = I * hc + hm + times(I * h_down, a_max);
        for (std::size_t n = 0; n < d.H; ++n) {
            const double r_down = n < down_rows.size() ? down_rows[n] : 0.0;
            const double f = times(routing, times(r_down, times(slope, first) + act) + down);
            // Magnitudes past f64's range (data near its largest values) bound nothing: no floor
            // then, rather than an infinite bound that would pass any output.
            floor[t * d.H + n] = std::isfinite(f) ? f : 0.0;
        }
    }
    return floor;
}

}  // namespace moe::conformance
