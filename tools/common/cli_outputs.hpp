#pragma once
// A command's outputs must not land on what it reads: a report written over a golden file, an
// expectation file or a --backend-lib plugin; result files written into the suite's folder (over
// its golden files, of the same names); a shrunk case over the case it came from; two outputs on
// one path. Every tool that writes a file checks its outputs here before anything runs:
// InputError (exit 2) naming the flag and both paths. (moe-conform's run and check once checked
// their reports alone; selftest --json, shrink -o and moe-bench --json replaced their inputs,
// a plugin's .so included, with exit 0.)
#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "moe/spec/error.hpp"

namespace moe::cli {

struct RunPaths {
    std::vector<std::string> inputs;                           // every file the command reads
    std::vector<std::pair<std::string, std::string>> reports;  // (flag, file) of each file it writes; "" = none
    std::vector<std::string> result_folders;                   // where --write-results writes
};

namespace detail {
// One spelling per place: links resolved, "." and ".." folded, for paths that do not exist yet too.
inline std::string place(const std::string& path) {
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::path p = fs::weakly_canonical(fs::absolute(path, ec), ec);
    return ec ? fs::absolute(path).lexically_normal().string() : p.string();
}
}  // namespace detail

inline void check_outputs_spare_inputs(const RunPaths& paths) {
    namespace fs = std::filesystem;
    using detail::place;
    std::map<std::string, std::string> inputs, folders;  // place -> as given
    for (const auto& f : paths.inputs) {
        inputs.emplace(place(f), f);
        folders.emplace(place(fs::path(f).parent_path().empty() ? "." : fs::path(f).parent_path().string()), f);
    }
    std::map<std::string, std::string> written;  // place -> flag
    for (const auto& [flag, file] : paths.reports) {
        if (file.empty()) continue;
        const std::string p = place(file);
        if (auto in = inputs.find(p); in != inputs.end())
            throw InputError(flag + " " + file + " is " + in->second + ", which this run reads: give another file");
        if (auto other = written.find(p); other != written.end())
            throw InputError(flag + " " + file + " is also the file of " + other->second + ": give each report its own");
        written.emplace(p, flag);
    }
    for (const auto& dir : paths.result_folders) {
        if (auto in = folders.find(place(dir)); in != folders.end())
            throw InputError("--write-results " + dir + " is the folder of " + in->second +
                             ": result files there would replace golden files of the same names; give another folder");
        for (const auto& [p, flag] : written)
            if (fs::path(p).parent_path() == fs::path(place(dir)) && fs::path(p).extension() == ".h5")
                throw InputError(flag + " writes into --write-results " + dir + " as a .h5 file: give it another name");
    }
}

}  // namespace moe::cli
