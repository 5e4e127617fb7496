#pragma once
// Reports and tables are written whole or not at all: a CI that reads one never sees half of it.
#include <string>

namespace moe::conformance {

// Writes `content` to "<file>.tmp", then renames it over `file`. Throws OutputError naming `file`
// on any failure (and removes the temporary file).
void write_file_atomically(const std::string& file, const std::string& content);

// Makes `dir` and the folders above it where missing. Throws OutputError naming `dir` where it
// cannot (a file in the way, no permission).
void create_output_folder(const std::string& dir);

}  // namespace moe::conformance
