#include "hdf5/h5_storage.hpp"

#include <vector>

namespace moe::golden::h5 {

namespace {

std::string filter_name(H5Z_filter_t id, const char* name) {
    switch (id) {
        case H5Z_FILTER_DEFLATE: return "deflate";
        case H5Z_FILTER_SHUFFLE: return "shuffle";
        case H5Z_FILTER_FLETCHER32: return "fletcher32";
        case H5Z_FILTER_SZIP: return "szip";
        case H5Z_FILTER_NBIT: return "nbit";
        case H5Z_FILTER_SCALEOFFSET: return "scaleoffset";
        default: return *name ? "'" + std::string(name) + "'" : "unregistered";
    }
}

// Reads the filter pipeline; refuses any filter but deflate, shuffle and fletcher32.
void check_filters(hid_t dcpl, DatasetStorage& s, const FileContext& ctx, const std::string& where) {
    const int n = H5Pget_nfilters(dcpl);
    if (n < 0) ctx.malformed(where, "cannot read the filter pipeline" + hdf5_detail());
    for (int i = 0; i < n; ++i) {
        unsigned flags = 0, config = 0;
        std::size_t nvalues = 8;
        unsigned values[8] = {};
        char name[64] = {};
        const H5Z_filter_t id = H5Pget_filter2(dcpl, static_cast<unsigned>(i), &flags, &nvalues, values, sizeof name,
                                               name, &config);
        if (id < 0) ctx.malformed(where, "cannot read the filter pipeline" + hdf5_detail());
        if (id == H5Z_FILTER_DEFLATE) s.deflate = true;
        else if (id == H5Z_FILTER_SHUFFLE) s.shuffle = true;
        else if (id == H5Z_FILTER_FLETCHER32) s.fletcher32 = true;
        else
            ctx.fail(Kind::refused, where, "uses the " + filter_name(id, name) + " filter (id " + std::to_string(id) +
                                               "); " + std::string(ctx.role) + "s may use deflate, shuffle and fletcher32 only");
    }
}

std::uint64_t checked_product(const std::vector<hsize_t>& v, const FileContext& ctx, const std::string& where) {
    std::uint64_t p = 1;
    for (hsize_t x : v) {
        if (x != 0 && p > UINT64_MAX / x) ctx.malformed(where, "chunk count overflows");
        p *= x;
    }
    return p;
}

void check_chunks(hid_t dset, hid_t dcpl, const Shape& shape, std::size_t elem,
                  std::uint64_t& largest_chunk_bytes, const FileContext& ctx, const std::string& where) {
    const int rank = static_cast<int>(shape.size());
    std::vector<hsize_t> chunk(shape.size(), 0);
    if (H5Pget_chunk(dcpl, rank, chunk.data()) != rank) ctx.malformed(where, "cannot read the chunk shape" + hdf5_detail());
    std::vector<hsize_t> per_dim(shape.size());
    std::uint64_t chunk_elems = 1;
    for (std::size_t d = 0; d < shape.size(); ++d) {
        if (chunk[d] == 0) ctx.malformed(where, "has a zero chunk extent");
        per_dim[d] = (shape[d] + chunk[d] - 1) / chunk[d];
        if (chunk_elems > (std::uint64_t{1} << 40) / chunk[d]) ctx.malformed(where, "chunk shape is too large");
        chunk_elems *= chunk[d];
    }
    largest_chunk_bytes = chunk_elems * elem;
    const std::uint64_t expected = checked_product(per_dim, ctx, where);
    hsize_t stored = 0;
    H5Id space = own(H5Dget_space(dset), H5Sclose, ctx, Kind::malformed, where, "cannot read dataspace");
    if (H5Dget_num_chunks(dset, space.get(), &stored) < 0) ctx.malformed(where, "cannot read the chunk index" + hdf5_detail());
    if (stored != expected)
        ctx.malformed(where, std::to_string(stored) + " of its " + std::to_string(expected) +
                                 " chunks are stored; the others would read as fill values (the data was never "
                                 "written completely, or the chunk index is damaged)");
}

}  // namespace

DatasetStorage check_dataset_storage(hid_t dset, const Shape& shape, std::size_t stored_elem_size,
                                     std::uint64_t memory_bytes, std::uint64_t file_bytes,
                                     std::uint64_t& largest_chunk_bytes, const FileContext& ctx,
                                     const std::string& where) {
    DatasetStorage s;
    s.memory_bytes = memory_bytes;
    largest_chunk_bytes = 0;
    H5Id dcpl = own(H5Dget_create_plist(dset), H5Pclose, ctx, Kind::malformed, where, "cannot read its properties");
    const H5D_layout_t layout = H5Pget_layout(dcpl.get());
    if (layout == H5D_VIRTUAL)
        ctx.fail(Kind::refused, where, "is a virtual dataset (its data maps to other datasets or files); " +
                                           std::string(ctx.role) + "s must hold their data themselves");
    const int external = H5Pget_external_count(dcpl.get());
    if (external < 0) ctx.malformed(where, "cannot read its properties" + hdf5_detail());
    if (external > 0) {
        char name[512] = {};
        off_t offset = 0;
        hsize_t size = 0;
        H5Pget_external(dcpl.get(), 0, sizeof name, name, &offset, &size);
        ctx.fail(Kind::refused, where, "uses external raw storage (data in file '" + std::string(name) +
                                           "'); " + std::string(ctx.role) + "s must hold their data themselves");
    }
    check_filters(dcpl.get(), s, ctx, where);

    std::uint64_t elements = 1;
    for (std::size_t d : shape) elements *= d;  // memory_bytes was computed without overflow
    const std::uint64_t stored_nbytes = elements * stored_elem_size;
    s.stored_bytes = H5Dget_storage_size(dset);
    if (s.stored_bytes > file_bytes)
        ctx.malformed(where, "claims " + std::to_string(s.stored_bytes) + " stored bytes in a file of " +
                                 std::to_string(file_bytes));
    switch (layout) {
        case H5D_COMPACT:
            s.layout = "compact";
            if (elements > 0 && s.stored_bytes != stored_nbytes)
                ctx.malformed(where, "compact storage holds " + std::to_string(s.stored_bytes) + " bytes, the shape needs " +
                                         std::to_string(stored_nbytes));
            break;
        case H5D_CONTIGUOUS: {
            s.layout = "contiguous";
            if (elements == 0) break;
            const haddr_t offset = H5Dget_offset(dset);
            H5Eclear2(H5E_DEFAULT);
            if (offset == HADDR_UNDEF || s.stored_bytes != stored_nbytes)
                ctx.malformed(where, offset == HADDR_UNDEF ? "its data was never written (it would read as fill values)"
                                                           : "stores " + std::to_string(s.stored_bytes) +
                                                                 " bytes where its type and shape need " +
                                                                 std::to_string(stored_nbytes));
            if (offset > file_bytes || stored_nbytes > file_bytes - offset)
                ctx.malformed(where, "its data would lie beyond the end of the file (" + std::to_string(file_bytes) +
                                         " bytes)");
            break;
        }
        case H5D_CHUNKED:
            s.layout = "chunked";
            if (elements == 0) break;
            check_chunks(dset, dcpl.get(), shape, stored_elem_size, largest_chunk_bytes, ctx, where);
            break;
        default: ctx.malformed(where, "has an unknown storage layout");
    }
    // Only deflate shrinks data; without it the stored bytes hold at least the data itself.
    const std::uint64_t ratio = s.deflate ? kMaxDeflateRatio : 1;
    if (layout == H5D_CHUNKED && elements > 0 && stored_nbytes / ratio > s.stored_bytes)
        ctx.malformed(where, "shape " + shape_to_string(shape) + " needs " + std::to_string(stored_nbytes) +
                                 " bytes, more than its " + std::to_string(s.stored_bytes) +
                                 " stored bytes can hold (the shape or the chunk index is damaged)");
    return s;
}

}  // namespace moe::golden::h5
