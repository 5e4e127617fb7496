#include "moe/golden/suite.hpp"

#include <algorithm>
#include <filesystem>
#include <stdexcept>

#include "moe/spec/error.hpp"
#include "moe/spec/printable.hpp"

namespace moe::golden {

namespace fs = std::filesystem;

bool tier_includes(const std::string& run_tier, const std::string& case_tier) {
    auto rank = [](const std::string& t) { return t == "quick" ? 0 : t == "ci" ? 1 : 2; };
    return rank(case_tier) <= rank(run_tier);
}

std::vector<std::string> suite_files(const std::string& dir) {
    if (!fs::is_directory(dir))
        throw InputError("suite folder " + dir + (fs::exists(dir) ? " is a file, not a folder (give it with --case)" : " does not exist"));
    std::vector<std::string> files;
    for (const auto& e : fs::directory_iterator(dir)) {
        if (e.path().extension() != ".h5") continue;
        std::error_code ec;
        // A .h5 entry that is no file (a dangling link, as an incomplete git-annex or LFS checkout
        // leaves, a FIFO, a folder) would otherwise be skipped and the suite run short, silently.
        if (!e.is_regular_file(ec))
            throw InputError("suite folder " + printable(dir) + ": " + printable(e.path().filename().string()) + " is " +
                             (e.is_symlink(ec) && !e.exists(ec) ? "a link to nothing (an incomplete checkout?)"
                                                                : "not a regular file") +
                             ", not a golden file");
        files.push_back(e.path().string());
    }
    std::sort(files.begin(), files.end());
    if (files.empty()) throw InputError("suite folder " + dir + " holds no .h5 golden file");
    return files;
}

namespace {

// `pattern` against `text`; with `text_is_glob`, a '?' in the pattern does not match a '*' of
// the text. A '*' in the pattern is always a wildcard, also over a '*' in the text (taken as a
// literal first, "*b" failed to match "*ab").
bool match_glob(const std::string& pattern, const std::string& text, bool text_is_glob) {
    std::size_t p = 0, n = 0, star = std::string::npos, mark = 0;
    while (n < text.size()) {
        if (p < pattern.size() && pattern[p] != '*' &&
            (pattern[p] == text[n] || (pattern[p] == '?' && !(text_is_glob && text[n] == '*')))) {
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

}  // namespace

bool glob_match(const std::string& pattern, const std::string& name) { return match_glob(pattern, name, false); }

bool case_glob_match(const std::string& pattern, const std::string& name) {
    return glob_match(pattern, name) || glob_match(pattern, printable(name));
}

bool glob_covers(const std::string& general, const std::string& specific) {
    return match_glob(general, specific, true);
}

std::vector<std::string> shard_files(std::vector<std::string> files, std::size_t index, std::size_t count) {
    if (count == 0 || index == 0 || index > count)
        throw InputError("shard " + std::to_string(index) + "/" + std::to_string(count) + ": expected 1 <= I <= N");
    std::sort(files.begin(), files.end(), [](const std::string& a, const std::string& b) {
        const auto fa = fs::path(a).filename().string(), fb = fs::path(b).filename().string();
        return fa != fb ? fa < fb : a < b;
    });
    std::vector<std::string> out;
    // Stepping stops before `i + count` could pass 2^64 - 1: it wrapped, so shard 5 of 2^64 - 1
    // held the first five files, overlapping shards 1 to 4.
    for (std::size_t i = index - 1; i < files.size(); i += count) {
        out.push_back(files[i]);
        if (count >= files.size() - i) break;
    }
    return out;
}

std::pair<std::size_t, std::size_t> parse_shard(const std::string& text) {
    // Decimal digits, one '/', decimal digits, and nothing else, checked before converting: stoul
    // alone read "1/-2" as 1 of 2^64 - 2 (negated modulo 2^64), so the run took every case as
    // "its share", and it skipped leading blanks (" 1/2" was taken, "1/2 " refused).
    const auto slash = text.find('/');
    const auto digits = [](const std::string& part) {
        return !part.empty() && part.find_first_not_of("0123456789") == std::string::npos;
    };
    if (slash == std::string::npos || !digits(text.substr(0, slash)) || !digits(text.substr(slash + 1)))
        throw InputError("--shard " + text + ": expected I/N in decimal digits, e.g. 2/4");
    std::size_t i = 0, n = 0;
    try {
        i = std::stoul(text.substr(0, slash));
        n = std::stoul(text.substr(slash + 1));
    } catch (const std::exception&) {  // out of range: past 2^64
        throw InputError("--shard " + text + ": out of range");
    }
    if (n == 0 || i == 0 || i > n) throw InputError("--shard " + text + ": expected 1 <= I <= N");
    return {i, n};
}

}  // namespace moe::golden
