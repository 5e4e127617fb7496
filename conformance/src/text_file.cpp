#include "moe/conformance/text_file.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <system_error>

namespace moe::conformance {

void write_file_atomically(const std::string& file, const std::string& content) {
    namespace fs = std::filesystem;
    const std::string tmp = file + ".tmp";
    auto fail = [&](const std::string& what) {
        std::error_code ignored;
        fs::remove(tmp, ignored);
        throw std::runtime_error("cannot write '" + file + "': " + what);
    };
    {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        if (!out) fail(std::string("cannot create '") + tmp + "': " + std::strerror(errno));
        out.write(content.data(), static_cast<std::streamsize>(content.size()));
        out.close();
        if (!out) fail(std::string("write to '") + tmp + "' failed: " + std::strerror(errno));
    }
    std::error_code ec;
    fs::rename(tmp, file, ec);
    if (ec) fail("rename from '" + tmp + "' failed: " + ec.message());
}


}  // namespace moe::conformance
