#pragma once
// Compressed weights in golden files (spec/golden-format.md, "Compressed weights"): which format
// version a case needs, and the `group_size` attribute of a compressed weight dataset, which
// reader and writer both tie to the scale's shape.
#include <cstdint>
#include <map>
#include <string>

#include "hdf5/h5_error.hpp"
#include "moe/spec/problem.hpp"

namespace moe::golden {

inline constexpr const char* kGroupSizeAttr = "group_size";

// Version 2 where the case has a compressed weight or a scale or zero point, else version 1, so
// that files without them stay byte-identical to what version 1 wrote.
std::int64_t format_version_for(const std::map<std::string, Tensor>& inputs);

// A version-1 file cannot hold compressed inputs (malformed, naming the first one).
void check_inputs_for_version(const std::map<std::string, Tensor>& inputs, std::int64_t version,
                              const h5::FileContext& ctx);

// GS = K / G of every compressed weight, from its [E, N, K] and its scale's [E, N, G(, 1)];
// malformed when there is no scale to take it from or G does not divide K.
std::map<std::string, std::int64_t> group_sizes(const std::map<std::string, Tensor>& inputs,
                                                const h5::FileContext& ctx);

// An input as its dataset declares it, before any data is read.
struct DeclaredInput {
    DType dtype;
    Shape shape;
};

// The `group_size` attributes found on /inputs/<weight> must be what the shapes give, and name
// compressed weights only. Checked from the datasets' declarations, before any data is read.
// Shapes that are wrong in themselves (a weight not of rank 3, a scale whose G does not divide
// K or whose trailing dimension is not 1, a type no weight can have) are left to validation,
// which names the shape rather than the attribute.
void check_group_sizes(const std::map<std::string, DeclaredInput>& inputs,
                       const std::map<std::string, std::int64_t>& declared, const h5::FileContext& ctx);

}  // namespace moe::golden
