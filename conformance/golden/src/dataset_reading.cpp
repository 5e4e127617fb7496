#include "dataset_reading.hpp"

#include <algorithm>

#include "golden_rules.hpp"
#include "hdf5/h5_attributes.hpp"
#include "hdf5/h5_datasets.hpp"
#include "hdf5/h5_storage.hpp"
#include "hdf5/h5_types.hpp"
#include "moe/spec/error.hpp"

namespace moe::golden {

using h5::FileContext;
using h5::H5Id;
using h5::Kind;

DType dataset_element_type(hid_t dset, hid_t type, const std::string& path, const FileContext& ctx) {
    const std::string attr_where = where_attr(kElementTypeAttr, path);
    const std::optional<std::string> declared = h5::read_string_attr(dset, kElementTypeAttr, ctx, attr_where);
    if (!declared) {
        std::optional<DType> inferred = h5::infer_element_type(type);
        if (!inferred)
            ctx.malformed("dataset " + path, "no element_type attribute, and the stored type (" +
                                                 h5::describe_h5_type(type) +
                                                 ") does not determine one (bf16 bit patterns stored as "
                                                 "16-bit integers, and every 8-bit integer, need an element_type)");
        return *inferred;
    }
    const std::optional<DType> dt = parse_dtype(*declared);
    if (!dt) ctx.malformed(attr_where, "unknown element type '" + *declared +
                                              "' (expected f64, f32, f16, bf16, i32, i64; for compressed weights "
                                              "u8, i8, u4, i4, f4e2m1, f8e4m3, f8e5m2, f8e8m0)");
    if (!h5::stored_type_matches(*dt, type))
        ctx.malformed("dataset " + path, "element_type is '" + *declared + "' but the data is stored as " +
                                             h5::describe_h5_type(type));
    return *dt;
}

namespace {

std::uint64_t memory_bytes(const Shape& shape, std::size_t elem_size, const FileContext& ctx, const std::string& where) {
    std::uint64_t n = elem_size;
    for (std::size_t d : shape) {
        if (d != 0 && n > UINT64_MAX / d) ctx.malformed(where, "shape " + shape_to_string(shape) + " overflows");
        n *= d;
    }
    return n;
}

PlannedDataset plan_dataset(hid_t group, const std::string& group_path, const std::string& name,
                            std::uint64_t file_bytes, const FileContext& ctx) {
    PlannedDataset p;
    p.path = group_path + "/" + name;
    p.name = name;
    const std::string where = "dataset " + p.path;
    p.dset = h5::open_dataset(group, name, ctx, where);
    p.type = h5::own(H5Dget_type(p.dset.get()), H5Tclose, ctx, Kind::malformed, where, "cannot read type");
    p.shape = h5::dataset_shape(p.dset.get(), ctx, where);
    // Where the data lives is checked first: a refused feature is named as such, whatever else
    // is wrong with the dataset. The memory it needs is sized from the stored element size.
    const std::size_t stored_elem = H5Tget_size(p.type.get());
    if (stored_elem == 0 || stored_elem > 16) ctx.malformed(where, "has " + std::to_string(stored_elem) + "-byte elements");
    const std::uint64_t stored_bytes = memory_bytes(p.shape, stored_elem, ctx, where);
    p.storage = h5::check_dataset_storage(p.dset.get(), p.shape, stored_elem, stored_bytes, file_bytes,
                                          p.largest_chunk_bytes, ctx, where);
    p.dtype = dataset_element_type(p.dset.get(), p.type.get(), p.path, ctx);
    p.storage.memory_bytes = memory_bytes(p.shape, dtype_size(p.dtype), ctx, where);
    p.storage.path = p.path;
    return p;
}

}  // namespace

std::vector<PlannedDataset> plan_group(const H5Id& group, const std::string& group_name, std::uint64_t file_bytes,
                                       const FileContext& ctx) {
    const std::string group_path = "/" + group_name;
    std::vector<PlannedDataset> out;
    for (const std::string& name : h5::member_names(group.get(), ctx, "group " + group_path))
        out.push_back(plan_dataset(group.get(), group_path, name, file_bytes, ctx));
    return out;
}

// Everything the datasets need once read, plus two chunks HDF5 holds while it decompresses,
// must fit the budget: checked before anything is allocated.
void check_memory(const std::vector<const PlannedDataset*>& all, std::uint64_t budget, const FileContext& ctx) {
    std::uint64_t total = 0, chunk = 0;
    const PlannedDataset* largest = nullptr;
    for (const PlannedDataset* p : all) {
        total += p->storage.memory_bytes;  // each is at most 1040 x the file's size: no overflow
        chunk = std::max(chunk, p->largest_chunk_bytes);
        if (!largest || p->storage.memory_bytes > largest->storage.memory_bytes) largest = p;
    }
    total += 2 * chunk;
    if (total > budget)
        ctx.fail(Kind::refused, "file",
                 "its datasets need " + readable_bytes(static_cast<double>(total)) + " once read (the largest, " +
                     largest->path + " " + shape_to_string(largest->shape) + ", " +
                     readable_bytes(static_cast<double>(largest->storage.memory_bytes)) +
                     "), more than the memory budget of " + readable_bytes(static_cast<double>(budget)) +
                     " (--max-memory)");
}

namespace {

Tensor read_planned(PlannedDataset& p, const FileContext& ctx) {
    const std::string where = "dataset " + p.path;
    Tensor t;
    try {
        // Not zero-filled: zeroing GBs of model-sized weights cost a pass over memory per read,
        // and read_dataset_data writes every byte (zeroing first where HDF5 might not) or throws,
        // taking `t` with it.
        t = Tensor::uninitialised(p.dtype, p.shape);
    } catch (const InputError& e) {
        ctx.malformed(where, e.what());
    } catch (const std::bad_alloc&) {
        ctx.fail(Kind::refused, where, "shape " + shape_to_string(p.shape) + " is too large to load");
    }
    h5::read_dataset_data(p.dset.get(), p.type.get(), t, ctx, where);
    p.dset.close();
    p.type.close();
    return t;
}

}  // namespace

std::map<std::string, Tensor> read_planned_group(std::vector<PlannedDataset>& planned, const FileContext& ctx) {
    std::map<std::string, Tensor> out;
    for (PlannedDataset& p : planned) out.emplace(p.name, read_planned(p, ctx));
    return out;
}

}  // namespace moe::golden
