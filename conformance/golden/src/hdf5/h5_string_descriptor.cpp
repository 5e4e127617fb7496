#include "hdf5/h5_string_descriptor.hpp"

#include <cstdint>
#include <cstring>
#include <mutex>
#include <vector>

#include "hdf5/h5_global_heap.hpp"

namespace moe::golden::h5 {

namespace {

// The opaque type the descriptor is read into: HDF5 has no conversion from a variable-length
// string to it, so it runs ours, which leaves the stored bytes as they are.
constexpr const char* kDescriptorTag = "moe-conform: variable-length string descriptor, as stored";

// A "soft" conversion HDF5 considers for every string -> opaque pair: it takes only a variable-
// length string to an opaque type of our tag and of the descriptor's size. By the time HDF5 calls
// it with H5T_CONV_CONV, `buf` holds the descriptors read from the file: nothing to do.
herr_t keep_descriptor(hid_t src, hid_t dst, H5T_cdata_t* cdata, size_t, size_t, size_t, void*, void*, hid_t) {
    if (cdata->command != H5T_CONV_INIT) return 0;
    if (H5Tis_variable_str(src) <= 0 || H5Tget_class(dst) != H5T_OPAQUE || H5Tget_size(src) != H5Tget_size(dst))
        return -1;
    char* tag = H5Tget_tag(dst);
    const bool ours = tag && std::strcmp(tag, kDescriptorTag) == 0;
    H5free_memory(tag);
    return ours ? 0 : -1;
}

}  // namespace

void check_string_descriptor(const H5Id& attr, const FileContext& ctx, const std::string& where) {
    static std::once_flag registered;
    static herr_t registration = -1;
    std::call_once(registered, [] {
        const hid_t string = H5Tcopy(H5T_C_S1);
        const hid_t opaque = H5Tcreate(H5T_OPAQUE, 1);
        if (string >= 0 && opaque >= 0 && H5Tset_size(string, H5T_VARIABLE) >= 0)
            registration = H5Tregister(H5T_PERS_SOFT, "moe-conform string descriptor", string, opaque, keep_descriptor);
        if (string >= 0) H5Tclose(string);
        if (opaque >= 0) H5Tclose(opaque);
    });
    if (registration < 0) ctx.fail(Kind::unreadable, where, "cannot register the string descriptor check with HDF5");

    // The file's address and length sizes and its base address (the user block before the
    // superblock, which addresses in the file are relative to).
    H5Id file = own(H5Iget_file_id(attr.get()), H5Fclose, ctx, Kind::malformed, where, "cannot find its file");
    H5Id fcpl = own(H5Fget_create_plist(file.get()), H5Pclose, ctx, Kind::malformed, "file", "cannot read the superblock");
    std::size_t address_size = 0, length_size = 0;
    hsize_t base = 0;
    check(H5Pget_sizes(fcpl.get(), &address_size, &length_size), ctx, Kind::malformed, "file", "cannot read the superblock");
    check(H5Pget_userblock(fcpl.get(), &base), ctx, Kind::malformed, "file", "cannot read the superblock");

    // Stored as: sequence length (4 bytes), collection address (address_size), object index (4).
    const std::size_t size = 4 + address_size + 4;
    H5Id type = own(H5Tcreate(H5T_OPAQUE, size), H5Tclose, ctx, Kind::malformed, where, "cannot read its descriptor");
    check(H5Tset_tag(type.get(), kDescriptorTag), ctx, Kind::malformed, where, "cannot read its descriptor");
    std::vector<unsigned char> d(size);
    check(H5Aread(attr.get(), type.get(), d.data()), ctx, Kind::malformed, where, "cannot read its descriptor");
    const std::uint64_t address = little_endian(&d[4], static_cast<unsigned>(address_size));
    if (address == 0) return;  // a null string: HDF5 reads no heap
    HeapObjectRef ref;
    ref.bytes = little_endian(&d[0], 4);
    ref.index = static_cast<unsigned>(little_endian(&d[4 + address_size], 4));
    ref.collection = base + address;
    ref.length_size = static_cast<unsigned>(length_size);
    if (ref.collection < address) ctx.fail(Kind::corrupt, where, "its string descriptor points past any file");
    check_heap_object(ctx, ref, where);
}

}  // namespace moe::golden::h5
