#include "hdf5/h5_error.hpp"

#include <algorithm>
#include <cctype>

#include "moe/spec/printable.hpp"

namespace moe::golden {

// The one escaping every tool applies (moe/spec/printable.hpp): besides C0 controls, the C1
// controls (U+009B is a CSI terminals act on), bidirectional and line-separator format characters
// (U+202E reorders what a name appears to say) and bytes of invalid UTF-8 become \xNN, and a
// backslash becomes \\, so that two different names never print the same: runs refuse duplicate
// printed names, expectations and check's repro lines match on them.
std::string printable(std::string_view text) { return moe::printable(text); }

}  // namespace moe::golden

namespace moe::golden::h5 {

namespace {

// HDF5 closes every object still open when the process exits (H5_term_library, an atexit
// handler). A file whose close failed (disk full, a file-size limit) stays half-closed in its
// table, and closing it again there crashes (SIGSEGV in H5F__close_cb, libhdf5 1.10): a tool
// that had reported the write error cleanly would then die of a signal. Every file the project
// opens is closed by its owner (H5Id), so the exit-time pass has nothing else to do. Called
// before any other HDF5 function, as the library requires: at static initialisation.
const bool kNoExitTimeClose = (H5dont_atexit(), true);

}  // namespace

void FileContext::fail(Kind kind, const std::string& where, const std::string& what) const {
    throw FileError(kind, printable(std::string(role) + " '" + file.string() + "': " + where + ": " + what));
}

namespace {

herr_t collect_error(unsigned, const H5E_error2_t* e, void* out) {
    auto* v = static_cast<std::vector<std::string>*>(out);
    if (e->desc && *e->desc) v->emplace_back(e->desc);
    return 0;
}

}  // namespace

std::vector<std::string> hdf5_error_stack() {
    std::vector<std::string> descs;
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, collect_error, &descs);
    H5Eclear2(H5E_DEFAULT);
    return descs;
}

std::string join_details(const std::vector<std::string>& descs) {
    if (descs.empty()) return "";
    std::string out = " (HDF5: " + descs.front();
    for (std::size_t i = 1; i < descs.size() && i < 3; ++i) out += "; " + descs[i];
    return out + ")";
}

std::string hdf5_detail() { return join_details(hdf5_error_stack()); }

bool contains_nocase(std::string_view hay, std::string_view needle) {
    auto it = std::search(hay.begin(), hay.end(), needle.begin(), needle.end(), [](char a, char b) {
        return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
    });
    return it != hay.end();
}

QuietHdf5::QuietHdf5() {
    H5Eget_auto2(H5E_DEFAULT, &func_, &data_);
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
}

QuietHdf5::~QuietHdf5() { H5Eset_auto2(H5E_DEFAULT, func_, data_); }

}  // namespace moe::golden::h5
