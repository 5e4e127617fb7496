#pragma once
// Reading a group's datasets the way every file of the format is read (golden files, result
// files): each dataset checked (element type, shape, storage, links, filters, size against the
// file) and sized before any is read, the total checked against a memory budget, then read.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "hdf5/h5_handles.hpp"
#include "hdf5/h5_error.hpp"
#include "moe/golden/golden_file.hpp"

namespace moe::golden {

// One dataset, checked and sized but not read yet.
struct PlannedDataset {
    std::string path;  // "/inputs/weight_0"
    std::string name;  // "weight_0"
    h5::H5Id dset, type;
    DType dtype = DType::f64;
    Shape shape;
    DatasetStorage storage;
    std::uint64_t largest_chunk_bytes = 0;
};

// The element type of a dataset: its element_type attribute (authoritative), which must agree
// with how the data is stored; or, without the attribute, what the stored type says unambiguously.
DType dataset_element_type(hid_t dset, hid_t type, const std::string& path, const h5::FileContext& ctx);

// Every dataset of `group` (named /group_name), checked and sized; file_bytes is the file's size.
std::vector<PlannedDataset> plan_group(const h5::H5Id& group, const std::string& group_name, std::uint64_t file_bytes,
                                       const h5::FileContext& ctx);

// Refused when what the datasets need once read (plus HDF5's chunk buffers) exceeds `budget`.
void check_memory(const std::vector<const PlannedDataset*>& all, std::uint64_t budget, const h5::FileContext& ctx);

// Reads the planned datasets (each closed once read), by name.
std::map<std::string, Tensor> read_planned_group(std::vector<PlannedDataset>& planned, const h5::FileContext& ctx);

}  // namespace moe::golden
