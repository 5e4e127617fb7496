#include "hdf5/h5_attributes.hpp"

#include <algorithm>
#include <cstddef>
#include <limits>
#include <vector>

#include "hdf5/address_space_cap.hpp"
#include "hdf5/h5_global_heap.hpp"
#include "hdf5/h5_string_descriptor.hpp"
#include "hdf5/h5_types.hpp"

namespace moe::golden::h5 {

namespace {

constexpr std::size_t kMaxNumberBytes = 16;
constexpr std::size_t kMaxFixedStringBytes = std::size_t{1} << 20;

// ----------------------------------------------------------------------------------------------
// Writing

// Scalar attributes only.
void write_attr(hid_t obj, const std::string& name, hid_t file_type, hid_t mem_type, const void* value,
                const FileContext& ctx, const std::string& where) {
    H5Id space = own(H5Screate(H5S_SCALAR), H5Sclose, ctx, Kind::unreadable, where, "cannot create dataspace");
    H5Id attr = own(H5Acreate2(obj, name.c_str(), file_type, space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose,
                    ctx, Kind::unreadable, where, "cannot create attribute");
    check(H5Awrite(attr.get(), mem_type, value), ctx, Kind::unreadable, where, "cannot write attribute");
}

H5Id utf8_string_type(const FileContext& ctx, const std::string& where) {
    H5Id t = own(H5Tcopy(H5T_C_S1), H5Tclose, ctx, Kind::unreadable, where, "cannot create string type");
    check(H5Tset_size(t.get(), H5T_VARIABLE), ctx, Kind::unreadable, where, "cannot create string type");
    check(H5Tset_cset(t.get(), H5T_CSET_UTF8), ctx, Kind::unreadable, where, "cannot create string type");
    return t;
}

// ----------------------------------------------------------------------------------------------
// Reading

}  // namespace

bool has_attr(hid_t obj, const std::string& name, const FileContext& ctx, const std::string& where) {
    const htri_t exists = H5Aexists(obj, name.c_str());
    if (exists < 0) ctx.malformed(where, "cannot look up attribute" + hdf5_detail());
    return exists > 0;
}

namespace {

// Opens attribute `name` of `obj` when it exists, checking that it holds a single value.
std::optional<H5Id> open_attr(hid_t obj, const std::string& name, const FileContext& ctx, const std::string& where) {
    const htri_t exists = H5Aexists(obj, name.c_str());
    if (exists < 0) ctx.malformed(where, "cannot look up attribute" + hdf5_detail());
    if (exists == 0) return std::nullopt;
    H5Id attr = own(H5Aopen(obj, name.c_str(), H5P_DEFAULT), H5Aclose, ctx, Kind::malformed, where,
                    "cannot open attribute");
    H5Id space = own(H5Aget_space(attr.get()), H5Sclose, ctx, Kind::malformed, where, "cannot read dataspace");
    if (H5Sget_simple_extent_npoints(space.get()) != 1)
        ctx.malformed(where, "must hold a single value, holds " +
                                 std::to_string(H5Sget_simple_extent_npoints(space.get())));
    return attr;
}

H5Id attr_type(const H5Id& attr, const FileContext& ctx, const std::string& where) {
    return own(H5Aget_type(attr.get()), H5Tclose, ctx, Kind::malformed, where, "cannot read type");
}

// Reads a numeric attribute converted to `mem_type`; `accept_float` admits float storage.
template <class T>
std::optional<T> read_number_attr(hid_t obj, const std::string& name, hid_t mem_type, bool accept_float,
                                  const FileContext& ctx, const std::string& where) {
    std::optional<H5Id> attr = open_attr(obj, name, ctx, where);
    if (!attr) return std::nullopt;
    H5Id type = attr_type(*attr, ctx, where);
    const H5T_class_t cls = H5Tget_class(type.get());
    if (cls != H5T_INTEGER && !(accept_float && cls == H5T_FLOAT))
        ctx.malformed(where, std::string("must be ") + (accept_float ? "a number" : "an integer") + ", found " +
                                 describe_h5_type(type.get()));
    if (H5Tget_size(type.get()) > kMaxNumberBytes)
        ctx.malformed(where, "is a " + describe_h5_type(type.get()) + " (numbers are at most 16 bytes)");
    // An unsigned value past the signed range would be clamped silently when read as signed.
    if (cls == H5T_INTEGER && H5Tget_sign(type.get()) == H5T_SGN_NONE && std::numeric_limits<T>::is_signed &&
        std::numeric_limits<T>::is_integer) {
        std::uint64_t unsigned_value = 0;
        check(H5Aread(attr->get(), H5T_NATIVE_UINT64, &unsigned_value), ctx, Kind::malformed, where,
              "cannot read value");
        if (unsigned_value > static_cast<std::uint64_t>(std::numeric_limits<T>::max()))
            ctx.malformed(where, "is " + std::to_string(unsigned_value) + ", more than " +
                                     std::to_string(std::numeric_limits<T>::max()));
    }
    // A negative value stored as signed would be clamped silently when read as unsigned.
    if (cls == H5T_INTEGER && H5Tget_sign(type.get()) != H5T_SGN_NONE &&
        !std::numeric_limits<T>::is_signed) {
        std::int64_t signed_value = 0;
        check(H5Aread(attr->get(), H5T_NATIVE_INT64, &signed_value), ctx, Kind::malformed, where,
              "cannot read value");
        if (signed_value < 0) ctx.malformed(where, "must not be negative, is " + std::to_string(signed_value));
    }
    T value{};
    check(H5Aread(attr->get(), mem_type, &value), ctx, Kind::malformed, where, "cannot read value");
    return value;
}

}  // namespace

void write_string_attr(hid_t obj, const std::string& name, const std::string& value, const FileContext& ctx,
                       const std::string& where) {
    if (value.find('\0') != std::string::npos) ctx.malformed(where, "string contains a NUL character");
    H5Id type = utf8_string_type(ctx, where);
    const char* p = value.c_str();
    write_attr(obj, name, type.get(), type.get(), &p, ctx, where);
}
void write_i64_attr(hid_t obj, const std::string& name, std::int64_t v, const FileContext& ctx,
                    const std::string& where) {
    write_attr(obj, name, H5T_STD_I64LE, H5T_NATIVE_INT64, &v, ctx, where);
}
void write_u64_attr(hid_t obj, const std::string& name, std::uint64_t v, const FileContext& ctx,
                    const std::string& where) {
    write_attr(obj, name, H5T_STD_U64LE, H5T_NATIVE_UINT64, &v, ctx, where);
}
void write_u8_attr(hid_t obj, const std::string& name, std::uint8_t v, const FileContext& ctx,
                   const std::string& where) {
    write_attr(obj, name, H5T_STD_U8LE, H5T_NATIVE_UINT8, &v, ctx, where);
}
void write_f64_attr(hid_t obj, const std::string& name, double v, const FileContext& ctx, const std::string& where) {
    write_attr(obj, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &v, ctx, where);
}

std::optional<std::string> read_string_attr(hid_t obj, const std::string& name, const FileContext& ctx,
                                            const std::string& where) {
    std::optional<H5Id> attr = open_attr(obj, name, ctx, where);
    if (!attr) return std::nullopt;
    H5Id type = attr_type(*attr, ctx, where);
    if (H5Tget_class(type.get()) != H5T_STRING)
        ctx.malformed(where, "must be a string, found " + describe_h5_type(type.get()));
    H5Id mem = own(H5Tget_native_type(type.get(), H5T_DIR_ASCEND), H5Tclose, ctx, Kind::malformed, where,
                   "cannot read type");
    if (H5Tis_variable_str(type.get()) > 0) {
        check_string_descriptor(*attr, ctx, where);  // before HDF5 follows it (h5_string_descriptor.hpp)
        char* p = nullptr;
        {
            // A string lives in one heap collection (<= kMaxGlobalHeapBytes); HDF5 needs about twice
            // its length. A larger claim in its descriptor is damage (address_space_cap.hpp).
            const AddressSpaceCap cap(4 * kMaxGlobalHeapBytes + (std::size_t{64} << 20));
            check(H5Aread(attr->get(), mem.get(), &p), ctx, Kind::malformed, where, "cannot read string");
        }
        std::string s = p ? p : "";
        H5free_memory(p);
        return s;
    }
    // A fixed-length string is stored in the attribute itself: a larger declared size is damage.
    const std::size_t size = H5Tget_size(type.get());
    if (size > H5Aget_storage_size(attr->get()) || size > kMaxFixedStringBytes)
        ctx.malformed(where, "declares a " + std::to_string(size) + "-byte string but stores " +
                                 std::to_string(H5Aget_storage_size(attr->get())) + " bytes");
    std::vector<char> buf(size + 1, '\0');
    check(H5Aread(attr->get(), mem.get(), buf.data()), ctx, Kind::malformed, where, "cannot read string");
    std::string s(buf.data());  // stops at the first NUL (nullterm / nullpad)
    // Only NUL padding may follow it: text after an embedded NUL would be dropped unseen (a case
    // named "before\0after" shown as "before"), and the writer never stores one.
    const auto after_nul = buf.begin() + static_cast<std::ptrdiff_t>(s.size());
    if (std::any_of(after_nul, buf.end(), [](char ch) { return ch != '\0'; }))
        ctx.malformed(where, "holds text after a NUL byte (a string ends at its first NUL; only NUL padding may follow)");
    if (H5Tget_strpad(type.get()) == H5T_STR_SPACEPAD)
        s.erase(s.find_last_not_of(' ') + 1);
    return s;
}

std::optional<std::int64_t> read_i64_attr(hid_t obj, const std::string& name, const FileContext& ctx,
                                          const std::string& where) {
    return read_number_attr<std::int64_t>(obj, name, H5T_NATIVE_INT64, false, ctx, where);
}
std::optional<std::uint64_t> read_u64_attr(hid_t obj, const std::string& name, const FileContext& ctx,
                                           const std::string& where) {
    return read_number_attr<std::uint64_t>(obj, name, H5T_NATIVE_UINT64, false, ctx, where);
}
std::optional<double> read_f64_attr(hid_t obj, const std::string& name, const FileContext& ctx,
                                    const std::string& where) {
    return read_number_attr<double>(obj, name, H5T_NATIVE_DOUBLE, true, ctx, where);
}

}  // namespace moe::golden::h5
