#include "moe/shrink/case_in_suite.hpp"

#include <algorithm>
#include <filesystem>

#include "moe/golden/manifest.hpp"
#include "moe/spec/error.hpp"
#include "moe/spec/printable.hpp"

namespace moe::shrink {

namespace {

std::size_t edit_distance(const std::string& a, const std::string& b) {
    std::vector<std::size_t> row(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        std::size_t diagonal = row[0];
        row[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            const std::size_t above = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
            diagonal = above;
        }
    }
    return row[b.size()];
}

}  // namespace

std::optional<std::string> closest_name(const std::string& wanted, const std::vector<std::string>& names) {
    const std::string w = std::filesystem::path(wanted).has_extension() ? wanted : wanted + ".h5";
    const std::size_t most = std::max<std::size_t>(2, w.size() / 4);
    std::optional<std::string> best;
    std::size_t best_distance = most + 1;
    for (const auto& name : names)  // the first of equally close ones: the manifest's order, sorted
        if (const std::size_t d = edit_distance(w, name); d < best_distance) {
            best = name;
            best_distance = d;
        }
    return best;
}

void check_case_exists(const std::string& file) {
    namespace fs = std::filesystem;
    std::error_code ec;
    const std::string given = "--case " + printable(file);
    // A folder got CLI11's "File is actually a directory" while run and check used its
    // ExistingFile; without it, run read the folder in a worker and printed a report first.
    if (fs::is_directory(file, ec)) throw InputError(given + ": a folder, not a golden file");
    if (fs::exists(file, ec)) return;
    const fs::path path(file);
    const fs::path dir = path.parent_path().empty() ? fs::path(".") : path.parent_path();
    if (!fs::exists(dir / golden::kManifestName, ec)) throw InputError(given + ": no such file");
    std::vector<std::string> cases;
    try {
        for (const auto& entry : golden::read_manifest(dir)) cases.push_back(entry.first);
    } catch (const InputError&) {
        throw InputError(given + ": no such file");  // a malformed manifest names no suite
    }
    const auto near = closest_name(path.filename().string(), cases);
    throw InputError(given + ": no case " + printable(path.filename().string()) + " in the suite " +
                     printable(dir.string()) + " (its " + golden::kManifestName + " lists " +
                     std::to_string(cases.size()) + " cases)" +
                     (near ? "; did you mean " + printable((dir / *near).string()) + "?" : ""));
}

}  // namespace moe::shrink
