#pragma once
// Atomic replacement of a file: write a temporary file in the same folder, then rename it over
// the target. The temporary name is `<target>.tmp.<pid>.<counter>`, unique within this process
// and across processes, so that concurrent writers never share one. Interrupted (SIGINT, SIGTERM,
// SIGHUP, where the program does not handle them itself), the temporary file is removed first.
#include <filesystem>
#include <string>
#include <vector>

#include "hdf5/h5_error.hpp"
#include "moe/golden/golden_file.hpp"

namespace moe::golden {

class AtomicFile {
public:
    // Removes the stale temporary files of the target's folder first (once per folder and
    // process).
    explicit AtomicFile(std::filesystem::path target);
    // Removes the temporary file unless commit() went through.
    ~AtomicFile();
    AtomicFile(const AtomicFile&) = delete;
    AtomicFile& operator=(const AtomicFile&) = delete;

    const std::filesystem::path& temp_path() const { return temp_; }
    // Renames the (closed, complete) temporary file over the target; unreadable on failure.
    void commit(const h5::FileContext& ctx);

private:
    std::filesystem::path target_, temp_;
    bool committed_ = false;
    int slot_ = -1;  // where a signal handler finds temp_ (SIGINT, SIGTERM, SIGHUP remove it)
};

}  // namespace moe::golden
