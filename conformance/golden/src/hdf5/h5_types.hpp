#pragma once
// Element types: which HDF5 type a tensor's element type is stored as (in the file) or held in
// (in memory), and which stored types can be read as which element type without changing bits.
#include <hdf5.h>

#include <optional>
#include <string>

#include "hdf5/h5_handles.hpp"
#include "moe/spec/tensor.hpp"

namespace moe::golden::h5 {

// The HDF5 type a tensor of `dt` is stored as (in_file: little-endian) or held in (memory,
// native byte order). Invalid when HDF5 cannot build it.
H5Id element_h5_type(DType dt, bool in_file);

// IEEE 754 binary16: sign bit 15, exponent bits 10-14 (bias 15), mantissa bits 0-9.
bool is_ieee_half(hid_t type);

// "64-bit float", "16-bit unsigned integer", ...: for messages about a stored type.
std::string describe_h5_type(hid_t type);

// Whether data stored as `type` can be read as element type `dt` without changing its bits.
bool stored_type_matches(DType dt, hid_t type);

// Element type of a dataset written without an element_type attribute, where the stored type
// says it unambiguously. A 16-bit integer is never guessed: it could be bf16 bit patterns.
std::optional<DType> infer_element_type(hid_t type);

}  // namespace moe::golden::h5
