#pragma once
// Scalar attributes: writing (strings as variable-length UTF-8, which h5py reads as str) and
// reading with type checks. `where` names the attribute in messages ("root attribute 'case'").
#include <hdf5.h>

#include <cstdint>
#include <optional>
#include <string>

#include "hdf5/h5_handles.hpp"

namespace moe::golden::h5 {

void write_string_attr(hid_t obj, const std::string& name, const std::string& value, const FileContext& ctx,
                       const std::string& where);
void write_i64_attr(hid_t obj, const std::string& name, std::int64_t v, const FileContext& ctx,
                    const std::string& where);
void write_u64_attr(hid_t obj, const std::string& name, std::uint64_t v, const FileContext& ctx,
                    const std::string& where);
void write_u8_attr(hid_t obj, const std::string& name, std::uint8_t v, const FileContext& ctx,
                   const std::string& where);
void write_f64_attr(hid_t obj, const std::string& name, double v, const FileContext& ctx, const std::string& where);

// nullopt when the attribute is absent; malformed when it is not a single value of the kind
// asked for. Strings: variable-length or fixed-length (null- or space-padded).
std::optional<std::string> read_string_attr(hid_t obj, const std::string& name, const FileContext& ctx,
                                            const std::string& where);
// Integers of any HDF5 integer type; a negative signed value is malformed for the u64 reader.
std::optional<std::int64_t> read_i64_attr(hid_t obj, const std::string& name, const FileContext& ctx,
                                          const std::string& where);
std::optional<std::uint64_t> read_u64_attr(hid_t obj, const std::string& name, const FileContext& ctx,
                                           const std::string& where);
// Whether `obj` has attribute `name` (of any type).
bool has_attr(hid_t obj, const std::string& name, const FileContext& ctx, const std::string& where);
// Any HDF5 integer or float type.
std::optional<double> read_f64_attr(hid_t obj, const std::string& name, const FileContext& ctx,
                                    const std::string& where);

}  // namespace moe::golden::h5
