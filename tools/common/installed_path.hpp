#pragma once
// What an installed tool finds beside itself: a path relative to its own binary (from
// /proc/self/exe, so that a moved or copied prefix still finds its own), else the source tree's
// (the build tree's binary). moe-conform's selftest looks up its suite so, moe-golden verify its
// catalogue; each only when the command needs it.
#include <filesystem>
#include <string>

namespace moe::cli {

enum class InstalledKind { file, folder };

inline std::string installed_or(const std::string& from_bin, InstalledKind kind, const std::string& source_tree) {
    std::error_code ec;
    const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (!ec) {
        const auto installed = (exe.parent_path() / from_bin).lexically_normal();
        if (kind == InstalledKind::folder ? std::filesystem::is_directory(installed, ec)
                                          : std::filesystem::is_regular_file(installed, ec))
            return installed.string();
    }
    return source_tree;
}

}  // namespace moe::cli
