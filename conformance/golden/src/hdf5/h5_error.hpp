#pragma once
// HDF5's error stack turned into messages, and the context every golden-file error carries (the
// file's path). Nothing here prints: HDF5's automatic printing is silenced while a public call
// runs (QuietHdf5), and its reason is appended to the FileError message instead.
#include <hdf5.h>

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "moe/golden/golden_file.hpp"

namespace moe::golden::h5 {

using Kind = FileError::Kind;

// The file being read or written: every error names it first.
struct FileContext {
    std::filesystem::path file;
    const char* role = "golden file";  // how messages name the file: "golden file", "result file"

    [[noreturn]] void fail(Kind kind, const std::string& where, const std::string& what) const;
    [[noreturn]] void malformed(const std::string& where, const std::string& what) const {
        fail(Kind::malformed, where, what);
    }
};

// The descriptions on HDF5's per-thread error stack, innermost first, and clears it. Must run
// right after the failing call, before any other API call clears the stack.
std::vector<std::string> hdf5_error_stack();

// " (HDF5: first; second; third)" from up to three descriptions; "" when there are none.
std::string join_details(const std::vector<std::string>& descs);

// join_details(hdf5_error_stack()): the reason of the call that just failed.
std::string hdf5_detail();

bool contains_nocase(std::string_view hay, std::string_view needle);

// Silences HDF5's automatic printing of its error stack for the duration of one public call
// (we report through FileError instead), restoring whatever the caller had configured.
class QuietHdf5 {
public:
    QuietHdf5();
    ~QuietHdf5();
    QuietHdf5(const QuietHdf5&) = delete;
    QuietHdf5& operator=(const QuietHdf5&) = delete;

private:
    H5E_auto2_t func_ = nullptr;
    void* data_ = nullptr;
};

}  // namespace moe::golden::h5
