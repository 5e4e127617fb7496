// What a compressed weight means (spec/compressed.md): W_f = (W - Z) * S per group of GS inputs.
#include "moe/spec/compression.hpp"

#include <array>
#include <stdexcept>
#include <vector>

namespace moe {

std::string scale_input(const std::string& weight) { return weight + "_scale"; }
std::string zero_point_input(const std::string& weight) { return weight + "_zero_point"; }

bool is_compression_input(const std::string& name) {
    for (const char* n : kCompressionInputNames)
        if (name == n) return true;
    return false;
}

bool is_weight_name(const std::string& name) {
    for (const char* n : kWeightNames)
        if (name == n) return true;
    return false;
}

bool is_input_name(const std::string& name) {
    for (const char* n : kInputNames)
        if (name == n) return true;
    return is_compression_input(name);
}

std::optional<WeightCompression> weight_compression(const Problem& p, const std::string& weight) {
    if (!p.has(weight)) return std::nullopt;
    const Tensor& w = p.input(weight);
    if (!is_compressed_weight(w.dtype())) return std::nullopt;
    const Tensor& s = p.input(scale_input(weight));  // validate() made sure it is there
    WeightCompression c;
    c.weight = w.dtype();
    c.scale = s.dtype();
    if (p.has(zero_point_input(weight))) c.zero_point = p.input(zero_point_input(weight)).dtype();
    c.E = w.shape()[0];
    c.N = w.shape()[1];
    c.K = w.shape()[2];
    c.groups = s.shape()[2];
    c.group_size = c.K / c.groups;
    c.scale_rows = s.shape()[1] == c.N;
    return c;
}

bool has_compressed_weights(const Problem& p) {
    for (const char* w : kWeightNames)
        if (p.has(w) && is_compressed_weight(p.input(w).dtype())) return true;
    return false;
}

std::array<double, 256> code_values(DType t) {
    Tensor one(t, {1});
    std::array<double, 256> table{};
    for (unsigned c = 0; c < 256; ++c) {
        const std::uint8_t code = static_cast<std::uint8_t>(c);
        if (dtype_bits(t) == 4) {
            // Only the 16 nibble codes exist; i4's table is indexed by the nibble.
            one.data()[0] = static_cast<unsigned char>(code & 0x0f);
        } else {
            one.data()[0] = code;
        }
        table[c] = one.get(0);
    }
    return table;
}

namespace {

// The stored code of element `flat` of a tensor of at most 8 bits, as the table's index.
inline unsigned code_at(const Tensor& t, std::size_t flat, bool nibbles) {
    const unsigned char b = t.data()[nibbles ? flat / 2 : flat];
    return nibbles ? (flat % 2 ? b >> 4 : b & 0x0fu) : b;
}

}  // namespace

void dequantize_rows(const Problem& p, const std::string& weight, const WeightCompression& c, std::size_t e,
                     std::size_t n0, std::size_t rows, double* out) {
    const Tensor& w = p.input(weight);
    const Tensor& s = p.input(scale_input(weight));
    const Tensor* z = c.zero_point ? &p.input(zero_point_input(weight)) : nullptr;
    static thread_local DType cached = DType::f64;
    static thread_local std::array<double, 256> table{};
    if (cached != c.weight) {
        table = code_values(c.weight);
        cached = c.weight;
    }
    const bool nibbles = dtype_bits(c.weight) == 4;
    for (std::size_t r = 0; r < rows; ++r) {
        const std::size_t n = n0 + r;
        const std::size_t base = (e * c.N + n) * c.K;
        for (std::size_t g = 0; g < c.groups; ++g) {
            const std::size_t param = c.param_index(e, n, g * c.group_size);
            const double scale = s.get(param);
            const double zero = z ? z->get(param) : 0.0;
            for (std::size_t k = g * c.group_size; k < (g + 1) * c.group_size; ++k)
                out[r * c.K + k] = (table[code_at(w, base + k, nibbles)] - zero) * scale;
        }
    }
}

Tensor dequantize_weight(const Problem& p, const std::string& weight, DType type) {
    const std::optional<WeightCompression> c = weight_compression(p, weight);
    if (!c) throw std::logic_error("dequantize_weight: " + weight + " is not compressed");
    Tensor out(type, {c->E, c->N, c->K});
    std::vector<double> row(c->K);
    for (std::size_t r = 0; r < c->E * c->N; ++r) {
        dequantize_rows(p, weight, *c, r / c->N, r % c->N, 1, row.data());
        out.set_range(r * c->K, c->K, row.data());
    }
    return out;
}

Problem with_dequantized_weights(const Problem& p, DType type) {
    Problem q;
    q.name = p.name;
    q.attributes = p.attributes;
    for (const auto& [name, t] : p.inputs) {
        if (is_compression_input(name)) continue;
        q.inputs[name] = is_compressed_weight(t.dtype()) ? dequantize_weight(p, name, type) : t;
    }
    return q;
}

}  // namespace moe
