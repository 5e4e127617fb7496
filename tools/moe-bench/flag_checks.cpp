#include "flag_checks.hpp"

#include <cerrno>
#include <cstdlib>
#include <set>
#include <utility>

#include "cli_checks.hpp"
#include "moe/spec/error.hpp"

namespace moe::bench_cli {

namespace {

// `text` split at its commas, empty items kept ("1,,2": "1", "", "2").
std::vector<std::string> split_commas(const std::string& text) {
    std::vector<std::string> items;
    for (std::size_t begin = 0;;) {
        const std::size_t end = text.find(',', begin);
        items.push_back(text.substr(begin, end == std::string::npos ? std::string::npos : end - begin));
        if (end == std::string::npos) return items;
        begin = end + 1;
    }
}

}  // namespace

CLI::Validator count_check(std::uint64_t max) {
    return CLI::Validator(
        [max](std::string& text) -> std::string {
            // Not a number, 0 or less: in the words the other tools use.
            if (std::string e = moe::cli::kPositive(text); !e.empty()) return e;
            if (text.find_first_not_of("0123456789") != std::string::npos)
                return text + ": expected a whole number in decimal digits";
            errno = 0;
            const unsigned long long v = std::strtoull(text.c_str(), nullptr, 10);
            if (errno == ERANGE || v > max) return text + ": out of range, at most " + std::to_string(max);
            text = std::to_string(v);  // "010": 10, where CLI11 would read octal 8
            return {};
        },
        "NUMBER > 0");
}

CLI::Validator list_check(const CLI::Validator& item) {
    return CLI::Validator(
        [item](std::string& text) -> std::string {
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

std::vector<std::string> list_items(const std::string& flag, const std::vector<std::string>& values) {
    std::vector<std::string> items;
    std::set<std::string> seen;
    for (const auto& value : values)
        for (auto& item : split_commas(value)) {
            if (!seen.insert(item).second)
                throw InputError(flag + ": '" + item + "' is named twice (it would repeat the same rows)");
            items.push_back(std::move(item));
        }
    return items;
}

std::vector<std::size_t> list_counts(const std::string& flag, const std::vector<std::string>& values) {
    std::vector<std::size_t> counts;
    for (const auto& item : list_items(flag, values)) counts.push_back(std::stoull(item));
    return counts;
}

}  // namespace moe::bench_cli
