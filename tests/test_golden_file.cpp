// Golden files (spec/golden-format.md): round trips for every element type, determinism, what
// h5py sees, and each way a file can be unusable (unreadable, corrupt, malformed).
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "moe/golden/golden_file.hpp"
#include "temp_dir.hpp"
#include "moe/spec/problem.hpp"

namespace fs = std::filesystem;
using namespace moe;
using namespace moe::golden;

namespace {

constexpr const char* kPython = "/usr/bin/python3";  // the interpreter with h5py (see tests/CMakeLists.txt)

using moe::test::TempDir;

std::vector<std::string> dir_entries(const fs::path& dir) {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
    return names;
}

std::string read_bytes(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void write_text(const fs::path& p, const std::string& text) {
    std::ofstream out(p, std::ios::binary);
    out << text;
}

// Exit status of a shell command, or -1 if it did not exit normally.
int run(const std::string& cmd) {
    const int status = std::system(cmd.c_str());
    if (status == -1 || !WIFEXITED(status)) return -1;
    return WEXITSTATUS(status);
}

// Runs a Python snippet (h5py and numpy imported) saved next to the files it works on.
int python(const TempDir& dir, const std::string& code) {
    const fs::path script = dir / "snippet.py";
    write_text(script, "import h5py, numpy as np\n" + code);
    const int rc = run(std::string(kPython) + " '" + script.string() + "'");
    fs::remove(script);
    return rc;
}

std::string py_str(const fs::path& p) { return "r'" + p.string() + "'"; }

// Values that are multiples of 1/64 in [-15.6, 15.6] (exact in f16), from a small LCG; floating
// tensors also get -0, the smallest f16 subnormal, the largest f16 and infinity at the front.
Tensor filled(DType dt, Shape shape, std::uint32_t seed, std::int64_t index_bound = 0) {
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
GoldenCase make_case(ExpertType et, Convention conv, DType data, DType index, std::size_t T) {
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

GoldenCase small_case() {
    return make_case(ExpertType::gemm2_bias_swiglu_clamp, Convention::openvino, DType::f16, DType::i32, 3);
}

void check_same(const GoldenCase& want, const GoldenCase& got) {
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
std::string captured_stderr(const fs::path& file, F f) {
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

bool has(const std::string& message, const std::string& part) { return message.find(part) != std::string::npos; }

std::string list_of(const std::vector<std::uint64_t>& v) {
    std::ostringstream o;
    o << "[";
    for (std::size_t i = 0; i < v.size(); ++i) o << (i ? ", " : "") << v[i];
    return o.str() + "]";
}

// Raw element bits, as Python integers, for comparing with numpy's view of the same data.
std::vector<std::uint64_t> element_bits(const Tensor& t) {
    std::vector<std::uint64_t> out;
    const std::size_t w = dtype_size(t.dtype());
    for (std::size_t i = 0; i < t.size(); ++i) {
        std::uint64_t v = 0;
        for (std::size_t b = 0; b < w; ++b) v |= std::uint64_t{t.data()[i * w + b]} << (8 * b);  // little endian
        out.push_back(v);
    }
    return out;
}

}  // namespace

TEST_CASE("round trip: every element type, both index types, both expert types and conventions") {
    TempDir dir;
    for (DType data : {DType::f64, DType::f32, DType::f16, DType::bf16})
        for (DType index : {DType::i32, DType::i64})
            for (ExpertType et : {ExpertType::gemm2_bias_swiglu_clamp, ExpertType::gemm3_swiglu})
                for (Convention conv : {Convention::spec, Convention::openvino}) {
                    const GoldenCase c = make_case(et, conv, data, index, 3);
                    CAPTURE(c.problem.name);
                    const fs::path p = dir / (c.problem.name + ".h5");
                    write_golden(p, c);
                    const GoldenCase r = read_golden(p);
                    check_same(c, r);
                    const Tensor& h = r.problem.input(kHiddenStates);
                    CHECK(h.dtype() == data);
                    CHECK(h.shape() == Shape{3, kH});
                    CHECK(std::signbit(h.get(0)));
                    CHECK(h.get(1) == std::ldexp(1.0, -24));
                    CHECK(std::isinf(h.get(3)));
                    CHECK(r.problem.input(kTopkIndices).dtype() == index);
                    CHECK(r.seed == std::numeric_limits<std::uint64_t>::max());
                    CHECK(r.tier == "quick");
                    CHECK(r.exact);
                }
}

TEST_CASE("round trip: absent optional metadata stays absent") {
    TempDir dir;
    GoldenCase c = make_case(ExpertType::gemm3_swiglu, Convention::openvino, DType::f32, DType::i64, 2);
    c.problem.attributes.gate_idx.reset();
    c.seed.reset();
    c.generator.clear();
    c.tier.clear();
    c.description.clear();
    c.exact = false;
    c.stages.clear();
    write_golden(dir / "c.h5", c);
    const GoldenCase r = read_golden(dir / "c.h5");
    check_same(c, r);
    CHECK(!r.seed);
    CHECK(!r.problem.attributes.gate_idx);
    CHECK(r.stages.empty());
}

TEST_CASE("round trip: T = 0 tensors") {
    TempDir dir;
    const GoldenCase c = make_case(ExpertType::gemm2_bias_swiglu_clamp, Convention::spec, DType::bf16, DType::i64, 0);
    write_golden(dir / "empty.h5", c);
    const GoldenCase r = read_golden(dir / "empty.h5");
    check_same(c, r);
    CHECK(r.problem.input(kHiddenStates).shape() == Shape{0, kH});
    CHECK(r.problem.input(kTopkIndices).shape() == Shape{0, kK});
    CHECK(r.outputs.at("output").shape() == Shape{0, kH});
    CHECK(r.stages.at("gate_up").shape() == Shape{0, kK, 2 * kI});
    CHECK(r.problem.input(kWeight0).size() == kE * 2 * kI * kH);
}

TEST_CASE("round trip: tensors larger than one chunk") {
    TempDir dir;
    GoldenCase c = make_case(ExpertType::gemm3_swiglu, Convention::spec, DType::f32, DType::i32, 2);
    c.stages["rows"] = filled(DType::f64, {300, 1000}, 20);  // 2.4 MB: cut along rows
    c.stages["long_row"] = filled(DType::f64, {2, 300000}, 21);  // one row > 1 MiB: cut the row
    write_golden(dir / "big.h5", c);
    check_same(c, read_golden(dir / "big.h5"));
    // Chunks of at most 1 MiB, never larger than the dataset, with the documented filters.
    CHECK(python(dir, "f = h5py.File(" + py_str(dir / "big.h5") + ", 'r')\n"
                      "for name, want in [('stages/rows', (131, 1000)), ('stages/long_row', (1, 131072)),\n"
                      "                   ('inputs/hidden_states', (2, 4))]:\n"
                      "    d = f[name]\n"
                      "    assert d.chunks == want, (name, d.chunks)\n"
                      "    assert d.fletcher32 and d.shuffle, name\n"
                      "    assert d.compression == 'gzip' and d.compression_opts == 4, name\n") == 0);
}

TEST_CASE("writing the same case twice gives byte-identical files") {
    TempDir dir;
    const GoldenCase c = small_case();
    write_golden(dir / "a.h5", c);
    // Object timestamps have one-second resolution: wait so that any would differ.
    std::this_thread::sleep_for(std::chrono::milliseconds(1100));
    write_golden(dir / "b.h5", c);
    const std::string a = read_bytes(dir / "a.h5");
    CHECK(!a.empty());
    CHECK(a == read_bytes(dir / "b.h5"));
    write_golden(dir / "a.h5", c);  // over an existing file
    CHECK(a == read_bytes(dir / "a.h5"));
}

TEST_CASE("h5py reads the documented dtypes and the exact element bits") {
    TempDir dir;
    GoldenCase c = small_case();  // f16 data, i32 indices
    c.problem.inputs[kRoutingWeights] = filled(DType::bf16, {3, kK}, 30);
    c.problem.inputs[kBias1] = filled(DType::f32, {kE, kH}, 31);
    c.problem.inputs[kTopkIndices] = filled(DType::i64, {3, kK}, 32, kE);
    c.problem.inputs[kBias0] = filled(DType::f64, {kE, 2 * kI}, 33);
    const fs::path p = dir / "c.h5";
    write_golden(p, c);
    const auto& in = c.problem.inputs;
    const std::string code =
        "f = h5py.File(" + py_str(p) + ", 'r')\n"
        "a = f.attrs\n"
        "assert a['format'] == 'moe-golden' and isinstance(a['format'], str)\n"
        "assert a['format_version'] == 1\n"
        "assert a['case'] == " + "'" + c.problem.name + "'\n"
        "assert a['expert_type'] == 'GEMM2_BIAS_SWIGLU_CLAMP' and a['convention'] == 'openvino'\n"
        "assert a['expert_alpha'] == 7.0 and a['expert_beta'] == 1.702 and a['gate_idx'] == 1\n"
        "assert a['swish_beta'] == 1.702 and a['clamp_limit'] == 7.0 and a['gate_lane'] == 1\n"
        "assert a['weight_layout'] == 'NK' and a['routing_layout'] == 'compact'\n"
        "assert a['seed'] == 2**64 - 1 and a['seed'].dtype == np.uint64\n"
        "assert a['tier'] == 'quick' and a['description'] == " + "'" + c.description + "'\n"
        "assert a['exact'] == 1 and a['exact'].dtype == np.uint8\n"
        "def check(name, dtype, view, element_type, bits):\n"
        "    d = f[name]\n"
        "    assert d.dtype == dtype, (name, d.dtype)\n"
        "    assert d.attrs['element_type'] == element_type, name\n"
        "    got = d[()].view(view).ravel().tolist()\n"
        "    assert got == bits, (name, got, bits)\n"
        "check('inputs/hidden_states', np.float16, np.uint16, 'f16', " + list_of(element_bits(in.at(kHiddenStates))) + ")\n"
        "h = f['inputs/hidden_states'][()].ravel()\n"
        "assert np.signbit(h[0]) and h[1] == 2.0**-24 and h[2] == 65504.0 and np.isinf(h[3])\n"
        "check('inputs/routing_weights', np.uint16, np.uint16, 'bf16', " + list_of(element_bits(in.at(kRoutingWeights))) + ")\n"
        "check('inputs/bias_1', np.float32, np.uint32, 'f32', " + list_of(element_bits(in.at(kBias1))) + ")\n"
        "check('inputs/bias_0', np.float64, np.uint64, 'f64', " + list_of(element_bits(in.at(kBias0))) + ")\n"
        "check('inputs/router_topk_output_indices', np.int64, np.int64, 'i64', " + list_of(element_bits(in.at(kTopkIndices))) + ")\n"
        "check('inputs/weight_0', np.float16, np.uint16, 'f16', " + list_of(element_bits(in.at(kWeight0))) + ")\n"
        "check('outputs/output', np.float64, np.uint64, 'f64', " + list_of(element_bits(c.outputs.at("output"))) + ")\n";
    CHECK(python(dir, code) == 0);

    GoldenCase i32 = small_case();
    write_golden(dir / "i32.h5", i32);
    CHECK(python(dir, "d = h5py.File(" + py_str(dir / "i32.h5") + ", 'r')['inputs/router_topk_output_indices']\n"
                      "assert d.dtype == np.int32 and d.attrs['element_type'] == 'i32'\n"
                      "assert d[()].ravel().tolist() == " +
                          list_of(element_bits(i32.problem.input(kTopkIndices))) + "\n") == 0);
}

TEST_CASE("a changed stored byte is reported as corrupt, naming the dataset") {
    TempDir dir;
    for (const std::string dataset : {"inputs/weight_0", "outputs/output", "stages/gate_up"}) {
        CAPTURE(dataset);
        const fs::path p = dir / "c.h5";
        write_golden(p, small_case());
        // Where the (single) chunk is stored, from h5py.
        const fs::path where = dir / "chunk.txt";
        REQUIRE(python(dir, "i = h5py.File(" + py_str(p) + ", 'r')['" + dataset + "'].id.get_chunk_info(0)\n"
                            "open(" + py_str(where) + ", 'w').write('%d %d' % (i.byte_offset, i.size))\n") == 0);
        std::uint64_t offset = 0, size = 0;
        std::ifstream(where) >> offset >> size;
        REQUIRE(size > 0);
        {
            std::fstream f(p, std::ios::in | std::ios::out | std::ios::binary);
            const auto pos = static_cast<std::streamoff>(offset + size / 2);
            f.seekg(pos);
            const char b = static_cast<char>(f.get());
            f.seekp(pos);
            f.put(static_cast<char>(b ^ 0xff));
            REQUIRE(f.good());
        }
        const std::string msg = file_error([&] { read_golden(p); }, FileError::Kind::corrupt);
        CHECK(has(msg, "checksum"));
        CHECK(has(msg, "/" + dataset));
        CHECK(has(msg, p.string()));
    }
}

TEST_CASE("missing /outputs/output is malformed unless outputs are not required") {
    TempDir dir;
    GoldenCase c = small_case();
    c.outputs.clear();
    write_golden(dir / "no_outputs.h5", c);
    std::string msg = file_error([&] { read_golden(dir / "no_outputs.h5"); }, FileError::Kind::malformed);
    CHECK(has(msg, "/outputs/output"));
    CHECK(has(msg, "no_outputs.h5"));
    const GoldenCase r = read_golden(dir / "no_outputs.h5", false);
    check_same(c, r);

    c.outputs["expert_sum"] = filled(DType::f64, {3, kK, kH}, 10);  // other outputs do not count
    write_golden(dir / "other_output.h5", c);
    msg = file_error([&] { read_golden(dir / "other_output.h5"); }, FileError::Kind::malformed);
    CHECK(has(msg, "/outputs/output"));
    CHECK(read_golden(dir / "other_output.h5", false).outputs.size() == 1);

    write_golden(dir / "deleted.h5", small_case());
    REQUIRE(python(dir, "del h5py.File(" + py_str(dir / "deleted.h5") + ", 'r+')['outputs/output']\n") == 0);
    CHECK(has(file_error([&] { read_golden(dir / "deleted.h5"); }, FileError::Kind::malformed), "/outputs/output"));
    CHECK(read_golden(dir / "deleted.h5", false).outputs.count("expert_sum") == 1);

    write_golden(dir / "no_inputs.h5", small_case());
    REQUIRE(python(dir, "del h5py.File(" + py_str(dir / "no_inputs.h5") + ", 'r+')['inputs']\n") == 0);
    CHECK(has(file_error([&] { read_golden(dir / "no_inputs.h5"); }, FileError::Kind::malformed), "/inputs"));
}

TEST_CASE("root attributes: missing, unknown or wrong values are malformed") {
    TempDir dir;
    const fs::path p = dir / "c.h5";
    // Writes a fresh case, applies `edit` (Python, file open r+ as f), expects malformed.
    auto malformed_after = [&](const std::string& edit) {
        write_golden(p, small_case());
        REQUIRE(python(dir, "f = h5py.File(" + py_str(p) + ", 'r+')\n" + edit + "\nf.close()\n") == 0);
        return file_error([&] { read_golden(p); }, FileError::Kind::malformed);
    };
    std::string msg = malformed_after("del f.attrs['expert_type']");
    CHECK(has(msg, "expert_type"));
    CHECK(has(msg, "missing"));
    CHECK(has(msg, p.string()));
    for (const char* attr : {"format", "format_version", "case", "convention"})
        CHECK(has(malformed_after(std::string("del f.attrs['") + attr + "']"), std::string("'") + attr + "'"));

    msg = malformed_after("f.attrs['convention'] = 'tensorrt'");
    CHECK(has(msg, "convention"));
    CHECK(has(msg, "tensorrt"));
    msg = malformed_after("f.attrs['expert_type'] = 'GEMM4'");
    CHECK(has(msg, "expert_type"));
    CHECK(has(msg, "GEMM4"));
    msg = malformed_after("f.attrs['format'] = 'hdf5-dump'");
    CHECK(has(msg, "moe-golden"));
    msg = malformed_after("f.attrs['format_version'] = 2");
    CHECK(has(msg, "format_version"));
    CHECK(has(msg, "2"));
    msg = malformed_after("f.attrs['expert_alpha'] = 'seven'");
    CHECK(has(msg, "expert_alpha"));
    msg = malformed_after("f.attrs['exact'] = 5");
    CHECK(has(msg, "exact"));
    msg = malformed_after("f.attrs['seed'] = -1");
    CHECK(has(msg, "seed"));
}

TEST_CASE("resolved attributes must agree with resolve()") {
    TempDir dir;
    const fs::path p = dir / "c.h5";
    auto malformed_after = [&](const std::string& edit) {
        write_golden(p, small_case());  // openvino: swish beta 1.702, clamp 7, gate lane 1, NK, compact
        REQUIRE(python(dir, "f = h5py.File(" + py_str(p) + ", 'r+')\n" + edit + "\nf.close()\n") == 0);
        return file_error([&] { read_golden(p); }, FileError::Kind::malformed);
    };
    std::string msg = malformed_after("f.attrs['swish_beta'] = 2.5");
    CHECK(has(msg, "swish_beta"));
    CHECK(has(msg, "2.5"));
    CHECK(has(msg, "1.702"));
    msg = malformed_after("f.attrs['clamp_limit'] = 6.0");
    CHECK(has(msg, "clamp_limit"));
    CHECK(has(msg, "6"));
    msg = malformed_after("f.attrs['gate_lane'] = 0");
    CHECK(has(msg, "gate_lane"));
    msg = malformed_after("f.attrs['weight_layout'] = 'KN'");
    CHECK(has(msg, "weight_layout"));
    CHECK(has(msg, "'NK'"));
    msg = malformed_after("f.attrs['routing_layout'] = 'dense'");
    CHECK(has(msg, "routing_layout"));
    // The op attribute changed, the resolved ones did not: they disagree now.
    msg = malformed_after("f.attrs['gate_idx'] = 0");
    CHECK(has(msg, "gate_lane"));

    // Without the resolved attributes (a user's own file), the op attributes alone decide; and
    // without expert_alpha/expert_beta, the convention's defaults apply.
    const GoldenCase c = small_case();
    write_golden(p, c);
    REQUIRE(python(dir, "f = h5py.File(" + py_str(p) + ", 'r+')\n"
                        "for k in ['swish_beta', 'clamp_limit', 'gate_lane', 'weight_layout', 'routing_layout']:\n"
                        "    del f.attrs[k]\n") == 0);
    check_same(c, read_golden(p));
    REQUIRE(python(dir, "f = h5py.File(" + py_str(p) + ", 'r+')\n"
                        "del f.attrs['expert_alpha']; del f.attrs['expert_beta']\n") == 0);
    const OpAttributes a = read_golden(p).problem.attributes;
    CHECK(a.expert_alpha == 0.0);
    CHECK(a.expert_beta == 1.0);
    CHECK(a.gate_idx == 1);
}

TEST_CASE("element_type must agree with the stored type") {
    TempDir dir;
    const fs::path p = dir / "c.h5";
    write_golden(p, small_case());
    REQUIRE(python(dir, "h5py.File(" + py_str(p) + ", 'r+')['outputs/output'].attrs['element_type'] = 'f16'\n") == 0);
    std::string msg = file_error([&] { read_golden(p); }, FileError::Kind::malformed);
    CHECK(has(msg, "/outputs/output"));
    CHECK(has(msg, "'f16'"));
    CHECK(has(msg, "64-bit float"));

    write_golden(p, small_case());
    REQUIRE(python(dir, "h5py.File(" + py_str(p) + ", 'r+')['inputs/hidden_states'].attrs['element_type'] = 'bf16'\n") == 0);
    msg = file_error([&] { read_golden(p); }, FileError::Kind::malformed);
    CHECK(has(msg, "/inputs/hidden_states"));
    CHECK(has(msg, "'bf16'"));
    CHECK(has(msg, "16-bit IEEE half float"));

    write_golden(p, small_case());
    REQUIRE(python(dir, "h5py.File(" + py_str(p) + ", 'r+')['inputs/weight_0'].attrs['element_type'] = 'f8'\n") == 0);
    msg = file_error([&] { read_golden(p); }, FileError::Kind::malformed);
    CHECK(has(msg, "/inputs/weight_0"));
    CHECK(has(msg, "f8"));
}

TEST_CASE("files that are not HDF5, or not there, are unreadable") {
    TempDir dir;
    write_text(dir / "notes.h5", "this is not an HDF5 file\n");
    std::string msg = file_error([&] { read_golden(dir / "notes.h5"); }, FileError::Kind::unreadable);
    CHECK(has(msg, "notes.h5"));
    CHECK(has(msg, "not an HDF5 file"));
    msg = file_error([&] { read_golden(dir / "absent.h5"); }, FileError::Kind::unreadable);
    CHECK(has(msg, "absent.h5"));
    CHECK(has(msg, "does not exist"));
    write_text(dir / "empty.h5", "");
    CHECK(has(file_error([&] { read_golden(dir / "empty.h5"); }, FileError::Kind::unreadable), "empty.h5"));
}

TEST_CASE("writing is atomic: no temporary file is left behind") {
    TempDir dir;
    write_golden(dir / "c.h5", small_case());
    CHECK(dir_entries(dir.path()) == std::vector<std::string>{"c.h5"});

    // A folder that does not exist: an error, and nothing created.
    std::string msg = file_error([&] { write_golden(dir / "missing" / "c.h5", small_case()); },
                                 FileError::Kind::unreadable);
    CHECK(has(msg, "c.h5"));
    CHECK(!fs::exists(dir / "missing"));

    // A failure half-way through writing (a rank-0 stage is rejected after the file was
    // created) removes the temporary file and leaves the existing target as it was.
    const std::string before = read_bytes(dir / "c.h5");
    GoldenCase bad = small_case();
    bad.stages["scalar"] = Tensor(DType::f64, {});
    msg = file_error([&] { write_golden(dir / "c.h5", bad); }, FileError::Kind::malformed);
    CHECK(has(msg, "/stages/scalar"));
    CHECK(dir_entries(dir.path()) == std::vector<std::string>{"c.h5"});
    CHECK(read_bytes(dir / "c.h5") == before);
}

TEST_CASE("the writer refuses cases the format cannot represent") {
    TempDir dir;
    GoldenCase c = small_case();
    c.outputs["output"] = filled(DType::f32, {3, kH}, 9);
    CHECK(has(file_error([&] { write_golden(dir / "c.h5", c); }, FileError::Kind::malformed), "/outputs/output"));
    c = small_case();
    c.outputs["output"] = filled(DType::f64, {3, kH + 1}, 9);
    CHECK(has(file_error([&] { write_golden(dir / "c.h5", c); }, FileError::Kind::malformed), "hidden_states"));
    c = small_case();
    c.problem.inputs["weights_0"] = filled(DType::f16, {2}, 1);
    CHECK(has(file_error([&] { write_golden(dir / "c.h5", c); }, FileError::Kind::malformed), "weights_0"));
    c = small_case();
    c.problem.attributes.convention = Convention::spec;  // keeps gate_idx: does not resolve
    CHECK(has(file_error([&] { write_golden(dir / "c.h5", c); }, FileError::Kind::malformed), "gate_idx"));
    CHECK(dir_entries(dir.path()).empty());
}

TEST_CASE("inputs written by hand with h5py, without element_type attributes, read fine") {
    TempDir dir;
    const fs::path p = dir / "by_hand.h5";
    REQUIRE(python(dir, "with h5py.File(" + py_str(p) + ", 'w') as f:\n"
                        "    f.attrs['format'] = 'moe-golden'\n"
                        "    f.attrs['format_version'] = 1\n"
                        "    f.attrs['case'] = 'by_hand'\n"
                        "    f.attrs['expert_type'] = 'GEMM3_SWIGLU'\n"
                        "    f.attrs['convention'] = 'spec'\n"
                        "    g = f.create_group('inputs')\n"
                        "    g['hidden_states'] = np.array([[1.5, -2.0, 0.25], [3.0, 4.0, -0.5]], dtype=np.float32)\n"
                        "    g['routing_weights'] = np.array([[0.75, 0.25], [1.0, 0.0]], dtype=np.float64)\n"
                        "    g['router_topk_output_indices'] = np.array([[0, 1], [1, 0]], dtype=np.int64)\n"
                        "    g['weight_0'] = np.array([0.5, -0.099975586], dtype=np.float16).reshape(1, 2, 1)\n"
                        "    g.create_dataset('weight_1', data=np.array([[[0x3f80]]], dtype=np.uint16))\n"
                        "    g['weight_1'].attrs['element_type'] = 'bf16'\n") == 0);
    const GoldenCase c = read_golden(p, false);
    CHECK(c.problem.name == "by_hand");
    CHECK(c.problem.attributes.expert_type == ExpertType::gemm3_swiglu);
    CHECK(c.problem.attributes.convention == Convention::spec);
    CHECK(c.problem.attributes.expert_alpha == 1.0);  // the spec convention's defaults
    CHECK(c.problem.attributes.expert_beta == 0.0);
    CHECK(!c.problem.attributes.gate_idx);
    CHECK(c.outputs.empty());
    CHECK(!c.seed);
    CHECK(!c.exact);
    const Tensor& h = c.problem.input(kHiddenStates);
    CHECK(h.dtype() == DType::f32);
    CHECK(h.shape() == Shape{2, 3});
    CHECK(h.to_f64() == std::vector<double>{1.5, -2.0, 0.25, 3.0, 4.0, -0.5});
    const Tensor& rw = c.problem.input(kRoutingWeights);
    CHECK(rw.dtype() == DType::f64);
    CHECK(rw.to_f64() == std::vector<double>{0.75, 0.25, 1.0, 0.0});
    const Tensor& idx = c.problem.input(kTopkIndices);
    CHECK(idx.dtype() == DType::i64);
    CHECK(idx.get_index(1) == 1);
    CHECK(idx.get_index(2) == 1);
    const Tensor& w0 = c.problem.input(kWeight0);
    CHECK(w0.dtype() == DType::f16);
    CHECK(w0.shape() == Shape{1, 2, 1});
    CHECK(w0.get(0) == 0.5);
    CHECK(w0.get(1) == round_to(DType::f16, -0.1));
    const Tensor& w1 = c.problem.input(kWeight1);
    CHECK(w1.dtype() == DType::bf16);
    CHECK(w1.get(0) == 1.0);
    CHECK(has(file_error([&] { read_golden(p); }, FileError::Kind::malformed), "/outputs/output"));

    // uint16 without element_type could be bf16 bit patterns or anything else: not guessed.
    REQUIRE(python(dir, "del h5py.File(" + py_str(p) + ", 'r+')['inputs/weight_1'].attrs['element_type']\n") == 0);
    const std::string msg = file_error([&] { read_golden(p, false); }, FileError::Kind::malformed);
    CHECK(has(msg, "/inputs/weight_1"));
    CHECK(has(msg, "bf16"));
}

TEST_CASE("the h5py checker passes on written files and fails on an empty or bad suite") {
    TempDir dir;
    const std::string checker = std::string(MOE_SOURCE_DIR) + "/tests/python/check_golden_with_h5py.py";
    auto check_dir = [&](const fs::path& d) {
        return run(std::string(kPython) + " '" + checker + "' '" + d.string() + "' > '" +
                   (dir / "checker.log").string() + "' 2>&1");
    };
    auto last_line = [&] {
        std::ifstream in(dir / "checker.log");
        std::string line, last;
        while (std::getline(in, line))
            if (!line.empty()) last = line;
        return last;
    };
    const fs::path suite = dir / "suite";
    fs::create_directories(suite);
    CHECK(check_dir(suite) != 0);  // an empty suite must not pass
    CHECK(last_line() == "0 passed, 0 failed");

    write_golden(suite / "a.h5",
                 make_case(ExpertType::gemm2_bias_swiglu_clamp, Convention::openvino, DType::f16, DType::i32, 3));
    write_golden(suite / "b.h5", make_case(ExpertType::gemm3_swiglu, Convention::spec, DType::bf16, DType::i64, 5));
    write_golden(suite / "c.h5",
                 make_case(ExpertType::gemm2_bias_swiglu_clamp, Convention::spec, DType::f32, DType::i64, 0));
    write_golden(suite / "d.h5", make_case(ExpertType::gemm3_swiglu, Convention::openvino, DType::f64, DType::i32, 2));
    CHECK(check_dir(suite) == 0);
    CHECK(last_line() == "4 passed, 0 failed");

    // An output stored as f32 (with a matching element_type) breaks the contract.
    REQUIRE(python(dir, "f = h5py.File(" + py_str(suite / "d.h5") + ", 'r+')\n"
                        "x = f['outputs/output'][()].astype(np.float32)\n"
                        "del f['outputs/output']\n"
                        "f['outputs/output'] = x\n"
                        "f['outputs/output'].attrs['element_type'] = 'f32'\n") == 0);
    CHECK(check_dir(suite) != 0);
    CHECK(last_line() == "3 passed, 1 failed");

    // An output whose shape is not that of hidden_states.
    write_golden(suite / "d.h5", make_case(ExpertType::gemm3_swiglu, Convention::openvino, DType::f64, DType::i32, 2));
    REQUIRE(python(dir, "f = h5py.File(" + py_str(suite / "d.h5") + ", 'r+')\n"
                        "del f['outputs/output']\n"
                        "f['outputs/output'] = np.zeros((2, 5))\n"
                        "f['outputs/output'].attrs['element_type'] = 'f64'\n") == 0);
    CHECK(check_dir(suite) != 0);
    CHECK(last_line() == "3 passed, 1 failed");
}

TEST_CASE("failures print nothing: HDF5's error stack goes into the FileError message") {
    TempDir dir;
    write_text(dir / "text.h5", "not HDF5");
    write_golden(dir / "ok.h5", small_case());
    REQUIRE(python(dir, "f = h5py.File(" + py_str(dir / "ok.h5") + ", 'r+')\n"
                        "del f.attrs['case']\n"
                        "f['inputs/weight_0'].attrs['element_type'] = 'i64'\n") == 0);
    int failures = 0;
    const std::string printed = captured_stderr(dir / "stderr.txt", [&] {
        for (const char* name : {"text.h5", "absent.h5", "ok.h5"}) {
            try {
                read_golden(dir / name);
            } catch (const FileError&) {
                ++failures;
            }
        }
        try {
            write_golden(dir / "missing" / "c.h5", small_case());
        } catch (const FileError&) {
            ++failures;
        }
    });
    CHECK(failures == 4);
    CHECK(printed == "");
}
