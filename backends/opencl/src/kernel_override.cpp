#include "kernel_override.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "environment_setting.hpp"
#include "opencl_kernels.hpp"  // generated at configure time from kernels/*.cl

namespace moe::backends::ocl {

namespace fs = std::filesystem;

namespace {

std::optional<std::string> kernel_dir() { return environment_setting("MOE_OPENCL_KERNEL_DIR"); }

bool embedded(const std::string& file) {
    const auto& all = kernel_sources();
    return std::any_of(all.begin(), all.end(), [&](const KernelSource& s) { return file == s.file; });
}

std::string embedded_names() {
    std::string names;
    for (const auto& s : kernel_sources()) names += (names.empty() ? "" : ", ") + std::string(s.file);
    return names;
}

}  // namespace

std::vector<std::string> kernel_overrides(const std::vector<std::string>& files) {
    std::vector<std::string> text(files.size());
    const auto dir = kernel_dir();
    if (!dir) return text;
    for (std::size_t i = 0; i < files.size(); ++i) {
        const fs::path p = fs::path(*dir) / files[i];
        std::error_code ec;
        if (!fs::is_regular_file(p, ec)) continue;
        std::ifstream in(p, std::ios::binary);
        std::ostringstream all;
        all << in.rdbuf();
        if (!in && !in.eof()) throw std::runtime_error("MOE_OPENCL_KERNEL_DIR: cannot read " + p.string());
        text[i] = all.str();
        // An empty file would read as "no override"; a single newline builds as the empty program it is.
        if (text[i].empty()) text[i] = "\n";
    }
    return text;
}

std::vector<std::string> replaced_kernels() {
    std::vector<std::string> names;
    const auto dir = kernel_dir();
    if (!dir) return names;
    std::error_code ec;
    for (const auto& s : kernel_sources())
        if (fs::is_regular_file(fs::path(*dir) / s.file, ec)) names.push_back(s.file);
    std::sort(names.begin(), names.end());
    return names;
}

std::string kernel_dir_problem() {
    const auto dir = kernel_dir();
    if (!dir) return "";
    const std::string what = "MOE_OPENCL_KERNEL_DIR: " + *dir;
    std::error_code ec;
    if (!fs::is_directory(*dir, ec))
        return what + " is not a folder (it holds .cl files that replace the embedded kernels of the same name)";
    std::vector<std::string> unknown;
    for (fs::directory_iterator it(*dir, ec), end; !ec && it != end; it.increment(ec)) {
        const std::string name = it->path().filename().string();
        if (it->path().extension() == ".cl" && !embedded(name)) unknown.push_back(name);
    }
    if (ec) return what + ": cannot list it (" + ec.message() + ")";
    std::sort(unknown.begin(), unknown.end());
    if (!unknown.empty())
        return what + "/" + unknown.front() + " replaces no kernel (the kernel files: " + embedded_names() + ")";
    if (replaced_kernels().empty())
        return what + " holds none of the kernel files (" + embedded_names() + "): nothing would be replaced";
    return "";
}

}  // namespace moe::backends::ocl
