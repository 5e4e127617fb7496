#include "dataset_writing.hpp"

#include "golden_rules.hpp"
#include "hdf5/h5_attributes.hpp"
#include "hdf5/h5_datasets.hpp"

namespace moe::golden {

using h5::FileContext;
using h5::H5Id;

// This order (create, attribute, data) keeps files byte-identical across versions of this code.
void write_tensor(hid_t group, const std::string& group_path, const std::string& name, const Tensor& t,
                  const FileContext& ctx) {
    const std::string where = "dataset " + group_path + "/" + name;
    H5Id dset = h5::create_dataset(group, name, t, ctx, where);
    h5::write_string_attr(dset.get(), kElementTypeAttr, std::string(dtype_name(t.dtype())), ctx,
                          where_attr(kElementTypeAttr, group_path + "/" + name));
    h5::write_dataset_data(dset.get(), t, ctx, where);
}

void write_tensor_group(hid_t root, const std::string& group_name, const std::map<std::string, Tensor>& tensors,
                        const FileContext& ctx) {
    H5Id group = h5::create_group(root, group_name, ctx, "group /" + group_name);
    for (const auto& [name, t] : tensors) write_tensor(group.get(), "/" + group_name, name, t, ctx);
}

}  // namespace moe::golden
