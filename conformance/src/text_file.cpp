#include "moe/conformance/text_file.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "moe/spec/error.hpp"

namespace moe::conformance {

void write_file_atomically(const std::string& file, const std::string& content) {
    namespace fs = std::filesystem;
    const std::string tmp = file + ".tmp";
    auto fail = [&](const std::string& what) {
        std::error_code ignored;
        fs::remove(tmp, ignored);
        throw OutputError("cannot write '" + file + "': " + what);
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

void create_output_folder(const std::string& dir) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) throw OutputError("cannot make folder '" + dir + "': " + ec.message());
    if (!std::filesystem::is_directory(dir, ec))
        throw OutputError("cannot make folder '" + dir + "': a file is in the way");
}

}  // namespace moe::conformance
