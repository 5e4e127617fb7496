#pragma once
// moe-bench's modes: timing a backend's rows (the default), or one table of its own
// (--worked-examples, --strategy-stats, --engine-study, --decode-study, --transfer-study). Each
// reads some of the flags. Two modes, or a flag the mode does not read, are refused before
// anything runs (exit 2, naming both): silently, `--engine-study --decode-study` ran one of them
// and `--worked-examples --json w.json` wrote no file, both with exit 0.
#include <CLI/CLI.hpp>

#include <string>

namespace moe::bench_cli {

// The mode flag given ("" for timing rows). Throws InputError for a second mode flag, or a flag
// given that the mode does not read.
std::string check_mode_flags(const CLI::App& app);

}  // namespace moe::bench_cli
