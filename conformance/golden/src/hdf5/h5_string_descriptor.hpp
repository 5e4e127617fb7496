#pragma once
// A variable-length string attribute stores a descriptor (length, global heap collection address,
// object index), and HDF5 1.10 follows it without a check when the string is read: in files whose
// object headers carry no checksum (format versions before 2), one damaged byte there makes the
// read crash the process. So the descriptor is read first, as stored, and the object it names is
// checked (h5_global_heap.hpp) before HDF5 is asked for the string.
#include <string>

#include "hdf5/h5_handles.hpp"

namespace moe::golden::h5 {

// `attr`: an open attribute of one variable-length string. Returns when HDF5 can read it safely
// (a null string, or a heap object that exists and has the descriptor's length); otherwise
// throws FileError (corrupt) naming `where`.
void check_string_descriptor(const H5Id& attr, const FileContext& ctx, const std::string& where);

}  // namespace moe::golden::h5
