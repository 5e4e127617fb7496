#pragma once
// read_golden in a child process. read_golden refuses every damage known to crash or hang HDF5
// 1.10 (global heap and string descriptor checks), but old format versions keep much of their
// metadata without checksums, and a tool that must survive any file reads it here: the child
// reads (with every check of read_golden) and sends the case back over a pipe; a child that dies
// or takes longer than `timeout_seconds` becomes a FileError (corrupt) naming the signal or the
// timeout. The parent never touches the file with HDF5.
#include <filesystem>

#include "moe/golden/golden_file.hpp"

namespace moe::golden {

GoldenCase read_golden_isolated(const std::filesystem::path& file, const ReadOptions& options,
                                double timeout_seconds = 600);

}  // namespace moe::golden
