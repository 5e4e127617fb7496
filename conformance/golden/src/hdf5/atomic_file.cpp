#include "hdf5/atomic_file.hpp"

#include <unistd.h>

#include <atomic>
#include <string>
#include <system_error>

namespace moe::golden {

namespace fs = std::filesystem;

namespace {

fs::path temp_path_for(const fs::path& target) {
    static std::atomic<unsigned long> counter{0};
    const std::string suffix = ".tmp." + std::to_string(static_cast<long>(::getpid())) + "." +
                               std::to_string(counter.fetch_add(1));
    return target.parent_path() / (target.filename().string() + suffix);
}

}  // namespace

AtomicFile::AtomicFile(fs::path target) : target_(std::move(target)), temp_(temp_path_for(target_)) {}

AtomicFile::~AtomicFile() {
    if (!committed_) {
        std::error_code ec;
        fs::remove(temp_, ec);
    }
}

void AtomicFile::commit(const h5::FileContext& ctx) {
    std::error_code ec;
    fs::rename(temp_, target_, ec);
    if (ec) ctx.fail(h5::Kind::unreadable, "file", "cannot rename '" + temp_.string() + "' over it: " + ec.message());
    committed_ = true;
}

}  // namespace moe::golden
