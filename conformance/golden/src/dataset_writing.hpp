#pragma once
// Writing tensors the way every file of the format stores them (golden files, result files): a
// dataset per tensor with the format's chunking and filters and an element_type attribute.
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "hdf5/h5_error.hpp"
#include "moe/spec/tensor.hpp"

namespace moe::golden {

// The dataset group_path/name in `group`: created, its element_type attribute (and a compressed
// weight's group_size), then its data.
void write_tensor(hid_t group, const std::string& group_path, const std::string& name, const Tensor& t,
                  const h5::FileContext& ctx, std::optional<std::int64_t> group_size = std::nullopt);

// The group /group_name under `root` with one dataset per tensor; `group_sizes` by dataset name.
void write_tensor_group(hid_t root, const std::string& group_name, const std::map<std::string, Tensor>& tensors,
                        const h5::FileContext& ctx, const std::map<std::string, std::int64_t>& group_sizes = {});

}  // namespace moe::golden
