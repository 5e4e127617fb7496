#pragma once
// Parsing the tools' flags: exit codes, and number checks that say in words what they want.
// CLI11's own PositiveNumber and NonNegativeNumber refuse 0 with "Value 0 not in range 0.000000
// to " and DBL_MAX written out in 309 digits, which reads as if 0 were allowed.
#include <CLI/CLI.hpp>
#include <iostream>

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>

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

// Parses the command line with the tools' exit codes: -1 to go on, 0 after --help, 2 for a bad
// flag or value (CLI11's own codes are 100 and up, which a CI script would not read as bad input).
// A value of commas alone ("--backend ,") is refused first: CLI11 splits a comma-separated list
// and drops its empty items, which leaves the option without a value, so it took the next
// argument instead (`--backend , --suite DIR` ran a backend named "--suite").
inline int parse_flags(CLI::App& app, int argc, char** argv) {
    for (int i = 1; i < argc; ++i) {
        std::string option = i > 1 ? argv[i - 1] : "", value = argv[i];
        if (const auto eq = value.find('='); value.rfind("--", 0) == 0 && eq != std::string::npos) {
            option = value.substr(0, eq);
            value = value.substr(eq + 1);
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
