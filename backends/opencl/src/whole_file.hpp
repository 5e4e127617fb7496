#pragma once
// A file written whole or not at all: the bytes go to a temporary beside it, which is renamed
// over it only once written (a reader, or a process that stops half-way, never sees part of it).
#include <filesystem>
#include <string>

namespace moe::backends::ocl {

// False (and no temporary left) when it cannot be written.
bool write_whole_file(const std::filesystem::path& path, const std::string& bytes);

}  // namespace moe::backends::ocl
