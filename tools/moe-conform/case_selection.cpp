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
// With `names` (for a shard) the child also returns each kept file's case name, "" if unread.
std::vector<std::string> select_in_child(const std::vector<std::string>& files, const std::vector<std::string>& filters,
                                         const std::string& tier, const std::string& expert_type,
                                         std::vector<std::string>* names) {
    // Reading two attributes takes milliseconds a file: the limit only ends a hang.
    const auto text = in_child_process(
        [&] {
            std::ostringstream out;  // the index of each kept file and its printable name, a line each
            std::vector<std::string> kept_names;
            const auto kept = golden::select_files(files, filters, tier, &kept_names, expert_type);
            std::size_t at = 0;
            for (std::size_t i = 0; i < files.size() && at < kept.size(); ++i)
                if (files[i] == kept[at]) {
                    out << i << ' ' << kept_names[at] << '\n';  // printable: no line break in a name
                    ++at;
                }
            return out.str();
        },
        10000 + 20 * static_cast<long>(files.size()));
    if (names) names->clear();
    if (!text) {
        if (names) names->assign(files.size(), "");
        return files;
    }
    std::vector<std::string> kept;
    std::istringstream in(*text);
    for (std::string line; std::getline(in, line);) {
        const auto space = line.find(' ');
        const std::size_t i = std::stoul(line.substr(0, space));
        if (i >= files.size()) continue;
        kept.push_back(files[i]);
        if (names) names->push_back(space == std::string::npos ? "" : line.substr(space + 1));
    }
    return kept;
}

}  // namespace

Selection selected_files(const std::vector<std::string>& files, const SuiteRunFlags& flags, const std::string& shard) {
    Selection s;
    // Tier "full" includes every tier: only filters, or a narrower tier, need the attributes; a
    // shard needs the names of the whole selection too.
    const std::string tier = flags.tier == "full" ? std::string() : flags.tier;
    std::vector<std::string> names;
    s.files = flags.filters.empty() && flags.expert_type.empty() && tier.empty() && shard.empty()
                  ? files
                  : select_in_child(files, flags.filters, tier, flags.expert_type, shard.empty() ? nullptr : &names);
    s.selected = s.files.size();
    if (shard.empty()) return s;
    if (const auto twice = golden::repeated_case_name(s.files, names)) throw InputError(*twice);
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
