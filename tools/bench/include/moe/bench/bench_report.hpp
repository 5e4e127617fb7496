#pragma once
// moe-bench's table (one line per row, as it is measured) and its JSON file.
#include <cstdio>
#include <string>
#include <vector>

#include "moe/bench/backend_timing.hpp"

namespace moe::bench {

void print_table_header(std::FILE* out, const std::string& backend, const std::string& description, int threads);
// The header of a backend timed against baselines on its own device (opencl: a CLBlast GEMM and
// a copy kernel of `copy_bytes` read plus written).
void print_device_table_header(std::FILE* out, const std::string& backend, const std::string& description,
                               double copy_bytes);

// One row; with kernel times, a second line with the device time split per kernel.
void print_table_row(std::FILE* out, const BenchRow& r, bool vs_reference);

// The rows as a JSON array, written atomically.
void write_rows_json(const std::string& file, const std::vector<BenchRow>& rows);

}  // namespace moe::bench
