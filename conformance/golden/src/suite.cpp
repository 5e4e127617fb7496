#include "moe/golden/suite.hpp"

#include <algorithm>
#include <filesystem>

#include "moe/spec/error.hpp"

namespace moe::golden {

namespace fs = std::filesystem;

bool tier_includes(const std::string& run_tier, const std::string& case_tier) {
    auto rank = [](const std::string& t) { return t == "quick" ? 0 : t == "ci" ? 1 : 2; };
    return rank(case_tier) <= rank(run_tier);
}

std::vector<std::string> suite_files(const std::string& dir) {
    if (!fs::is_directory(dir)) throw InputError("suite folder " + dir + " does not exist");
    std::vector<std::string> files;
    for (const auto& e : fs::directory_iterator(dir))
        if (e.is_regular_file() && e.path().extension() == ".h5") files.push_back(e.path().string());
    std::sort(files.begin(), files.end());
    if (files.empty()) throw InputError("suite folder " + dir + " holds no .h5 golden file");
    return files;
}

bool glob_match(const std::string& pattern, const std::string& name) {
    std::size_t p = 0, n = 0, star = std::string::npos, mark = 0;
    while (n < name.size()) {
        if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == name[n])) {
            ++p;
            ++n;
        } else if (p < pattern.size() && pattern[p] == '*') {
            star = p++;
            mark = n;
        } else if (star != std::string::npos) {
            p = star + 1;
            n = ++mark;
        } else {
            return false;
        }
    }
    while (p < pattern.size() && pattern[p] == '*') ++p;
    return p == pattern.size();
}

}  // namespace moe::golden
