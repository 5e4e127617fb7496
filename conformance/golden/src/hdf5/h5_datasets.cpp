#include "hdf5/h5_datasets.hpp"

#include <algorithm>
#include <cstring>
#include <memory>

#include "hdf5/h5_links.hpp"
#include "hdf5/h5_types.hpp"
#include "moe/spec/error.hpp"

namespace moe::golden::h5 {

namespace {

// Non-empty data: chunked, shuffle + deflate (up to kMaxCompressedBytes), then Fletcher32 last so
// that the checksum covers the bytes as stored (a flipped stored byte fails the checksum before
// decompression sees it).
// Empty data: contiguous without filters, since HDF5 cannot chunk a zero-length dimension.
H5Id dataset_creation_plist(const Tensor& t, const FileContext& ctx, const std::string& where) {
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

// A failed H5Dread of data whose metadata was fine: the stored bytes changed (checksum or
// decompression failure), unless a filter the data needs is simply not available here.
[[noreturn]] void fail_data_read(const std::string& where, const FileContext& ctx) {
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

}  // namespace

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

H5Id create_group(hid_t parent, const std::string& name, const FileContext& ctx, const std::string& where,
                  std::size_t members) {
    H5Id gcpl = own(H5Pcreate(H5P_GROUP_CREATE), H5Pclose, ctx, Kind::unreadable, where,
                    "cannot create property list");
    check(H5Pset_obj_track_times(gcpl.get(), false), ctx, Kind::unreadable, where, "cannot set properties");
    // Only above HDF5's default of 8, so that files of smaller groups stay byte-identical.
    if (members > 8)
        check(H5Pset_link_phase_change(gcpl.get(), static_cast<unsigned>(std::max<std::size_t>(members, 16)), 12), ctx,
              Kind::unreadable, where, "cannot set the link storage");
    return own(H5Gcreate2(parent, name.c_str(), H5P_DEFAULT, gcpl.get(), H5P_DEFAULT), H5Gclose, ctx,
               Kind::unreadable, where, "cannot create group");
}

H5Id create_dataset(hid_t group, const std::string& name, const Tensor& t, const FileContext& ctx,
                    const std::string& where) {
    if (t.rank() == 0) ctx.malformed(where, "rank-0 tensors are not stored (give it shape [1])");
    const std::vector<hsize_t> dims(t.shape().begin(), t.shape().end());
    H5Id space = own(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), H5Sclose, ctx,
                     Kind::unreadable, where, "cannot create dataspace");
    H5Id file_type = element_h5_type(t.dtype(), true);
    if (!file_type.valid()) ctx.fail(Kind::unreadable, where, "cannot build the element type" + hdf5_detail());
    H5Id dcpl = dataset_creation_plist(t, ctx, where);
    return own(H5Dcreate2(group, name.c_str(), file_type.get(), space.get(), H5P_DEFAULT, dcpl.get(), H5P_DEFAULT),
               H5Dclose, ctx, Kind::unreadable, where, "cannot create dataset");
}

void write_dataset_data(hid_t dset, const Tensor& t, const FileContext& ctx, const std::string& where) {
    if (t.size() == 0) return;
    H5Id mem_type = element_h5_type(t.dtype(), false);
    if (!mem_type.valid()) ctx.fail(Kind::unreadable, where, "cannot build the element type" + hdf5_detail());
    // 4-bit types are packed two per byte in memory and stored one per byte (h5py shows the values).
    const std::vector<std::uint8_t> unpacked = dtype_bits(t.dtype()) == 4 ? t.element_bytes() : std::vector<std::uint8_t>{};
    const void* data = unpacked.empty() ? static_cast<const void*>(t.data()) : unpacked.data();
    check(H5Dwrite(dset, mem_type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, data), ctx, Kind::unreadable, where,
          "cannot write data");
}

std::optional<H5Id> open_group(hid_t parent, const std::string& name, const FileContext& ctx,
                               const std::string& where) {
    if (!check_link(parent, name, ctx, where)) return std::nullopt;
    H5Id obj = open_in_file(parent, name, ctx, where);
    if (H5Iget_type(obj.get()) != H5I_GROUP) ctx.malformed(where, "is not a group");
    return obj;
}

H5Id open_dataset(hid_t group, const std::string& name, const FileContext& ctx, const std::string& where) {
    if (!check_link(group, name, ctx, where)) ctx.malformed(where, "does not exist");
    H5Id obj = open_in_file(group, name, ctx, where);
    if (H5Iget_type(obj.get()) != H5I_DATASET) ctx.malformed(where, "is not a dataset");
    return obj;
}

std::vector<std::string> member_names(hid_t group, const FileContext& ctx, const std::string& where) {
    H5G_info_t info;
    check(H5Gget_info(group, &info), ctx, Kind::malformed, where, "cannot list members");
    if (info.nlinks > kMaxGroupMembers)
        ctx.malformed(where, "has " + std::to_string(info.nlinks) + " members; a golden file's groups have at most " +
                                 std::to_string(kMaxGroupMembers));
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

Shape dataset_shape(hid_t dset, const FileContext& ctx, const std::string& where) {
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

bool read_writes_every_element(hid_t dset, const FileContext& ctx, const std::string& where) {
    H5Id dcpl = own(H5Dget_create_plist(dset), H5Pclose, ctx, Kind::malformed, where, "cannot read its properties");
    H5D_fill_time_t time = H5D_FILL_TIME_ERROR;
    H5D_fill_value_t value = H5D_FILL_VALUE_ERROR;
    if (H5Pget_fill_time(dcpl.get(), &time) < 0 || H5Pfill_value_defined(dcpl.get(), &value) < 0) {
        H5Eclear2(H5E_DEFAULT);
        return false;  // unknown: the caller zero-fills
    }
    return (time == H5D_FILL_TIME_IFSET || time == H5D_FILL_TIME_ALLOC) &&
           (value == H5D_FILL_VALUE_DEFAULT || value == H5D_FILL_VALUE_USER_DEFINED);
}

void read_dataset_data(hid_t dset, hid_t stored_type, Tensor& t, const FileContext& ctx, const std::string& where) {
    if (t.size() == 0) return;
    // bf16 and the float codes may be stored signed by a foreign writer; read with the same sign
    // to keep the bits.
    const bool codes = t.dtype() == DType::f4e2m1 || t.dtype() == DType::f8e4m3 || t.dtype() == DType::f8e5m2 ||
                       t.dtype() == DType::f8e8m0;
    const bool signed_bits = (t.dtype() == DType::bf16 || codes) && H5Tget_sign(stored_type) != H5T_SGN_NONE;
    H5Id mem = signed_bits ? H5Id(H5Tcopy(t.dtype() == DType::bf16 ? H5T_NATIVE_INT16 : H5T_NATIVE_INT8), H5Tclose)
                           : element_h5_type(t.dtype(), false);
    if (!mem.valid()) ctx.fail(Kind::unreadable, where, "cannot build the element type" + hdf5_detail());
    // Where HDF5 might leave bytes as they were, they are zeros, as before buffers were read into
    // unfilled.
    const bool zero_first = !read_writes_every_element(dset, ctx, where);
    if (dtype_bits(t.dtype()) != 4) {
        if (zero_first) std::memset(t.data(), 0, t.nbytes());
        if (H5Dread(dset, mem.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, t.data()) < 0) fail_data_read(where, ctx);
        return;
    }
    // 4-bit types: one byte per element in the file, packed two per byte once read; a stored value
    // outside the type's range (a u4 of 16) is malformed. new T[n] leaves the bytes as they are.
    const std::unique_ptr<std::uint8_t[]> unpacked(new std::uint8_t[t.size()]);
    if (zero_first) std::memset(unpacked.get(), 0, t.size());
    if (H5Dread(dset, mem.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, unpacked.get()) < 0) fail_data_read(where, ctx);
    try {
        t.set_element_bytes(unpacked.get());
    } catch (const InputError& e) {
        ctx.malformed(where, std::string(e.what()) + " (4-bit values are stored one per byte)");
    }
}

}  // namespace moe::golden::h5
