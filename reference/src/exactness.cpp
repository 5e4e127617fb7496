#include "moe/reference/exactness.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "moe/spec/compression.hpp"
#include "moe/spec/error.hpp"

namespace moe::reference {

namespace {

// The power of two of a value's lowest set significand bit (a finite, nonzero value).
double quantum_of(double v) {
    if (!std::isfinite(v) || v == 0.0) throw std::logic_error("quantum_of: " + std::to_string(v));
    int e;
    const double f = std::frexp(std::fabs(v), &e);  // |v| = f 2^e, f in [0.5, 1)
    auto m = static_cast<std::uint64_t>(std::ldexp(f, 53));
    int tz = 0;
    while ((m & 1u) == 0) {
        m >>= 1;
        ++tz;
    }
    return std::ldexp(1.0, e - 53 + tz);
}

Grid scalar(double v) {
    if (v == 0.0) return {1.0, 0.0};
    return {quantum_of(v), std::fabs(v)};
}

Grid sum_of_products(const Grid& a, const Grid& b, std::size_t terms) {
    return {a.quantum * b.quantum, static_cast<double>(terms) * a.max_abs * b.max_abs};
}
Grid add(const Grid& a, const Grid& b) {
    // Zeros alone add nothing, their quantum included (a linear lane clamped to [0, 0], plus 1).
    if (a.max_abs == 0.0) return b;
    if (b.max_abs == 0.0) return a;
    return {std::min(a.quantum, b.quantum), a.max_abs + b.max_abs};
}

int storage_bits(DType t) { return t == DType::bf16 ? 8 : (t == DType::f16 ? 11 : 24); }
double smallest_subnormal(DType t) { return std::ldexp(1.0, t == DType::f16 ? -24 : (t == DType::bf16 ? -133 : -149)); }
double largest_finite(DType t) { return t == DType::f16 ? 65504.0 : 3.0e38; }

class Certifier {
public:
    Certifier(int bits, DType storage, bool rounded) : bits_(bits), storage_(storage), rounded_(rounded) {}
    // A value a backend keeps between stages: it must also fit the storage type, or (rounded)
    // its range, with room for the rounding.
    Grid stored(const std::string& step, Grid g) {
        check(step, g);
        if (storage_ == DType::f32) return g;
        const std::string type(dtype_name(storage_));
        if (rounded_) {
            // Rounding to nearest moves v by at most u |v| (half the smallest subnormal below the
            // normal range) onto a multiple of v's spacing in the type, itself a multiple of
            // g.quantum wherever v is not a value of the type.
            const double u = std::ldexp(1.0, -storage_bits(storage_));
            const Grid r{g.quantum, g.max_abs == 0.0 ? 0.0
                                                      : g.max_abs + std::max(u * g.max_abs, 0.5 * smallest_subnormal(storage_))};
            if (r.max_abs > largest_finite(storage_))
                throw InputError("not exact in " + type + " storage: " + step + " reaches " + std::to_string(r.max_abs) +
                                 " rounded, beyond the type's range");
            return r;
        }
        if (g.bits() > storage_bits(storage_))
            throw InputError("not exact in " + type + " storage: " + step + " needs " + std::to_string(g.bits()) +
                             " significand bits, more than " + std::to_string(storage_bits(storage_)));
        if (g.max_abs != 0.0 && (g.quantum < smallest_subnormal(storage_) || g.max_abs > largest_finite(storage_)))
            throw InputError("not exact in " + type + " storage: " + step + " leaves the type's range (grid " +
                             std::to_string(g.quantum) + ", values up to " + std::to_string(g.max_abs) + ")");
        return g;
    }
    Grid check(const std::string& step, Grid g) {
        worst_ = std::max(worst_, g.bits());
        if (g.bits() > bits_)
            throw InputError("not exact: " + step + " needs " + std::to_string(g.bits()) + " significand bits (values up to " +
                             std::to_string(g.max_abs) + " on a grid of " + std::to_string(g.quantum) + "), more than " +
                             std::to_string(bits_));
        return g;
    }
    double worst() const { return worst_; }

private:
    int bits_;
    DType storage_;
    bool rounded_;
    double worst_ = 0.0;
};

}  // namespace

double Grid::bits() const { return max_abs == 0.0 ? 0.0 : std::log2(max_abs / quantum); }

Grid grid_of(const Tensor& t) {
    Grid g{0.0, 0.0};
    for (std::size_t i = 0; i < t.size(); ++i) {
        const double v = t.get(i);
        if (!std::isfinite(v)) throw InputError("not exact: a tensor holds NaN or Inf");
        if (v == 0.0) continue;
        const double q = quantum_of(v);
        g.quantum = g.quantum == 0.0 ? q : std::min(g.quantum, q);
        g.max_abs = std::max(g.max_abs, std::fabs(v));
    }
    if (g.quantum == 0.0) g.quantum = 1.0;
    return g;
}

double certify_exact(const Problem& p, int significand_bits, DType storage, bool rounded) {
    const Dims d = validate(p);
    const ResolvedParams rp = resolve(p.attributes);
    const bool gemm2 = p.attributes.expert_type == ExpertType::gemm2_bias_swiglu_clamp;
    if (rp.swish_beta != 0.0)
        throw InputError("not exact: swish_beta is " + std::to_string(rp.swish_beta) +
                         "; only swish_beta 0 (swish(x) = x / 2) keeps the activation exact");
    Certifier c(significand_bits, storage, rounded);
    const Grid x = c.check("hidden_states", grid_of(p.input(kHiddenStates)));
    // A compressed weight's grid is that of its dequantised values (W - Z) * S.
    auto input = [&](const char* name) {
        const Tensor& t = p.input(name);
        return c.check(name, grid_of(is_compressed_weight(t.dtype()) ? dequantize_weight(p, name, DType::f64) : t));
    };
    auto bias = [&](const char* name) { return p.has(name) ? input(name) : Grid{1.0, 0.0}; };
    const Grid half{0.5, 0.5};

    Grid act;
    if (gemm2) {
        Grid gate_up = c.check("gate_up = x W0", sum_of_products(x, input(kWeight0), d.H));
        gate_up = c.stored("gate_up + bias_0", add(gate_up, bias(kBias0)));
        // An infinite limit clamps nothing: it adds no grid and no bound.
        const Grid limit = std::isinf(rp.clamp_limit) ? Grid{gate_up.quantum, INFINITY} : scalar(rp.clamp_limit);
        // min(g, L) and clamp(l, -L, L) stay on the union of both grids, bounded by |g| or L.
        const Grid gate{std::min(gate_up.quantum, limit.quantum), gate_up.max_abs};
        const Grid lin{std::min(gate_up.quantum, limit.quantum), std::min(gate_up.max_abs, limit.max_abs)};
        const Grid lin_plus_1 = c.check("clamp(lin) + 1", add(lin, scalar(1.0)));
        const Grid swish = sum_of_products(gate, half, 1);  // beta 0: x * sigmoid(0) = x / 2
        act = c.stored("act = (clamp(lin) + 1) * swish(min(gate))", sum_of_products(lin_plus_1, swish, 1));
    } else {
        const Grid gate = c.stored("gate = x W0", sum_of_products(x, input(kWeight0), d.H));
        const Grid up = c.stored("up = x W1", sum_of_products(x, input(kWeight1), d.H));
        act = c.stored("act = swish(gate) * up", sum_of_products(sum_of_products(gate, half, 1), up, 1));
    }
    Grid down = c.check("down = act W", sum_of_products(act, input(gemm2 ? kWeight1 : kWeight2), d.I));
    down = gemm2 ? c.stored("down + bias_1", add(down, bias(kBias1))) : c.stored("down = act W", down);
    c.check("output = sum_k w_k down_k", sum_of_products(input(kRoutingWeights), down, d.K));
    return c.worst();
}

}  // namespace moe::reference
