#pragma once
// Opening a golden file for reading, creating one for writing, and its root group.
#include <filesystem>

#include "hdf5/h5_handles.hpp"

namespace moe::golden::h5 {

// Opens ctx.file read-only: unreadable when it does not exist, is a directory, is not HDF5 or
// cannot be opened.
H5Id open_file_for_reading(const FileContext& ctx);

// Creates `path` (which must not exist) for writing: no timestamps on the root group.
H5Id create_file(const std::filesystem::path& path, const FileContext& ctx);

H5Id open_root(const H5Id& file, const FileContext& ctx);

}  // namespace moe::golden::h5
