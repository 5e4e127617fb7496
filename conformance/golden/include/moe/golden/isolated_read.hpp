#pragma once
// read_golden in a child process. HDF5 1.10 can still crash or hang on some damaged files (old
// format versions keep string descriptors in unchecksummed metadata); a tool that must survive any
// file reads it here: the child reads (with every check of read_golden) and sends the case back
// over a pipe; a child that dies or takes longer than `timeout_seconds` becomes a FileError
// (corrupt) naming the signal or the timeout. The parent never touches the file with HDF5.
#include <filesystem>

#include "moe/golden/golden_file.hpp"

namespace moe::golden {

GoldenCase read_golden_isolated(const std::filesystem::path& file, const ReadOptions& options,
                                double timeout_seconds = 600);

}  // namespace moe::golden
