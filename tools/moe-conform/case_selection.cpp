// Which golden files a run or check compares: --case given once each, --filter and --tier from
// each file's root attributes, then --shard of what they select.
#include <filesystem>
#include <iostream>
#include <map>
#include <sstream>

#include "child_process.hpp"
#include "commands.hpp"
#include "moe/golden/suite.hpp"
#include "moe/spec/error.hpp"

namespace moe::conform_cli {

namespace {

// Reading a file's root attributes reads untrusted bytes, which have hung HDF5 (a corrupt global
// heap behind a string attribute: tests/golden/malformed_catalogue.py). The case reads run in
// worker processes under --case-timeout; the selection runs in a child under a time limit too.
// A child that fails or overruns selects every file: the workers' reads then report the bad one.
std::vector<std::string> select_in_child(const std::vector<std::string>& files, const std::vector<std::string>& filters,
                                         const std::string& tier) {
    // Reading two attributes takes milliseconds a file: the limit only ends a hang.
    const auto text = in_child_process(
        [&] {
            std::ostringstream out;  // the indices of the kept files, a line each
            const auto kept = golden::select_files(files, filters, tier);
            std::size_t at = 0;
            for (std::size_t i = 0; i < files.size() && at < kept.size(); ++i)
                if (files[i] == kept[at]) {
                    out << i << '\n';
                    ++at;
                }
            return out.str();
        },
        10000 + 20 * static_cast<long>(files.size()));
    if (!text) return files;
    std::vector<std::string> kept;
    std::istringstream in(*text);
    for (std::size_t i; in >> i;)
        if (i < files.size()) kept.push_back(files[i]);
    return kept;
}

}  // namespace

Selection selected_files(const std::vector<std::string>& files, const SuiteRunFlags& flags, const std::string& shard) {
    Selection s;
    // Tier "full" includes every tier: only filters, or a narrower tier, need the attributes.
    const std::string tier = flags.tier == "full" ? std::string() : flags.tier;
    s.files = flags.filters.empty() && tier.empty() ? files : select_in_child(files, flags.filters, tier);
    s.selected = s.files.size();
    if (shard.empty()) return s;
    const auto [index, count] = golden::parse_shard(shard);
    s.files = golden::shard_files(std::move(s.files), index, count);
    if (s.empty_shard())
        std::cerr << "moe-conform: shard " << shard << " holds none of the " << s.selected
                  << " selected case(s): nothing to compare here (exit 77)\n";
    return s;
}

void refuse_repeated_cases(const std::vector<std::string>& cases) {
    std::map<std::filesystem::path, std::string> seen;
    for (const auto& file : cases) {
        std::error_code ec;
        const auto key = std::filesystem::weakly_canonical(file, ec);
        const auto [it, fresh] = seen.emplace(ec ? std::filesystem::path(file) : key, file);
        if (!fresh)
            throw InputError("--case " + file + ": the same file as --case " + it->second + " (each case runs once)");
    }
}

}  // namespace moe::conform_cli
