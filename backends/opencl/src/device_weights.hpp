#pragma once
// The problem's weights and biases on the device, uploaded once by prepare() and read by every
// run in their own element type (kernels/common.cl).
#include <cstdint>
#include <vector>

#include "cl_runtime.hpp"
#include "element_codes.hpp"
#include "moe/spec/problem.hpp"

namespace moe::backends::ocl {

// A tensor on the device, read in its own element type. A weight tensor is in `buf` as
// [E, K, N] (KN, what the tiled kernels and the f64 GEMM read); an NK weight tensor is also kept
// as given, [E, N, K], in `nk` (what moe_gemm_rows_*_nk streams), so NK weights take twice their
// size in device memory. KN weights and biases have `buf` only. Padded for the GEMM kernels'
// reads past the end (GemmConfig::pad_elems()).
struct Weights {
    Buffer buf;
    std::int32_t type = 0;
    Buffer nk;  // the NK original when has_nk
    bool has_nk = false;
    // A compressed weight (spec/compressed.md): its stored bytes in `nk` as given (NK, 4-bit types
    // two per byte), its code type in `type`, its scale and zero point as stored; read by
    // moe_gemm_compressed (kernels/gemm_compressed.cl), which dequantises them itself.
    bool compressed = false;
    Buffer scale, zero;
    std::int32_t scale_type = 0, zero_type = 0;
    bool has_zero = false;
    std::uint32_t groups = 1, scale_rows = 1;
};
// A bias, or a tensor the kernels read as it is.
Weights device_tensor(const Runtime& rt, const Tensor& t);
// A weight tensor of `kn` layout ([E, K, N], else [E, N, K]).
Weights device_weight(const Runtime& rt, const Tensor& t, bool kn);
// Weight input `name` of p, compressed or not.
Weights device_weight(const Runtime& rt, const Problem& p, const char* name, bool kn);

// The compressed-weight GEMM program a compressed weight runs in (Runtime::build_compressed).
CompressedTypes compressed_types(const Weights& w);
// Those of every compressed weight of p that upload_weights uploads (none twice): what prepare()
// builds. A weight whose scale is missing or whose types the backend does not take is left out
// (validation, or the upload, reports it).
std::vector<CompressedTypes> compressed_types(const Problem& p);

// Absent tensors are 1-byte placeholders.
struct DeviceWeights {
    Weights w0, w1, w2, b0, b1;
    bool has_b0 = false, has_b1 = false;
};
DeviceWeights upload_weights(const Runtime& rt, const Problem& p);

}  // namespace moe::backends::ocl
