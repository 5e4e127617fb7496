#include "kernel_override.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace moe::backends::ocl {

namespace {

const char* kernel_dir() {
    const char* v = std::getenv("MOE_OPENCL_KERNEL_DIR");
    return v && *v ? v : nullptr;
}

}  // namespace

std::vector<std::string> kernel_overrides(const std::vector<std::string>& files) {
    std::vector<std::string> text(files.size());
    const char* dir = kernel_dir();
    if (!dir) return text;
    for (std::size_t i = 0; i < files.size(); ++i) {
        const std::filesystem::path p = std::filesystem::path(dir) / files[i];
        std::error_code ec;
        if (!std::filesystem::is_regular_file(p, ec)) continue;
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

std::string kernel_dir_problem() {
    const char* dir = kernel_dir();
    std::error_code ec;
    if (dir && !std::filesystem::is_directory(dir, ec))
        return std::string("MOE_OPENCL_KERNEL_DIR: ") + dir + " is not a folder (it holds .cl files that replace the "
                                                              "embedded kernels of the same name)";
    return "";
}

}  // namespace moe::backends::ocl
