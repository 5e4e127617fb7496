// A .npy output as a result (numpy's format, version 1-3: magic, header dict, raw data in C or
// Fortran order).
// Parsed here rather than by a library: the file is untrusted input, every size is checked
// against the file's real size and the memory budget before anything is allocated, and f16 (which
// xtensor's npy loader cannot hold) must keep its bits.
#include <cstring>
#include <fstream>
#include <vector>

#include "moe/golden/golden_file.hpp"
#include "moe/golden/result_file.hpp"

namespace moe::golden {

namespace {

[[noreturn]] void fail(FileError::Kind kind, const std::filesystem::path& file, const std::string& what) {
    throw FileError(kind, file.string() + ": " + what);
}

// The value of `key` in the header's Python dict literal, without the spaces around it: numpy
// writes "'descr': '<f4', ", other writers put spaces elsewhere ("'descr' : '<f4' ,").
std::string field(const std::string& header, const std::string& key, const std::filesystem::path& file) {
    const std::string quoted = "'" + key + "'";
    const auto at = header.find(quoted);
    if (at == std::string::npos) fail(FileError::Kind::malformed, file, "npy header has no '" + key + "'");
    const auto blank = [&](std::size_t i) { return i < header.size() && (header[i] == ' ' || header[i] == '\t'); };
    std::size_t i = at + quoted.size();
    while (blank(i)) ++i;
    if (i >= header.size() || header[i] != ':') fail(FileError::Kind::malformed, file, "npy header: bad '" + key + "'");
    ++i;
    while (blank(i)) ++i;
    const std::size_t end = i < header.size() && header[i] == '(' ? header.find(')', i) + 1 : header.find_first_of(",}", i);
    if (end == std::string::npos || end == 0) fail(FileError::Kind::malformed, file, "npy header: bad '" + key + "'");
    std::size_t last = end;
    while (last > i && blank(last - 1)) --last;
    return header.substr(i, last - i);
}

Shape parse_shape(const std::string& text, const std::filesystem::path& file) {
    Shape s;
    std::size_t i = 1;  // after '('
    while (i < text.size() && text[i] != ')') {
        while (text[i] == ' ' || text[i] == ',') ++i;
        if (text[i] == ')') break;
        std::size_t used = 0;
        unsigned long long v = 0;
        try {
            v = std::stoull(text.substr(i), &used);
        } catch (const std::exception&) {
            fail(FileError::Kind::malformed, file, "npy header: shape " + text + " is not a tuple of integers");
        }
        s.push_back(static_cast<std::size_t>(v));
        i += used;
    }
    if (s.empty()) fail(FileError::Kind::malformed, file, "npy header: a scalar, not an output array");
    return s;
}

// `from` in Fortran order (the first index fastest) into `to` in C order (the last fastest):
// element (i0, ..., in-1) is at sum(ik * prod(d0..dk-1)) in `from`. Walks `to` in order, the
// multi-index counted like an odometer (no division per element).
void to_c_order(const char* from, char* to, const Shape& shape, std::size_t element) {
    const std::size_t n = shape.size();
    std::vector<std::size_t> stride(n), index(n, 0);  // Fortran strides, in elements
    std::size_t total = 1;
    for (std::size_t k = 0; k < n; ++k) {
        stride[k] = total;
        total *= shape[k];
    }
    std::size_t at = 0;  // the Fortran offset of `index`
    for (std::size_t i = 0; i < total; ++i) {
        std::memcpy(to + i * element, from + at * element, element);
        for (std::size_t k = n; k-- > 0;) {  // next C-order index: the last axis first
            if (++index[k] < shape[k]) {
                at += stride[k];
                break;
            }
            at -= (shape[k] - 1) * stride[k];
            index[k] = 0;
        }
    }
}

}  // namespace

ResultFile read_npy_result(const std::filesystem::path& file, std::uint64_t max_memory) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(file, ec)) fail(FileError::Kind::refused, file, "not a regular file");
    const std::uint64_t file_bytes = std::filesystem::file_size(file, ec);
    std::ifstream in(file, std::ios::binary);
    if (!in) fail(FileError::Kind::unreadable, file, "cannot open it");
    char magic[8] = {};
    in.read(magic, 8);
    if (!in || std::memcmp(magic, "\x93NUMPY", 6) != 0) fail(FileError::Kind::unreadable, file, "not a .npy file");
    const int major = static_cast<unsigned char>(magic[6]);
    if (major < 1 || major > 3) fail(FileError::Kind::malformed, file, "npy version " + std::to_string(major) + " unknown");
    unsigned char len_bytes[4] = {};
    in.read(reinterpret_cast<char*>(len_bytes), major == 1 ? 2 : 4);
    const std::uint64_t header_len = major == 1 ? len_bytes[0] | (len_bytes[1] << 8)
                                                : len_bytes[0] | (len_bytes[1] << 8) | (len_bytes[2] << 16) |
                                                      (std::uint64_t(len_bytes[3]) << 24);
    const std::uint64_t data_at = 8 + (major == 1 ? 2 : 4) + header_len;
    if (!in || header_len > 65536 || data_at > file_bytes)
        fail(FileError::Kind::malformed, file, "npy header length " + std::to_string(header_len) + " does not fit the file");
    std::string header(header_len, '\0');
    in.read(header.data(), static_cast<std::streamsize>(header_len));

    const std::string descr = field(header, "descr", file);
    DType dt;
    if (descr == "'<f8'") dt = DType::f64;
    else if (descr == "'<f4'") dt = DType::f32;
    else if (descr == "'<f2'") dt = DType::f16;
    else if (descr == "'<i2'" || descr == "'<u2'")
        // numpy has no bf16: a framework's bf16 output saved as its bits arrives as 16-bit integers.
        fail(FileError::Kind::malformed, file,
             "npy dtype " + descr + ": expected little-endian float64, float32 or float16; bf16 saved as its bits? "
             "widen bf16 to float32 (exact) before saving: y.float() in torch, or "
             "(bits.astype(np.uint32) << 16).view(np.float32) in numpy");
    else
        fail(FileError::Kind::malformed, file, "npy dtype " + descr + ": expected little-endian float64, float32 or float16");
    // Fortran order is what np.save writes for a transposed view or np.asfortranarray; numpy
    // reads it back as the same array, so it is accepted, and put in C order below.
    const std::string order = field(header, "fortran_order", file);
    if (order != "False" && order != "True")
        fail(FileError::Kind::malformed, file, "npy header: fortran_order is " + order + ", not True or False");
    const bool fortran = order == "True";
    const Shape shape = parse_shape(field(header, "shape", file), file);

    std::uint64_t bytes = dtype_size(dt);
    for (std::size_t d : shape) {
        if (d != 0 && bytes > UINT64_MAX / d) fail(FileError::Kind::malformed, file, "npy shape overflows");
        bytes *= d;
    }
    if (data_at + bytes != file_bytes)
        fail(FileError::Kind::malformed, file, "npy data is " + std::to_string(file_bytes - data_at) + " bytes, shape " +
                                                   shape_to_string(shape) + " needs " + std::to_string(bytes));
    // Fortran order is read whole, then reordered into the output: two copies at once.
    const bool reorder = fortran && shape.size() >= 2;  // one axis: both orders are the same bytes
    const std::uint64_t needed = reorder ? (bytes > UINT64_MAX / 2 ? UINT64_MAX : 2 * bytes) : bytes;
    if (needed > (max_memory ? max_memory : default_max_memory()))
        fail(FileError::Kind::refused, file,
             "its data needs " + readable_bytes(static_cast<double>(needed)) + " once read" +
                 (reorder ? " (twice its size: Fortran order is reordered)" : "") + ", more than the memory budget of " +
                 readable_bytes(static_cast<double>(max_memory ? max_memory : default_max_memory())) + " (--max-memory)");
    ResultFile r;
    r.output = Tensor::uninitialised(dt, shape);  // every byte read below, or refused
    if (!reorder) {
        in.read(reinterpret_cast<char*>(r.output.data()), static_cast<std::streamsize>(bytes));
        if (!in) fail(FileError::Kind::unreadable, file, "cannot read its data");
        return r;
    }
    std::vector<char> stored(bytes);  // column-major: the first index varies fastest
    in.read(stored.data(), static_cast<std::streamsize>(bytes));
    if (!in) fail(FileError::Kind::unreadable, file, "cannot read its data");
    to_c_order(stored.data(), reinterpret_cast<char*>(r.output.data()), shape, dtype_size(dt));
    return r;
}

}  // namespace moe::golden
