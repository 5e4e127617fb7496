#pragma once
// Compressed expert weights (spec/compressed.md): a weight W [E, N, K] stored as u8, i8, u4, i4,
// f4e2m1, f8e4m3 or f8e5m2, with a scale S and, for the integer types, an optional zero point Z,
// each [E, N, G] (or [E, N, G, 1]; [E, 1, G] shares one scale over the rows) with G = K / GS
// groups of GS consecutive inputs. The weight's value is W_f = (W - Z) * S, exact in f64.
#include <array>
#include <cstddef>
#include <optional>
#include <string>

#include "moe/spec/problem.hpp"

namespace moe {

// How one weight input is compressed. From a validated problem only.
struct WeightCompression {
    DType weight = DType::u8;         // the stored type
    DType scale = DType::f32;         // f32, f16, bf16; f8e8m0 for f4e2m1 (MXFP4)
    std::optional<DType> zero_point;  // absent: Z = 0; the weight's type or f16
    std::size_t E = 0, N = 0, K = 0;  // W is [E, N, K]
    std::size_t group_size = 0;       // GS, along K; GS = K is per channel
    std::size_t groups = 0;           // G = K / GS
    bool scale_rows = true;           // the scale varies along N; false: [E, 1, G], one row for all

    // Flat index in the scale (and zero point) of weight element (e, n, k).
    std::size_t param_index(std::size_t e, std::size_t n, std::size_t k) const {
        return (e * (scale_rows ? N : 1) + (scale_rows ? n : 0)) * groups + k / group_size;
    }
};

// The MX block: 32 consecutive inputs share one E8M0 scale (OCP MX v1.0, section 5).
inline constexpr std::size_t kMxBlock = 32;

// The compression of `weight` (weight_0, weight_1, weight_2) in a validated problem, or nothing
// when it is stored in the data type.
std::optional<WeightCompression> weight_compression(const Problem& p, const std::string& weight);
bool has_compressed_weights(const Problem& p);

// The value of every code of a stored weight type of at most 8 bits, indexed by the code (a
// 4-bit type's 16 nibbles; its entries past 15 repeat them): one table lookup per weight element.
std::array<double, 256> code_values(DType t);

// Rows [n0, n0 + rows) of expert e of the compressed `weight`, dequantised exactly: out[r * K + k]
// = (W - Z) * S in f64 (every such product is exact in f64: at most 9 + 24 significand bits).
void dequantize_rows(const Problem& p, const std::string& weight, const WeightCompression& c, std::size_t e,
                     std::size_t n0, std::size_t rows, double* out);

// The whole weight dequantised, each value rounded once to `type` (f64: exact), in [E, N, K].
Tensor dequantize_weight(const Problem& p, const std::string& weight, DType type);

// The problem with every compressed weight replaced by its dequantised values rounded once to
// `type` and the scales and zero points removed. With type = the data type it is an ordinary
// problem (validate() accepts it); a simulator that dequantises in that type runs it as is.
Problem with_dequantized_weights(const Problem& p, DType type);

// Checks the compression rules of spec/README.md ("Rejected inputs") for every weight; validate()
// calls it once the weight shapes are known (check_values: also scan the scales for E8M0 NaNs and
// f16 zero points for their range). Throws InputError naming the input at fault.
void validate_compression(const Problem& p, WeightLayout layout, bool check_values = true);
// Compressed weights are stored NK (OpenVINO's transposed layout) only: throws InputError naming
// the first compressed weight when `layout` is KN. validate() asks before it reads the weights'
// shapes in the layout, whose complaint would otherwise hide this one.
void check_compressed_layout(const Problem& p, WeightLayout layout);

}  // namespace moe
