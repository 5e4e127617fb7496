// Golden files (spec/golden-format.md): one MOE case per HDF5 file.
//
// Written against the HDF5 C API rather than the C++ wrapper: every call's status is checked
// where it is made, so each failure can name the file and the dataset or attribute at fault, and
// no HDF5 exception type can ever escape (everything leaves as FileError).
#include "moe/golden/golden_file.hpp"

#include <hdf5.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "moe/spec/error.hpp"

namespace moe::golden {
namespace {

namespace fs = std::filesystem;
using Kind = FileError::Kind;

constexpr const char* kInputsGroup = "inputs";
constexpr const char* kOutputsGroup = "outputs";
constexpr const char* kStagesGroup = "stages";
constexpr const char* kOutputName = "output";
constexpr const char* kElementTypeAttr = "element_type";
constexpr unsigned kDeflateLevel = 4;
constexpr std::size_t kMaxChunkBytes = std::size_t{1} << 20;  // ~1 MiB per chunk
// Larger datasets (model-sized weights, generated on demand) are stored uncompressed: deflate
// gains little on random floats and would dominate the time to write them.
constexpr std::size_t kMaxCompressedBytes = std::size_t{64} << 20;

// ----------------------------------------------------------------------------------------------
// Errors

// Shortest decimal that reads back as exactly v ("1.702", not "1.7019999999999999").
std::string fmt_double(double v) {
    char buf[40];
    for (int precision = 15; precision <= 17; ++precision) {
        std::snprintf(buf, sizeof buf, "%.*g", precision, v);
        if (std::strtod(buf, nullptr) == v) break;
    }
    return buf;
}

// The context of one read or write: every error names the file first.
struct Ctx {
    fs::path file;

    [[noreturn]] void fail(Kind kind, const std::string& where, const std::string& what) const {
        throw FileError(kind, "golden file '" + file.string() + "': " + where + ": " + what);
    }
    [[noreturn]] void malformed(const std::string& where, const std::string& what) const {
        fail(Kind::malformed, where, what);
    }
};

// HDF5 reports failures on a per-thread error stack; collect its descriptions (innermost first)
// so that messages carry the library's reason. Must run right after the failing call, before
// any other API call clears the stack.
herr_t collect_error(unsigned, const H5E_error2_t* e, void* out) {
    auto* v = static_cast<std::vector<std::string>*>(out);
    if (e->desc && *e->desc) v->emplace_back(e->desc);
    return 0;
}

std::vector<std::string> hdf5_error_stack() {
    std::vector<std::string> descs;
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, collect_error, &descs);
    H5Eclear2(H5E_DEFAULT);
    return descs;
}

std::string join_details(const std::vector<std::string>& descs) {
    if (descs.empty()) return "";
    std::string out = " (HDF5: " + descs.front();
    for (std::size_t i = 1; i < descs.size() && i < 3; ++i) out += "; " + descs[i];
    return out + ")";
}

std::string hdf5_detail() { return join_details(hdf5_error_stack()); }

bool contains_nocase(std::string_view hay, std::string_view needle) {
    auto it = std::search(hay.begin(), hay.end(), needle.begin(), needle.end(), [](char a, char b) {
        return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
    });
    return it != hay.end();
}

// Silences HDF5's automatic printing of its error stack for the duration of one public call
// (we report through FileError instead), restoring whatever the caller had configured.
class QuietHdf5 {
public:
    QuietHdf5() {
        H5Eget_auto2(H5E_DEFAULT, &func_, &data_);
        H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    }
    ~QuietHdf5() { H5Eset_auto2(H5E_DEFAULT, func_, data_); }
    QuietHdf5(const QuietHdf5&) = delete;
    QuietHdf5& operator=(const QuietHdf5&) = delete;

private:
    H5E_auto2_t func_ = nullptr;
    void* data_ = nullptr;
};

// ----------------------------------------------------------------------------------------------
// Handles

// Owns one HDF5 identifier and closes it with the matching H5?close.
class H5Id {
public:
    using Closer = herr_t (*)(hid_t);
    H5Id() = default;
    H5Id(hid_t id, Closer close) : id_(id), close_(close) {}
    H5Id(H5Id&& o) noexcept : id_(std::exchange(o.id_, -1)), close_(o.close_) {}
    H5Id& operator=(H5Id&& o) noexcept {
        if (this != &o) {
            reset();
            id_ = std::exchange(o.id_, -1);
            close_ = o.close_;
        }
        return *this;
    }
    H5Id(const H5Id&) = delete;
    H5Id& operator=(const H5Id&) = delete;
    ~H5Id() { reset(); }

