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

// A row the backend declined (BenchRow::not_supported), in the table where its figures would be:
// the row's shape, T, types and routing, then "skipped: BACKEND: not supported: REASON", in
// moe-conform run's words for a SKIP. It has no JSON object: nothing was measured.
void print_skipped_row(std::FILE* out, const BenchRow& r);

// One row as a JSON object, on one line: what a plugin's child process sends back as it measures
// (the parent writes the rows measured when the plugin crashes or hangs later).
std::string row_json(const BenchRow& r);

// The rows (row_json's) as a JSON array, written atomically.
void write_rows_json(const std::string& file, const std::vector<std::string>& rows);

}  // namespace moe::bench
