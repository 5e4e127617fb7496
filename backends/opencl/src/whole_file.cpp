#include "whole_file.hpp"

#include <fstream>
#include <system_error>
#include <unistd.h>

namespace moe::backends::ocl {

bool write_whole_file(const std::filesystem::path& path, const std::string& bytes) {
    // The process id in the temporary's name: two processes writing one file do not share it.
    const std::filesystem::path tmp = path.string() + ".tmp" + std::to_string(::getpid());
    std::error_code ec;
    {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
        out.close();
        if (!out) {
            std::filesystem::remove(tmp, ec);
            return false;
        }
    }
    std::filesystem::rename(tmp, path, ec);
    if (ec) std::filesystem::remove(tmp, ec);
    return !ec;
}

}  // namespace moe::backends::ocl
