#include "dataset_writing.hpp"

#include "golden_rules.hpp"
#include "hdf5/h5_attributes.hpp"
#include "hdf5/h5_datasets.hpp"

namespace moe::golden {

using h5::FileContext;
using h5::H5Id;

// This order (create, attribute, data) keeps files byte-identical across versions of this code.
void write_tensor(hid_t group, const std::string& group_path, const std::string& name, const Tensor& t,
                  const FileContext& ctx, std::optional<std::int64_t> group_size) {
    const std::string where = "dataset " + group_path + "/" + name;
    H5Id dset = h5::create_dataset(group, name, t, ctx, where);
    h5::write_string_attr(dset.get(), kElementTypeAttr, std::string(dtype_name(t.dtype())), ctx,
                          where_attr(kElementTypeAttr, group_path + "/" + name));
    if (group_size)
        h5::write_i64_attr(dset.get(), "group_size", *group_size, ctx, where_attr("group_size", group_path + "/" + name));
    h5::write_dataset_data(dset.get(), t, ctx, where);
}

void write_tensor_group(hid_t root, const std::string& group_name, const std::map<std::string, Tensor>& tensors,
                        const FileContext& ctx, const std::map<std::string, std::int64_t>& group_sizes) {
    H5Id group = h5::create_group(root, group_name, ctx, "group /" + group_name, tensors.size());
    for (const auto& [name, t] : tensors) {
        auto gs = group_sizes.find(name);
        write_tensor(group.get(), "/" + group_name, name, t, ctx,
                     gs == group_sizes.end() ? std::nullopt : std::optional<std::int64_t>(gs->second));
    }
}

}  // namespace moe::golden
