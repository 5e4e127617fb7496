#pragma once
// moe-bench's whole-number and list flags, checked when the flags are read (exit 2, naming the
// flag and the value). CLI11 alone read "--tokens 99999999999999999999" as 2^64 - 1 and "010" as
// octal 8, and dropped the empty item of "--tokens 1,,2"; an item given twice timed one row twice.
#include <CLI/CLI.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace moe::bench_cli {

// A whole number from 1 to `max` in decimal digits, rewritten without leading zeros (for
// ->transform: CLI11 reads a leading 0 as octal).
CLI::Validator count_check(std::uint64_t max);

// A comma-separated list, for a flag that takes each value whole (no ->delimiter: CLI11's own
// splitting drops empty items before any check sees them): no empty item, and `item` holds for
// each one (which it may rewrite: for ->transform).
CLI::Validator list_check(const CLI::Validator& item);

// The items of a list flag's values (checked by list_check), in order. InputError naming `flag`
// and the item when one is given twice, in one value or across repeats of the flag.
std::vector<std::string> list_items(const std::string& flag, const std::vector<std::string>& values);

// list_items of a list of counts (list_check(count_check(...))), as numbers.
std::vector<std::size_t> list_counts(const std::string& flag, const std::vector<std::string>& values);

}  // namespace moe::bench_cli
