#pragma once
// Parsing the tools' flags: exit codes, and number checks that say in words what they want.
// CLI11's own PositiveNumber and NonNegativeNumber refuse 0 with "Value 0 not in range 0.000000
// to " and DBL_MAX written out in 309 digits, which reads as if 0 were allowed.
#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdlib>
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

// Parses the command line with the tools' exit codes: -1 to go on, 0 after --help, 2 for a bad
// flag or value (CLI11's own codes are 100 and up, which a CI script would not read as bad input).
inline int parse_flags(CLI::App& app, int argc, char** argv) {
    try {
        app.parse(argc, argv);
        return -1;
    } catch (const CLI::ParseError& e) {
        return app.exit(e) == 0 ? 0 : 2;
    }
}

}  // namespace moe::cli