    hid_t get() const { return id_; }
    bool valid() const { return id_ >= 0; }
    // Closes now and reports whether closing succeeded (closing a file flushes it).
    bool close() {
        const bool ok = id_ < 0 || close_(id_) >= 0;
        id_ = -1;
        return ok;
    }

private:
    void reset() {
        if (id_ >= 0 && close_) close_(id_);
        id_ = -1;
    }
    hid_t id_ = -1;
    Closer close_ = nullptr;
};

// Wraps a freshly returned id, throwing (with HDF5's reason) when the call failed.
H5Id own(hid_t id, H5Id::Closer close, const Ctx& ctx, Kind kind, const std::string& where,
         const std::string& what) {
    if (id < 0) ctx.fail(kind, where, what + hdf5_detail());
    return H5Id(id, close);
}

void check(herr_t status, const Ctx& ctx, Kind kind, const std::string& where, const std::string& what) {
    if (status < 0) ctx.fail(kind, where, what + hdf5_detail());
}

// A link of the given name exists in `loc` (false for a dangling or failed lookup).
bool link_exists(hid_t loc, const std::string& name) { return H5Lexists(loc, name.c_str(), H5P_DEFAULT) > 0; }

// ----------------------------------------------------------------------------------------------
// Types

std::string where_root_attr(const std::string& name) { return "root attribute '" + name + "'"; }
std::string where_attr(const std::string& name, const std::string& object) {
    return "attribute '" + name + "' of " + object;
}

// IEEE 754 binary16: sign bit 15, exponent bits 10-14 (bias 15), mantissa bits 0-9. HDF5 has
// no predefined half type, so derive one from a 32-bit IEEE float of the wanted byte order.
H5Id make_half_type(hid_t float32_base) {
    hid_t t = H5Tcopy(float32_base);
    if (t < 0) return H5Id();
    H5Id type(t, H5Tclose);
    const bool ok = H5Tset_fields(t, 15, 10, 5, 0, 10) >= 0 && H5Tset_precision(t, 16) >= 0 &&
                    H5Tset_offset(t, 0) >= 0 && H5Tset_size(t, 2) >= 0 && H5Tset_ebias(t, 15) >= 0;
    return ok ? std::move(type) : H5Id();
}

bool is_ieee_half(hid_t type) {
    if (H5Tget_class(type) != H5T_FLOAT || H5Tget_size(type) != 2) return false;
    std::size_t spos = 0, epos = 0, esize = 0, mpos = 0, msize = 0;
    if (H5Tget_fields(type, &spos, &epos, &esize, &mpos, &msize) < 0) return false;
    return spos == 15 && epos == 10 && esize == 5 && mpos == 0 && msize == 10 && H5Tget_ebias(type) == 15 &&
           H5Tget_precision(type) == 16 && H5Tget_offset(type) == 0;
}

// The HDF5 type a tensor of `dt` is stored as (file) or held in (memory, native byte order).
H5Id element_h5_type(DType dt, bool in_file) {
    auto copy = [](hid_t base) {
        hid_t t = H5Tcopy(base);
        return t < 0 ? H5Id() : H5Id(t, H5Tclose);
    };
    switch (dt) {
        case DType::f64: return copy(in_file ? H5T_IEEE_F64LE : H5T_NATIVE_DOUBLE);
        case DType::f32: return copy(in_file ? H5T_IEEE_F32LE : H5T_NATIVE_FLOAT);
        case DType::f16: return make_half_type(in_file ? H5T_IEEE_F32LE : H5T_NATIVE_FLOAT);
        case DType::bf16: return copy(in_file ? H5T_STD_U16LE : H5T_NATIVE_UINT16);
        case DType::i32: return copy(in_file ? H5T_STD_I32LE : H5T_NATIVE_INT32);
        case DType::i64: return copy(in_file ? H5T_STD_I64LE : H5T_NATIVE_INT64);
    }
    return H5Id();
}

// "64-bit float", "16-bit unsigned integer", ...: for messages about a stored type.
std::string describe_h5_type(hid_t type) {
    const std::string bits = std::to_string(H5Tget_size(type) * 8) + "-bit ";
    switch (H5Tget_class(type)) {
        case H5T_FLOAT: return bits + (is_ieee_half(type) ? "IEEE half float" : "float");
        case H5T_INTEGER: return bits + (H5Tget_sign(type) == H5T_SGN_NONE ? "unsigned integer" : "signed integer");
        case H5T_STRING: return "string";
        case H5T_COMPOUND: return "compound";
        case H5T_ENUM: return "enum";
        case H5T_ARRAY: return "array";
        case H5T_VLEN: return "variable-length sequence";
        default: return "non-numeric type";
    }
}

bool is_signed_int(hid_t type, std::size_t size) {
    return H5Tget_class(type) == H5T_INTEGER && H5Tget_size(type) == size && H5Tget_sign(type) != H5T_SGN_NONE;
}

// Whether data stored as `type` can be read as element type `dt` without changing its bits.
bool stored_type_matches(DType dt, hid_t type) {
    const H5T_class_t cls = H5Tget_class(type);
    const std::size_t size = H5Tget_size(type);
    switch (dt) {
        case DType::f64: return cls == H5T_FLOAT && size == 8;
        case DType::f32: return cls == H5T_FLOAT && size == 4;
        case DType::f16: return is_ieee_half(type);
        case DType::bf16: return cls == H5T_INTEGER && size == 2;  // bit patterns; either sign
        case DType::i32: return is_signed_int(type, 4);
        case DType::i64: return is_signed_int(type, 8);
    }
    return false;
}

// Element type of a dataset written without an element_type attribute, where the stored type
// says it unambiguously. A 16-bit integer is never guessed: it could be bf16 bit patterns.
std::optional<DType> infer_element_type(hid_t type) {
    for (DType dt : {DType::f64, DType::f32, DType::f16, DType::i32, DType::i64})
        if (stored_type_matches(dt, type)) return dt;
    return std::nullopt;
}

// ----------------------------------------------------------------------------------------------
// Attributes: writing

// Scalar attributes only; strings are variable-length UTF-8, which h5py reads as str.
void write_attr(hid_t obj, const std::string& name, hid_t file_type, hid_t mem_type, const void* value,
                const Ctx& ctx, const std::string& where) {
    H5Id space = own(H5Screate(H5S_SCALAR), H5Sclose, ctx, Kind::unreadable, where, "cannot create dataspace");
    H5Id attr = own(H5Acreate2(obj, name.c_str(), file_type, space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose,
                    ctx, Kind::unreadable, where, "cannot create attribute");
    check(H5Awrite(attr.get(), mem_type, value), ctx, Kind::unreadable, where, "cannot write attribute");
}

H5Id utf8_string_type(const Ctx& ctx, const std::string& where) {
    H5Id t = own(H5Tcopy(H5T_C_S1), H5Tclose, ctx, Kind::unreadable, where, "cannot create string type");
    check(H5Tset_size(t.get(), H5T_VARIABLE), ctx, Kind::unreadable, where, "cannot create string type");
    check(H5Tset_cset(t.get(), H5T_CSET_UTF8), ctx, Kind::unreadable, where, "cannot create string type");
    return t;
}

void write_string_attr(hid_t obj, const std::string& name, const std::string& value, const Ctx& ctx,
                       const std::string& where) {
    if (value.find('\0') != std::string::npos) ctx.malformed(where, "string contains a NUL character");
    H5Id type = utf8_string_type(ctx, where);
    const char* p = value.c_str();
    write_attr(obj, name, type.get(), type.get(), &p, ctx, where);
}

void write_root_string(hid_t root, const std::string& name, std::string_view value, const Ctx& ctx) {
    write_string_attr(root, name, std::string(value), ctx, where_root_attr(name));
}
void write_root_i64(hid_t root, const std::string& name, std::int64_t v, const Ctx& ctx) {
    write_attr(root, name, H5T_STD_I64LE, H5T_NATIVE_INT64, &v, ctx, where_root_attr(name));
}
void write_root_u64(hid_t root, const std::string& name, std::uint64_t v, const Ctx& ctx) {
    write_attr(root, name, H5T_STD_U64LE, H5T_NATIVE_UINT64, &v, ctx, where_root_attr(name));
}
void write_root_u8(hid_t root, const std::string& name, std::uint8_t v, const Ctx& ctx) {
    write_attr(root, name, H5T_STD_U8LE, H5T_NATIVE_UINT8, &v, ctx, where_root_attr(name));
}
void write_root_f64(hid_t root, const std::string& name, double v, const Ctx& ctx) {
    write_attr(root, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &v, ctx, where_root_attr(name));
}

// ----------------------------------------------------------------------------------------------
// Attributes: reading

// Opens attribute `name` of `obj` when it exists, checking that it holds a single value.
std::optional<H5Id> open_attr(hid_t obj, const std::string& name, const Ctx& ctx, const std::string& where) {
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

H5Id attr_type(const H5Id& attr, const Ctx& ctx, const std::string& where) {
    return own(H5Aget_type(attr.get()), H5Tclose, ctx, Kind::malformed, where, "cannot read type");
}

// Accepts variable-length strings (what we and h5py write) and fixed-length ones.
std::optional<std::string> read_string_attr(hid_t obj, const std::string& name, const Ctx& ctx,
                                            const std::string& where) {
    std::optional<H5Id> attr = open_attr(obj, name, ctx, where);
    if (!attr) return std::nullopt;
    H5Id type = attr_type(*attr, ctx, where);
    if (H5Tget_class(type.get()) != H5T_STRING)
        ctx.malformed(where, "must be a string, found " + describe_h5_type(type.get()));
    H5Id mem = own(H5Tget_native_type(type.get(), H5T_DIR_ASCEND), H5Tclose, ctx, Kind::malformed, where,
                   "cannot read type");
    if (H5Tis_variable_str(type.get()) > 0) {
        char* p = nullptr;
        check(H5Aread(attr->get(), mem.get(), &p), ctx, Kind::malformed, where, "cannot read string");
        std::string s = p ? p : "";
        H5free_memory(p);
        return s;
    }
    std::vector<char> buf(H5Tget_size(type.get()) + 1, '\0');
    check(H5Aread(attr->get(), mem.get(), buf.data()), ctx, Kind::malformed, where, "cannot read string");
    std::string s(buf.data());  // stops at the first NUL (nullterm / nullpad)
    if (H5Tget_strpad(type.get()) == H5T_STR_SPACEPAD)
        s.erase(s.find_last_not_of(' ') + 1);
    return s;
}

// Reads a numeric attribute converted to `mem_type`; `accept_float` admits float storage.
template <class T>
std::optional<T> read_number_attr(hid_t obj, const std::string& name, hid_t mem_type, bool accept_float,
                                  const Ctx& ctx, const std::string& where) {
    std::optional<H5Id> attr = open_attr(obj, name, ctx, where);
    if (!attr) return std::nullopt;
    H5Id type = attr_type(*attr, ctx, where);
    const H5T_class_t cls = H5Tget_class(type.get());
    if (cls != H5T_INTEGER && !(accept_float && cls == H5T_FLOAT))
        ctx.malformed(where, std::string("must be ") + (accept_float ? "a number" : "an integer") + ", found " +
                                 describe_h5_type(type.get()));
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

std::optional<std::int64_t> read_i64_attr(hid_t obj, const std::string& name, const Ctx& ctx) {
    return read_number_attr<std::int64_t>(obj, name, H5T_NATIVE_INT64, false, ctx, where_root_attr(name));
}
std::optional<std::uint64_t> read_u64_attr(hid_t obj, const std::string& name, const Ctx& ctx) {
    return read_number_attr<std::uint64_t>(obj, name, H5T_NATIVE_UINT64, false, ctx, where_root_attr(name));
}
std::optional<double> read_f64_attr(hid_t obj, const std::string& name, const Ctx& ctx) {
    return read_number_attr<double>(obj, name, H5T_NATIVE_DOUBLE, true, ctx, where_root_attr(name));
}
std::optional<std::string> read_root_string(hid_t obj, const std::string& name, const Ctx& ctx) {
    return read_string_attr(obj, name, ctx, where_root_attr(name));
}

std::string require_root_string(hid_t root, const std::string& name, const Ctx& ctx) {
    std::optional<std::string> v = read_root_string(root, name, ctx);
    if (!v) ctx.malformed(where_root_attr(name), "missing (required)");
    return *v;
}

// ----------------------------------------------------------------------------------------------
// Datasets: writing

// Chunk shape of at most kMaxChunkBytes, never larger than the dataset: trailing dimensions are
// kept whole where possible (rows stay contiguous) and leading ones are cut first.
std::vector<hsize_t> chunk_dims(const Shape& shape, std::size_t elem_size) {
    std::vector<hsize_t> chunk(shape.begin(), shape.end());
    for (std::size_t d = 0; d < chunk.size(); ++d) {
        std::size_t slice = elem_size;  // bytes of one index step along d
        for (std::size_t j = d + 1; j < chunk.size(); ++j) slice *= shape[j];
        if (slice * shape[d] <= kMaxChunkBytes) break;
        chunk[d] = std::max<std::size_t>(1, kMaxChunkBytes / slice);
        if (slice <= kMaxChunkBytes) break;  // chunk[d] * slice fits now
    }
    return chunk;
}

// Non-empty data: chunked, shuffle + deflate (up to kMaxCompressedBytes), then Fletcher32 last so
// that the checksum covers the bytes as stored (a flipped stored byte fails the checksum before
// decompression sees it).
// Empty data: contiguous without filters, since HDF5 cannot chunk a zero-length dimension.
H5Id dataset_creation_plist(const Tensor& t, const Ctx& ctx, const std::string& where) {
    H5Id dcpl = own(H5Pcreate(H5P_DATASET_CREATE), H5Pclose, ctx, Kind::unreadable, where,
                    "cannot create property list");
    check(H5Pset_obj_track_times(dcpl.get(), false), ctx, Kind::unreadable, where, "cannot set properties");
    if (t.size() == 0) return dcpl;
    const std::vector<hsize_t> chunk = chunk_dims(t.shape(), dtype_size(t.dtype()));
    const bool compress = t.nbytes() <= kMaxCompressedBytes;
    const bool ok = H5Pset_chunk(dcpl.get(), static_cast<int>(chunk.size()), chunk.data()) >= 0 &&
                    (!compress || (H5Pset_shuffle(dcpl.get()) >= 0 && H5Pset_deflate(dcpl.get(), kDeflateLevel) >= 0)) &&
                    H5Pset_fletcher32(dcpl.get()) >= 0;
    if (!ok) ctx.fail(Kind::unreadable, where, "cannot set chunking and filters" + hdf5_detail());
    return dcpl;
}

void write_dataset(hid_t group, const std::string& group_path, const std::string& name, const Tensor& t,
                   const Ctx& ctx) {
    const std::string where = "dataset " + group_path + "/" + name;
    if (t.rank() == 0) ctx.malformed(where, "rank-0 tensors are not stored (give it shape [1])");
    const std::vector<hsize_t> dims(t.shape().begin(), t.shape().end());
    H5Id space = own(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), H5Sclose, ctx,
                     Kind::unreadable, where, "cannot create dataspace");
    H5Id file_type = element_h5_type(t.dtype(), true);
    H5Id mem_type = element_h5_type(t.dtype(), false);
    if (!file_type.valid() || !mem_type.valid())
        ctx.fail(Kind::unreadable, where, "cannot build the element type" + hdf5_detail());
    H5Id dcpl = dataset_creation_plist(t, ctx, where);
    H5Id dset = own(H5Dcreate2(group, name.c_str(), file_type.get(), space.get(), H5P_DEFAULT, dcpl.get(),
                               H5P_DEFAULT),
                    H5Dclose, ctx, Kind::unreadable, where, "cannot create dataset");
    write_string_attr(dset.get(), kElementTypeAttr, std::string(dtype_name(t.dtype())), ctx,
                      where_attr(kElementTypeAttr, group_path + "/" + name));
    if (t.size() > 0)
        check(H5Dwrite(dset.get(), mem_type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, t.data()), ctx,
              Kind::unreadable, where, "cannot write data");
}

H5Id create_group(hid_t parent, const std::string& name, const Ctx& ctx) {
    const std::string where = "group /" + name;
    H5Id gcpl = own(H5Pcreate(H5P_GROUP_CREATE), H5Pclose, ctx, Kind::unreadable, where,
                    "cannot create property list");
    check(H5Pset_obj_track_times(gcpl.get(), false), ctx, Kind::unreadable, where, "cannot set properties");
    return own(H5Gcreate2(parent, name.c_str(), H5P_DEFAULT, gcpl.get(), H5P_DEFAULT), H5Gclose, ctx,
               Kind::unreadable, where, "cannot create group");
}

void write_tensor_group(hid_t root, const std::string& group_name, const std::map<std::string, Tensor>& tensors,
                        const Ctx& ctx) {
    H5Id group = create_group(root, group_name, ctx);
    for (const auto& [name, t] : tensors) write_dataset(group.get(), "/" + group_name, name, t, ctx);
}

// ----------------------------------------------------------------------------------------------
// Datasets: reading

bool is_known_input(const std::string& name) {
    for (const char* n : kInputNames)
        if (name == n) return true;
    return false;
}

std::string known_inputs_list() {
    std::string out;
    for (const char* n : kInputNames) out += (out.empty() ? "" : ", ") + std::string(n);
    return out;
}

// A dataset name usable as a single link in a group.
void check_dataset_name(const std::string& group_path, const std::string& name, const Ctx& ctx) {
    if (name.empty() || name == "." || name.find('/') != std::string::npos)
        ctx.malformed("group " + group_path, "invalid dataset name '" + name + "'");
}

// The element type of a dataset: its element_type attribute (authoritative), which must agree
// with how the data is stored; or, without the attribute, what the stored type says unambiguously.
DType dataset_element_type(hid_t dset, hid_t type, const std::string& path, const Ctx& ctx) {
    const std::string attr_where = where_attr(kElementTypeAttr, path);
    const std::optional<std::string> declared = read_string_attr(dset, kElementTypeAttr, ctx, attr_where);
    if (!declared) {
        std::optional<DType> inferred = infer_element_type(type);
        if (!inferred)
            ctx.malformed("dataset " + path, "no element_type attribute, and the stored type (" +
                                                 describe_h5_type(type) +
                                                 ") does not determine one (bf16 bit patterns stored as "
                                                 "16-bit integers need element_type = \"bf16\")");
        return *inferred;
    }
    const std::optional<DType> dt = parse_dtype(*declared);
    if (!dt) ctx.malformed(attr_where, "unknown element type '" + *declared + "' (expected f64, f32, f16, bf16, i32 or i64)");
    if (!stored_type_matches(*dt, type))
        ctx.malformed("dataset " + path, "element_type is '" + *declared + "' but the data is stored as " +
                                             describe_h5_type(type));
    return *dt;
}

Shape dataset_shape(hid_t dset, const std::string& where, const Ctx& ctx) {
    H5Id space = own(H5Dget_space(dset), H5Sclose, ctx, Kind::malformed, where, "cannot read dataspace");
    if (H5Sget_simple_extent_type(space.get()) != H5S_SIMPLE)
        ctx.malformed(where, "must have a simple dataspace of rank >= 1 (scalar and null are not used)");
    const int rank = H5Sget_simple_extent_ndims(space.get());
    if (rank < 1) ctx.malformed(where, "must have rank >= 1");
    std::vector<hsize_t> dims(static_cast<std::size_t>(rank));
    check(H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr), ctx, Kind::malformed, where,
          "cannot read dimensions");
    return Shape(dims.begin(), dims.end());
}

// A failed H5Dread of data whose metadata was fine: the stored bytes changed (checksum or
// decompression failure), unless a filter the data needs is simply not available here.
[[noreturn]] void fail_data_read(const std::string& where, const Ctx& ctx) {
    const std::vector<std::string> stack = hdf5_error_stack();
    const std::string detail = join_details(stack);
    bool checksum = false, missing_filter = false;
    for (const std::string& d : stack) {
        checksum = checksum || contains_nocase(d, "fletcher32") || contains_nocase(d, "checksum");
        missing_filter = missing_filter || contains_nocase(d, "not registered") ||
                         contains_nocase(d, "not available") || contains_nocase(d, "can't open");
    }
    if (checksum)
        ctx.fail(Kind::corrupt, where,
                 "checksum (Fletcher32) mismatch: the stored data changed after writing" + detail);
    if (missing_filter) ctx.fail(Kind::unreadable, where, "a filter the data needs is not available" + detail);
    ctx.fail(Kind::corrupt, where, "cannot read the stored data: it is damaged (decompression failed)" + detail);
}

Tensor read_dataset(hid_t group, const std::string& group_path, const std::string& name, const Ctx& ctx) {
    const std::string path = group_path + "/" + name;
    const std::string where = "dataset " + path;
    H5Id obj = own(H5Oopen(group, name.c_str(), H5P_DEFAULT), H5Oclose, ctx, Kind::malformed, where,
                   "cannot open");
    if (H5Iget_type(obj.get()) != H5I_DATASET) ctx.malformed(where, "is not a dataset");
    const hid_t dset = obj.get();
    H5Id type = own(H5Dget_type(dset), H5Tclose, ctx, Kind::malformed, where, "cannot read type");
    const DType dt = dataset_element_type(dset, type.get(), path, ctx);
    const Shape shape = dataset_shape(dset, where, ctx);
    Tensor t;
    try {
        t = Tensor(dt, shape);
    } catch (const InputError& e) {
        ctx.malformed(where, e.what());
    } catch (const std::bad_alloc&) {
        ctx.malformed(where, "shape " + shape_to_string(shape) + " is too large to load");
    }
    if (t.size() == 0) return t;
    // bf16 may be stored signed by a foreign writer; read with the same sign to keep the bits.
    H5Id mem = (dt == DType::bf16 && H5Tget_sign(type.get()) != H5T_SGN_NONE)
                   ? H5Id(H5Tcopy(H5T_NATIVE_INT16), H5Tclose)
                   : element_h5_type(dt, false);
    if (!mem.valid()) ctx.fail(Kind::unreadable, where, "cannot build the element type" + hdf5_detail());
    if (H5Dread(dset, mem.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, t.data()) < 0) fail_data_read(where, ctx);
    return t;
}

// Opens group `/name`: nullopt when absent; malformed when it is something else.
std::optional<H5Id> open_group(hid_t root, const std::string& name, const Ctx& ctx) {
    if (!link_exists(root, name)) return std::nullopt;
    const std::string where = "group /" + name;
    H5Id obj = own(H5Oopen(root, name.c_str(), H5P_DEFAULT), H5Oclose, ctx, Kind::malformed, where,
                   "cannot open");
    if (H5Iget_type(obj.get()) != H5I_GROUP) ctx.malformed(where, "is not a group");
    return obj;
}

std::vector<std::string> member_names(hid_t group, const std::string& where, const Ctx& ctx) {
    H5G_info_t info;
    check(H5Gget_info(group, &info), ctx, Kind::malformed, where, "cannot list members");
    std::vector<std::string> names;
    for (hsize_t i = 0; i < info.nlinks; ++i) {
        const ssize_t n = H5Lget_name_by_idx(group, ".", H5_INDEX_NAME, H5_ITER_INC, i, nullptr, 0, H5P_DEFAULT);
        if (n < 0) ctx.malformed(where, "cannot list members" + hdf5_detail());
        std::vector<char> buf(static_cast<std::size_t>(n) + 1, '\0');
        if (H5Lget_name_by_idx(group, ".", H5_INDEX_NAME, H5_ITER_INC, i, buf.data(), buf.size(), H5P_DEFAULT) < 0)
            ctx.malformed(where, "cannot list members" + hdf5_detail());
        names.emplace_back(buf.data());
    }
    return names;
}

std::map<std::string, Tensor> read_tensor_group(const H5Id& group, const std::string& group_name,
                                                const Ctx& ctx) {
    const std::string group_path = "/" + group_name;
    std::map<std::string, Tensor> out;
    for (const std::string& name : member_names(group.get(), "group " + group_path, ctx))
        out.emplace(name, read_dataset(group.get(), group_path, name, ctx));
    return out;
}

// ----------------------------------------------------------------------------------------------
// Case-level rules shared by reader and writer

void check_outputs_f64(const std::map<std::string, Tensor>& tensors, const std::string& group_path,
                       const Ctx& ctx) {
    for (const auto& [name, t] : tensors)
        if (t.dtype() != DType::f64)
            ctx.malformed("dataset " + group_path + "/" + name,
                          "must be f64, is " + std::string(dtype_name(t.dtype())));
}

void check_inputs_known(const std::map<std::string, Tensor>& inputs, const Ctx& ctx) {
    for (const auto& [name, t] : inputs)
        if (!is_known_input(name))
            ctx.malformed("dataset /inputs/" + name, "unknown input name (expected one of " + known_inputs_list() + ")");
}

// /outputs/output is the op's result, so it has the shape of hidden_states.
void check_output_shape(const GoldenCase& c, const Ctx& ctx) {
    auto out = c.outputs.find(kOutputName);
    auto hidden = c.problem.inputs.find(kHiddenStates);
    if (out == c.outputs.end() || hidden == c.problem.inputs.end()) return;
    if (out->second.shape() != hidden->second.shape())
        ctx.malformed("dataset /outputs/output", "shape " + shape_to_string(out->second.shape()) +
                                                     " differs from /inputs/hidden_states " +
                                                     shape_to_string(hidden->second.shape()));
}

ResolvedParams resolve_or_fail(const OpAttributes& a, const Ctx& ctx) {
    try {
        return resolve(a);
    } catch (const InputError& e) {
        ctx.malformed("op attributes", e.what());
    }
}

// ----------------------------------------------------------------------------------------------
// Root attributes: reading

template <class F>
auto parse_attr(const std::string& name, const std::string& value, F parse, const Ctx& ctx) {
    try {
        return parse(value);
    } catch (const InputError& e) {
        ctx.malformed(where_root_attr(name), e.what());
    }
}

void check_format(hid_t root, const Ctx& ctx) {
    const std::optional<std::string> found = read_root_string(root, "format", ctx);
    if (!found) ctx.malformed(where_root_attr("format"), "missing (required; not a golden file?)");
    const std::string& format = *found;
    if (format != kFormatName)
        ctx.malformed(where_root_attr("format"),
                      "is '" + format + "', expected '" + kFormatName + "' (not a golden file)");
    const std::optional<std::int64_t> version = read_i64_attr(root, "format_version", ctx);
    if (!version) ctx.malformed(where_root_attr("format_version"), "missing (required)");
    if (*version != kFormatVersion)
        ctx.malformed(where_root_attr("format_version"),
                      "is " + std::to_string(*version) + "; this reader understands version " +
                          std::to_string(kFormatVersion) + " only");
}

OpAttributes read_op_attributes(hid_t root, const Ctx& ctx) {
    const ExpertType type = parse_attr("expert_type", require_root_string(root, "expert_type", ctx),
                                       parse_expert_type, ctx);
    const Convention conv = parse_attr("convention", require_root_string(root, "convention", ctx),
                                       parse_convention, ctx);
    OpAttributes a = default_attributes(type, conv);
    a.gate_idx = read_i64_attr(root, "gate_idx", ctx);  // absent means absent, not the default
    if (auto v = read_f64_attr(root, "expert_alpha", ctx)) a.expert_alpha = *v;
    if (auto v = read_f64_attr(root, "expert_beta", ctx)) a.expert_beta = *v;
    return a;
}

[[noreturn]] void fail_resolved(const std::string& name, const std::string& got, const std::string& expected,
                                const Ctx& ctx) {
    ctx.malformed(where_root_attr(name), "is " + got + " but the op attributes resolve to " + expected);
}

// The resolved-parameter attributes are a convenience for readers that do not implement
// resolve(); when present they must say what resolve() says.
void check_resolved(hid_t root, const OpAttributes& a, const Ctx& ctx) {
    const std::optional<double> swish = read_f64_attr(root, "swish_beta", ctx);
    const std::optional<double> clamp = read_f64_attr(root, "clamp_limit", ctx);
    const std::optional<std::int64_t> lane = read_i64_attr(root, "gate_lane", ctx);
    const std::optional<std::string> wl = read_root_string(root, "weight_layout", ctx);
    const std::optional<std::string> rl = read_root_string(root, "routing_layout", ctx);
    if (!swish && !clamp && !lane && !wl && !rl) return;
    const ResolvedParams r = resolve_or_fail(a, ctx);
    if (swish && !(*swish == r.swish_beta))
        fail_resolved("swish_beta", fmt_double(*swish), fmt_double(r.swish_beta), ctx);
    if (clamp && !(*clamp == r.clamp_limit))
        fail_resolved("clamp_limit", fmt_double(*clamp), fmt_double(r.clamp_limit), ctx);
    if (lane && *lane != r.gate_lane)
        fail_resolved("gate_lane", std::to_string(*lane), std::to_string(r.gate_lane), ctx);
    if (wl && *wl != weight_layout_name(r.weight_layout))
        fail_resolved("weight_layout", "'" + *wl + "'", "'" + std::string(weight_layout_name(r.weight_layout)) + "'",
                      ctx);
    if (rl && *rl != routing_layout_name(r.routing_layout))
        fail_resolved("routing_layout", "'" + *rl + "'",
                      "'" + std::string(routing_layout_name(r.routing_layout)) + "'", ctx);
}

void read_case_metadata(hid_t root, GoldenCase& c, const Ctx& ctx) {
    c.seed = read_u64_attr(root, "seed", ctx);
    c.generator = read_root_string(root, "generator", ctx).value_or("");
    c.tier = read_root_string(root, "tier", ctx).value_or("");
    c.description = read_root_string(root, "description", ctx).value_or("");
    const std::int64_t exact = read_i64_attr(root, "exact", ctx).value_or(0);
    if (exact != 0 && exact != 1) ctx.malformed(where_root_attr("exact"), "must be 0 or 1, is " + std::to_string(exact));
    c.exact = exact == 1;
}

// ----------------------------------------------------------------------------------------------
// Root attributes: writing

void write_root_attributes(hid_t root, const GoldenCase& c, const ResolvedParams& r, const Ctx& ctx) {
    const OpAttributes& a = c.problem.attributes;
    write_root_string(root, "format", kFormatName, ctx);
    write_root_i64(root, "format_version", kFormatVersion, ctx);
    write_root_string(root, "case", c.problem.name, ctx);
    write_root_string(root, "expert_type", expert_type_name(a.expert_type), ctx);
    write_root_string(root, "convention", convention_name(a.convention), ctx);
    write_root_f64(root, "expert_alpha", a.expert_alpha, ctx);
    write_root_f64(root, "expert_beta", a.expert_beta, ctx);
    if (a.gate_idx) write_root_i64(root, "gate_idx", *a.gate_idx, ctx);
    write_root_f64(root, "swish_beta", r.swish_beta, ctx);
    write_root_f64(root, "clamp_limit", r.clamp_limit, ctx);
    write_root_i64(root, "gate_lane", r.gate_lane, ctx);
    write_root_string(root, "weight_layout", weight_layout_name(r.weight_layout), ctx);
    write_root_string(root, "routing_layout", routing_layout_name(r.routing_layout), ctx);
    if (c.seed) write_root_u64(root, "seed", *c.seed, ctx);
    if (!c.generator.empty()) write_root_string(root, "generator", c.generator, ctx);
    if (!c.tier.empty()) write_root_string(root, "tier", c.tier, ctx);
    if (!c.description.empty()) write_root_string(root, "description", c.description, ctx);
    write_root_u8(root, "exact", c.exact ? 1 : 0, ctx);
}

// ----------------------------------------------------------------------------------------------
// Files

// File access: use file locking where the file system supports it, and close everything with
// the file so that it is complete on disk before the rename.
H5Id file_access_plist(const Ctx& ctx, Kind kind) {
    H5Id fapl = own(H5Pcreate(H5P_FILE_ACCESS), H5Pclose, ctx, kind, "file", "cannot create property list");
    check(H5Pset_file_locking(fapl.get(), true, true), ctx, kind, "file", "cannot set file locking");
    check(H5Pset_fclose_degree(fapl.get(), H5F_CLOSE_STRONG), ctx, kind, "file", "cannot set close degree");
    return fapl;
}

H5Id open_for_reading(const Ctx& ctx) {
    std::error_code ec;
    if (!fs::exists(ctx.file, ec)) ctx.fail(Kind::unreadable, "file", "does not exist");
    if (fs::is_directory(ctx.file, ec)) ctx.fail(Kind::unreadable, "file", "is a directory");
    const htri_t is_hdf5 = H5Fis_hdf5(ctx.file.c_str());
    if (is_hdf5 < 0) ctx.fail(Kind::unreadable, "file", "cannot be opened" + hdf5_detail());
    if (is_hdf5 == 0) ctx.fail(Kind::unreadable, "file", "is not an HDF5 file");
    H5Id fapl = file_access_plist(ctx, Kind::unreadable);
    return own(H5Fopen(ctx.file.c_str(), H5F_ACC_RDONLY, fapl.get()), H5Fclose, ctx, Kind::unreadable, "file",
               "cannot be opened as HDF5");
}

H5Id open_root(const H5Id& file, const Ctx& ctx) {
    return own(H5Gopen2(file.get(), "/", H5P_DEFAULT), H5Gclose, ctx, Kind::malformed, "group /",
               "cannot open the root group");
}

// A name for the temporary file next to the target, unique within this process and across
// processes (pid), so that concurrent writers never share one.
fs::path temp_path_for(const fs::path& target) {
    static std::atomic<unsigned long> counter{0};
    const std::string suffix = ".tmp." + std::to_string(static_cast<long>(::getpid())) + "." +
                               std::to_string(counter.fetch_add(1));
    return target.parent_path() / (target.filename().string() + suffix);
}

// Removes the temporary file unless the rename went through.
class TempFileGuard {
public:
    explicit TempFileGuard(fs::path p) : path_(std::move(p)) {}
    ~TempFileGuard() {
        if (armed_) {
            std::error_code ec;
            fs::remove(path_, ec);
        }
    }
    TempFileGuard(const TempFileGuard&) = delete;
    TempFileGuard& operator=(const TempFileGuard&) = delete;
    void disarm() { armed_ = false; }

private:
    fs::path path_;
    bool armed_ = true;
};

void check_case_for_writing(const GoldenCase& c, const Ctx& ctx) {
    check_inputs_known(c.problem.inputs, ctx);
    check_outputs_f64(c.outputs, "/outputs", ctx);
    check_outputs_f64(c.stages, "/stages", ctx);
    for (const auto& [name, t] : c.outputs) check_dataset_name("/outputs", name, ctx);
    for (const auto& [name, t] : c.stages) check_dataset_name("/stages", name, ctx);
    check_output_shape(c, ctx);
}

void write_contents(const fs::path& tmp, const GoldenCase& c, const ResolvedParams& r, const Ctx& ctx) {
    H5Id fcpl = own(H5Pcreate(H5P_FILE_CREATE), H5Pclose, ctx, Kind::unreadable, "file",
                    "cannot create property list");
    // The root group is created from the file creation list: no timestamps there either.
    check(H5Pset_obj_track_times(fcpl.get(), false), ctx, Kind::unreadable, "file", "cannot set properties");
    H5Id fapl = file_access_plist(ctx, Kind::unreadable);
    H5Id file = own(H5Fcreate(tmp.c_str(), H5F_ACC_EXCL, fcpl.get(), fapl.get()), H5Fclose, ctx,
                    Kind::unreadable, "file", "cannot create temporary file '" + tmp.string() + "'");
    {
        H5Id root = open_root(file, ctx);
        write_root_attributes(root.get(), c, r, ctx);
        write_tensor_group(root.get(), kInputsGroup, c.problem.inputs, ctx);
        if (!c.outputs.empty()) write_tensor_group(root.get(), kOutputsGroup, c.outputs, ctx);
        if (!c.stages.empty()) write_tensor_group(root.get(), kStagesGroup, c.stages, ctx);
    }
    if (!file.close()) ctx.fail(Kind::unreadable, "file", "cannot finish writing '" + tmp.string() + "'" + hdf5_detail());
}

}  // namespace

GoldenCase read_golden(const std::filesystem::path& file, bool require_output) {
    const QuietHdf5 quiet;
    const Ctx ctx{file};
    H5Id f = open_for_reading(ctx);
    H5Id root = open_root(f, ctx);
    check_format(root.get(), ctx);

    GoldenCase c;
    c.problem.name = require_root_string(root.get(), "case", ctx);
    c.problem.attributes = read_op_attributes(root.get(), ctx);
    check_resolved(root.get(), c.problem.attributes, ctx);
    read_case_metadata(root.get(), c, ctx);

    std::optional<H5Id> inputs = open_group(root.get(), kInputsGroup, ctx);
    if (!inputs) ctx.malformed("group /inputs", "missing (required)");
    c.problem.inputs = read_tensor_group(*inputs, kInputsGroup, ctx);
    check_inputs_known(c.problem.inputs, ctx);

    if (std::optional<H5Id> outputs = open_group(root.get(), kOutputsGroup, ctx))
        c.outputs = read_tensor_group(*outputs, kOutputsGroup, ctx);
    if (std::optional<H5Id> stages = open_group(root.get(), kStagesGroup, ctx))
        c.stages = read_tensor_group(*stages, kStagesGroup, ctx);
    check_outputs_f64(c.outputs, "/outputs", ctx);
    check_outputs_f64(c.stages, "/stages", ctx);
    if (require_output && c.outputs.count(kOutputName) == 0)
        ctx.malformed("dataset /outputs/output", "missing (required: the reference result)");
    check_output_shape(c, ctx);
    return c;
}

void write_golden(const std::filesystem::path& file, const GoldenCase& c) {
    const QuietHdf5 quiet;
    const Ctx ctx{file};
    check_case_for_writing(c, ctx);
    const ResolvedParams r = resolve_or_fail(c.problem.attributes, ctx);

    const fs::path tmp = temp_path_for(file);
    TempFileGuard guard(tmp);
    write_contents(tmp, c, r, ctx);
    std::error_code ec;
    fs::rename(tmp, file, ec);
    if (ec) ctx.fail(Kind::unreadable, "file", "cannot rename '" + tmp.string() + "' over it: " + ec.message());
    guard.disarm();
}

}  // namespace moe::golden
