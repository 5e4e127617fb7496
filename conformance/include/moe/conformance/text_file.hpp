#pragma once
// Reports and tables are written whole or not at all: a CI that reads one never sees half of it.
#include <string>

namespace moe::conformance {

// Writes `content` to "<file>.tmp", then renames it over `file`. Throws std::runtime_error naming
// `file` on any failure (and removes the temporary file).
void write_file_atomically(const std::string& file, const std::string& content);

}  // namespace moe::conformance
