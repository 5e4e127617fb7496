#include "output_paths.hpp"

#include <filesystem>
#include <map>

#include "moe/spec/error.hpp"

namespace moe::conform_cli {

namespace {

namespace fs = std::filesystem;

// One spelling per place: links resolved, "." and ".." folded, for paths that do not exist yet too.
std::string place(const std::string& path) {
    std::error_code ec;
    const fs::path p = fs::weakly_canonical(fs::absolute(path, ec), ec);
    return ec ? fs::absolute(path).lexically_normal().string() : p.string();
}

}  // namespace

void check_outputs_spare_inputs(const RunPaths& paths) {
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

}  // namespace moe::conform_cli
