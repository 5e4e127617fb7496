#pragma once
// Parsing the tools' flags: exit codes, and number checks that say in words what they want.
// CLI11's own PositiveNumber and NonNegativeNumber refuse 0 with "Value 0 not in range 0.000000
// to " and DBL_MAX written out in 309 digits, which reads as if 0 were allowed.
#include <CLI/CLI.hpp>
#include <iostream>

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "moe/spec/error.hpp"

namespace moe::cli {

// A finite number greater than 0 (zero_allowed: 0 or more). Applied to each value of a list flag.
inline CLI::Validator number_check(bool zero_allowed) {
    return CLI::Validator(
        [zero_allowed](std::string& text) -> std::string {
            char* end = nullptr;
            const double v = std::strtod(text.c_str(), &end);
            if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(v))
                return text + " is not a number";
            if (zero_allowed ? v < 0 : v <= 0)
                return text + (zero_allowed ? ": expected 0 or more" : ": expected more than 0");
            return {};
        },
        zero_allowed ? "NUMBER >= 0" : "NUMBER > 0");
}

inline const CLI::Validator kPositive = number_check(false);
inline const CLI::Validator kNonNegative = number_check(true);

// A value that is not empty: `--precision ''`, `--name ''` or `--device ''` was read as if the flag
// were absent (the files' own precision, the default device), and `--filter ''` matched nothing
// with a message that did not name it.
inline const CLI::Validator kNonEmpty(
    [](std::string& text) { return text.empty() ? std::string("an empty value: give one, or leave the flag out") : ""; },
    "");

// A whole number from 1 to `max` in decimal digits, rewritten without leading zeros (for
// ->transform, before CLI11 converts it). CLI11 alone read "010" as octal 8 and "0x10" as 16,
// saturated "99999999999999999999" to 2^64 - 1, and said only "Could not convert" for "1.5".
inline CLI::Validator count_check(std::uint64_t max) {
    return CLI::Validator(
        [max](std::string& text) -> std::string {
            // Not a number, 0 or less: in the words of the other number flags.
            if (std::string e = number_check(false)(text); !e.empty()) return e;
            if (text.find_first_not_of("0123456789") != std::string::npos)
                return text + ": expected a whole number in decimal digits";
            errno = 0;
            const unsigned long long v = std::strtoull(text.c_str(), nullptr, 10);
            if (errno == ERANGE || v > max) return text + ": out of range, at most " + std::to_string(max);
            text = std::to_string(v);  // "010": 10
            return {};
        },
        "NUMBER > 0");
}

// A size's number (a --max-memory value before CLI::AsSizeValue reads it: "512M", "8G") at most
// 2^64 - 1, for ->transform after AsSizeValue's (a transform runs before those added earlier).
// CLI11 read "99999999999999999999" as 2^64 - 1 and took it; it refuses a unit's overflow itself.
inline const CLI::Validator kSizeInRange(
    [](std::string& text) -> std::string {
        const std::size_t begin = text.find_first_not_of(" \t");
        if (begin == std::string::npos) return {};
        const std::string digits = text.substr(begin, text.find_first_not_of("0123456789", begin) - begin);
        errno = 0;
        if (!digits.empty() && (std::strtoull(digits.c_str(), nullptr, 10), errno == ERANGE))
            return text + ": out of range, at most 18446744073709551615 bytes";
        return {};
    },
    "");

// The most threads a --threads flag takes: the larger of 1024 and 4 per hardware thread. More only
// oversubscribes the machine, and far more ends the process: moe-bench's machine probes died of
// SIGSEGV at 100000 threads and in libgomp's "Out of memory" (exit 1) at 2^31 - 1.
inline std::uint64_t max_threads() {
    return std::max<std::uint64_t>(1024, 4 * static_cast<std::uint64_t>(std::thread::hardware_concurrency()));
}

// --threads: a count from 1 to max_threads() (for ->transform).
inline CLI::Validator threads_check() { return count_check(max_threads()); }

// `text` split at its commas, empty items kept ("1,,2": "1", "", "2").
inline std::vector<std::string> split_commas(const std::string& text) {
    std::vector<std::string> items;
    for (std::size_t begin = 0;;) {
        const std::size_t end = text.find(',', begin);
        items.push_back(text.substr(begin, end == std::string::npos ? std::string::npos : end - begin));
        if (end == std::string::npos) return items;
        begin = end + 1;
    }
}

// A comma-separated list, for a flag that takes each value whole: no ->delimiter(','), whose
// splitting drops empty items before any check sees them ("--backend cpu,,loop_f32", "loop_f32,"
// and ",loop_f32" ran as if the stray comma were not there). No item may be empty, and `item`
// must hold for each one (it may rewrite it: for ->transform). Split with list_items.
inline CLI::Validator list_check(const CLI::Validator& item) {
    return CLI::Validator(
        [item](std::string& text) -> std::string {
            if (text.empty()) return "an empty value: give one value, or several between commas";
            std::string out;
            for (std::string piece : split_commas(text)) {
                if (piece.empty()) return "'" + text + "' has an empty item: give one value between commas";
                if (std::string e = item(piece); !e.empty()) return e;
                out += (out.empty() ? "" : ",") + piece;
            }
            text = out;
            return {};
        },
        "");  // the flag's type name says it is a list
}

