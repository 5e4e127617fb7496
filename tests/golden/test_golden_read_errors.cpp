// Golden files (spec/golden-format.md): each way a file can be unusable when read (unreadable,
// corrupt, malformed), each naming the file and the dataset or attribute.
#include <doctest/doctest.h>

#include "golden_test_support.hpp"

using namespace moe::test::golden_support;

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
    msg = malformed_after("f.attrs['format_version'] = 3");
    CHECK(has(msg, "format_version"));
    CHECK(has(msg, "2"));
    msg = malformed_after("f.attrs['expert_alpha'] = 'seven'");
    CHECK(has(msg, "expert_alpha"));
    msg = malformed_after("f.attrs['exact'] = 5");
    CHECK(has(msg, "exact"));
    msg = malformed_after("f.attrs['seed'] = -1");
    CHECK(has(msg, "seed"));
    // An unsigned value past int64's range is named as stored (HDF5 would clamp it to 2^63 - 1).
    msg = malformed_after("f.attrs['format_version'] = np.uint64(2**64 - 2)");
    CHECK(has(msg, "format_version"));
    CHECK(has(msg, "18446744073709551614"));
}

TEST_CASE("an empty case, or a fixed-length string with text after a NUL, is malformed; NUL padding is not") {
    TempDir dir;
    const fs::path p = dir / "c.h5";
    auto edited = [&](const std::string& edit) {
        write_golden(p, small_case());
        REQUIRE(python(dir, "f = h5py.File(" + py_str(p) + ", 'r+')\n" + edit + "\nf.close()\n") == 0);
    };
    // A result file cannot name an empty case (check could never answer it), and reports could
    // not tell it apart: named as the result-file reader names it.
    edited("f.attrs['case'] = ''");
    std::string msg = file_error([&] { read_golden(p); }, FileError::Kind::malformed);
    CHECK(has(msg, "'case'"));
    CHECK(has(msg, "empty"));
    CHECK(has(msg, p.string()));
    // A fixed-length string (numpy bytes: null-padded) with an embedded NUL was cut at it silently:
    // the case "before\0after" ran as "before".
    edited("f.attrs['case'] = np.bytes_(b'before\\x00after')");
    msg = file_error([&] { read_golden(p); }, FileError::Kind::malformed);
    CHECK(has(msg, "'case'"));
    CHECK(has(msg, "NUL"));
    edited("f.attrs['generator'] = np.bytes_(b'gen\\x00\\x00x')");
    CHECK(has(file_error([&] { read_golden(p); }, FileError::Kind::malformed), "'generator'"));
    // NUL padding alone is a fixed-length string's ordinary end.
    edited("f.attrs.create('case', np.bytes_(b'padded'), dtype='S16')");
    CHECK(read_golden(p).problem.name == "padded");
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
