#pragma once
// Helpers shared by the golden-file tests (tests/golden/test_golden_*.cpp): a small case of every
// element type, comparisons, running Python with h5py, capturing stderr.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "moe/golden/golden_file.hpp"
#include "moe/spec/problem.hpp"
#include "temp_dir.hpp"
#include "text_contains.hpp"

namespace moe::test::golden_support {

namespace fs = std::filesystem;
using namespace moe;
using namespace moe::golden;

constexpr const char* kPython = "/usr/bin/python3";  // the interpreter with h5py (see tests/CMakeLists.txt)

using moe::test::TempDir;

inline std::vector<std::string> dir_entries(const fs::path& dir) {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
    return names;
}

inline std::string read_bytes(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline void write_text(const fs::path& p, const std::string& text) {
    std::ofstream out(p, std::ios::binary);
    out << text;
}

// Exit status of a shell command, or -1 if it did not exit normally.
inline int run(const std::string& cmd) {
    const int status = std::system(cmd.c_str());
    if (status == -1 || !WIFEXITED(status)) return -1;
    return WEXITSTATUS(status);
}

// Runs a Python snippet (h5py and numpy imported) saved next to the files it works on.
inline int python(const TempDir& dir, const std::string& code) {
    const fs::path script = dir / "snippet.py";
    write_text(script, "import h5py, numpy as np\n" + code);
    const int rc = run(std::string(kPython) + " '" + script.string() + "'");
    fs::remove(script);
    return rc;
}

inline std::string py_str(const fs::path& p) { return "r'" + p.string() + "'"; }

// Python (for python()) that copies golden file `src` to `dst` with h5py, `dst` created with
// `options` (say "libver='earliest'": h5py's default, the oldest format, no metadata checksums),
// both closed at its end.
inline std::string h5py_copy(const fs::path& src, const fs::path& dst, const std::string& options) {
    return "with h5py.File(" + py_str(src) + ", 'r') as src, h5py.File(" + py_str(dst) + ", 'w', " + options +
           ") as dst:\n"
           "    for k, v in src.attrs.items(): dst.attrs[k] = v\n"
           "    for g in src: src.copy(src[g], dst, name=g)\n";
}

// Values that are multiples of 1/64 in [-15.6, 15.6] (exact in f16), from a small LCG; floating
// tensors also get -0, the smallest f16 subnormal, the largest f16 and infinity at the front.
inline Tensor filled(DType dt, Shape shape, std::uint32_t seed, std::int64_t index_bound = 0) {
    Tensor t(dt, std::move(shape));
    std::uint32_t s = seed;
    for (std::size_t i = 0; i < t.size(); ++i) {
        s = s * 1664525u + 1013904223u;
        if (!is_floating(dt)) {
            t.set_index(i, static_cast<std::int64_t>(s >> 8) % index_bound);
            continue;
        }
        t.set(i, (static_cast<int>((s >> 16) % 2001) - 1000) / 64.0);
    }
    const double specials[] = {-0.0, std::ldexp(1.0, -24), 65504.0, std::numeric_limits<double>::infinity()};
    if (is_floating(dt))
        for (std::size_t i = 0; i < 4 && i < t.size(); ++i) t.set(i, specials[i]);
    return t;
}

constexpr std::size_t kH = 4, kI = 3, kE = 3, kK = 2;

// A small, consistent case (validation is not the golden file's concern, but the shapes are
// plausible): compact routing, weights in NK layout, outputs and stages in f64.
inline GoldenCase make_case(ExpertType et, Convention conv, DType data, DType index, std::size_t T) {
    GoldenCase c;
    const bool gemm2 = et == ExpertType::gemm2_bias_swiglu_clamp;
    c.problem.name = std::string(gemm2 ? "gemm2" : "gemm3") + "_" + std::string(convention_name(conv)) + "_" +
                     std::string(dtype_name(data)) + "_" + std::string(dtype_name(index)) + "_T" +
                     std::to_string(T);
    OpAttributes& a = c.problem.attributes;
    a = default_attributes(et, conv);
    if (conv == Convention::openvino) {
        a.expert_alpha = 7.0;
        a.expert_beta = 1.702;
        if (gemm2) a.gate_idx = 1;
    } else {
        a.expert_alpha = 1.702;
        a.expert_beta = 7.0;
    }
    auto& in = c.problem.inputs;
    in[kHiddenStates] = filled(data, {T, kH}, 1);
    in[kRoutingWeights] = filled(data, {T, kK}, 2);
    in[kTopkIndices] = filled(index, {T, kK}, 3, static_cast<std::int64_t>(kE));
    const std::size_t w0 = gemm2 ? 2 * kI : kI;
    in[kWeight0] = filled(data, {kE, w0, kH}, 4);
    if (gemm2) {
        in[kBias0] = filled(data, {kE, 2 * kI}, 5);
        in[kWeight1] = filled(data, {kE, kH, kI}, 6);
        in[kBias1] = filled(data, {kE, kH}, 7);
    } else {
        in[kWeight1] = filled(data, {kE, kI, kH}, 6);
        in[kWeight2] = filled(data, {kE, kH, kI}, 8);
    }
    c.outputs["output"] = filled(DType::f64, {T, kH}, 9);
    c.outputs["expert_sum"] = filled(DType::f64, {T, kK, kH}, 10);
    c.stages["gate_up"] = filled(DType::f64, {T, kK, w0}, 11);
    c.stages["activated"] = filled(DType::f64, {T, kK, kI}, 12);
    c.seed = std::numeric_limits<std::uint64_t>::max();
    c.generator = "test_golden_file";
    c.tier = "quick";
    c.description = "hand-built case, UTF-8: \xc3\xa9\xe2\x86\x92";
    c.exact = true;
    return c;
}

inline GoldenCase small_case() {
    return make_case(ExpertType::gemm2_bias_swiglu_clamp, Convention::openvino, DType::f16, DType::i32, 3);
}

inline void check_same(const GoldenCase& want, const GoldenCase& got) {
    CHECK(got.problem.name == want.problem.name);
    const OpAttributes &a = want.problem.attributes, &b = got.problem.attributes;
    CHECK(b.expert_type == a.expert_type);
    CHECK(b.convention == a.convention);
    CHECK(b.expert_alpha == a.expert_alpha);
    CHECK(b.expert_beta == a.expert_beta);
    CHECK(b.gate_idx == a.gate_idx);
    REQUIRE(got.problem.inputs.size() == want.problem.inputs.size());
    for (const auto& [name, t] : want.problem.inputs) {
        CAPTURE(name);
        REQUIRE(got.problem.has(name));
        CHECK(got.problem.inputs.at(name) == t);
    }
    CHECK(got.outputs == want.outputs);
    CHECK(got.stages == want.stages);
    CHECK(got.seed == want.seed);
    CHECK(got.generator == want.generator);
    CHECK(got.tier == want.tier);
    CHECK(got.description == want.description);
    CHECK(got.exact == want.exact);
}

// Calls f, which must throw FileError of `kind`; returns the message.
template <class F>
std::string file_error(F f, FileError::Kind kind) {
    try {
        f();
    } catch (const FileError& e) {
        CHECK(e.kind() == kind);
        return e.what();
    } catch (const std::exception& e) {
        FAIL("expected FileError, got another exception: " << e.what());
        return "";
    }
    FAIL("expected FileError, nothing was thrown");
    return "";
}

// What is written to file descriptor 2 (HDF5 prints its error stacks there) while f runs.
template <class F>
inline std::string captured_stderr(const fs::path& file, F f) {
    std::fflush(stderr);
    const int saved = ::dup(2);
    const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    REQUIRE(saved >= 0);
    REQUIRE(fd >= 0);
    ::dup2(fd, 2);
    ::close(fd);
    f();
    std::fflush(stderr);
    ::dup2(saved, 2);
    ::close(saved);
    return read_bytes(file);
}

using moe::test::has;

inline std::string list_of(const std::vector<std::uint64_t>& v) {
    std::ostringstream o;
    o << "[";
    for (std::size_t i = 0; i < v.size(); ++i) o << (i ? ", " : "") << v[i];
    return o.str() + "]";
}

// Raw element bits, as Python integers, for comparing with numpy's view of the same data.
inline std::vector<std::uint64_t> element_bits(const Tensor& t) {
    std::vector<std::uint64_t> out;
    const std::size_t w = dtype_size(t.dtype());
    for (std::size_t i = 0; i < t.size(); ++i) {
        std::uint64_t v = 0;
        for (std::size_t b = 0; b < w; ++b) v |= std::uint64_t{t.data()[i * w + b]} << (8 * b);  // little endian
        out.push_back(v);
    }
    return out;
}

}  // namespace moe::test::golden_support