// The items of a list flag's values (checked by list_check), in order. InputError naming `flag`
// and the item when one is given twice, in one value or across repeats of the flag; `why` (say,
// "(it would repeat the same rows)") ends the message.
inline std::vector<std::string> list_items(const std::string& flag, const std::vector<std::string>& values,
                                           const std::string& why = "") {
    std::vector<std::string> items;
    std::set<std::string> seen;
    for (const auto& value : values)
        for (auto& item : split_commas(value)) {
            if (!seen.insert(item).second)
                throw InputError(flag + ": '" + item + "' is named twice" + (why.empty() ? "" : " " + why));
            items.push_back(std::move(item));
        }
    return items;
}

// list_items of a list of counts (list_check(count_check(...))), as numbers.
inline std::vector<std::size_t> list_counts(const std::string& flag, const std::vector<std::string>& values,
                                            const std::string& why = "") {
    std::vector<std::size_t> counts;
    for (const auto& item : list_items(flag, values, why)) counts.push_back(std::stoull(item));
    return counts;
}

// Output paths are checked when the flags are read, so that a typo in a report's folder is exit 2
// at once, not after the whole suite ran (the write itself can still fail: OutputError, exit 2).
namespace detail {
inline std::string writable_folder_problem(const std::filesystem::path& folder) {
    std::error_code ec;
    const std::filesystem::path f = folder.empty() ? "." : folder;
    if (!std::filesystem::exists(f, ec)) return "folder " + f.string() + " does not exist";
    if (!std::filesystem::is_directory(f, ec)) return f.string() + " is not a folder";
    if (::access(f.c_str(), W_OK | X_OK) != 0) return "folder " + f.string() + " is not writable";
    return {};
}
}  // namespace detail

// A file to write: not a folder, in a folder that exists and may be written.
inline const CLI::Validator kOutputFile(
    [](std::string& path) -> std::string {
        std::error_code ec;
        if (path.empty()) return "an empty file name";
        if (std::filesystem::is_directory(path, ec)) return path + " is a folder; give a file name";
        const std::string p = detail::writable_folder_problem(std::filesystem::path(path).parent_path());
        return p.empty() ? p : path + ": " + p;
    },
    "FILE");

// A folder to write into, made if missing: an existing writable folder, or a path whose deepest
// existing part is one.
inline const CLI::Validator kOutputFolder(
    [](std::string& path) -> std::string {
        std::error_code ec;
        if (path.empty()) return "an empty folder name";
        std::filesystem::path f = path;
        while (!f.empty() && !std::filesystem::exists(f, ec) && f.has_parent_path() && f.parent_path() != f)
            f = f.parent_path();
        if (!std::filesystem::exists(f, ec)) f = ".";
        const std::string p = detail::writable_folder_problem(f);
        return p.empty() ? p : path + ": " + p;
    },
    "DIR");

namespace detail {
// The switch (a flag that takes no value: ->disable_flag_override()) called `name`, in `app` or any
// of its subcommands; nullptr if none.
inline const CLI::Option* find_switch(const CLI::App& app, const std::string& name) {
    if (const CLI::Option* o = app.get_option_no_throw(name); o && o->get_disable_flag_override()) return o;
    for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
        if (const CLI::Option* o = find_switch(*sub, name)) return o;
    return nullptr;
}
}  // namespace detail

// Parses the command line with the tools' exit codes: -1 to go on, 0 after --help, 2 for a bad
// flag or value (CLI11's own codes are 100 and up, which a CI script would not read as bad input).
// A value of commas alone ("--backend ,") is refused first: CLI11 splits a comma-separated list
// and drops its empty items, which leaves the option without a value, so it took the next
// argument instead (`--backend , --suite DIR` ran a backend named "--suite").
// A switch marked ->disable_flag_override() given a value ("--strategy-stats=false") is refused
// in words: CLI11 counts such a flag as given whatever its value (`--strategy-stats=false` ran the
// mode, `--no-isolation=false` still excluded --case-timeout), and its own message for the
// override ("was given a disallowed flag override") does not say what to do.
inline int parse_flags(CLI::App& app, int argc, char** argv) {
    for (int i = 1; i < argc; ++i) {
        std::string option = i > 1 ? argv[i - 1] : "", value = argv[i];
        if (const auto eq = value.find('='); value.rfind("--", 0) == 0 && eq != std::string::npos) {
            option = value.substr(0, eq);
            value = value.substr(eq + 1);
            if (detail::find_switch(app, option)) {
                std::cerr << argv[i] << ": " << option
                          << " is a switch and takes no value: give it alone to turn it on, or leave it out\n"
                          << "Run with --help for more information.\n";
                return 2;
            }
        }
        if (value.find(',') != std::string::npos && value.find_first_not_of(", ") == std::string::npos) {
            std::cerr << option << ": '" << value << "' is only commas: give at least one value\n"
                      << "Run with --help for more information.\n";
            return 2;
        }
    }
    try {
        app.parse(argc, argv);
        return -1;
    } catch (const CLI::ParseError& e) {
        return app.exit(e) == 0 ? 0 : 2;
    }
}

}  // namespace moe::cli
