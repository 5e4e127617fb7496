// Golden files are untrusted input (spec/golden-format.md, "Untrusted files"): nothing outside
// the file is read, storage is checked before any data is read, memory is bounded, and stored
// results must belong to their inputs.
#include <doctest/doctest.h>
#include <sys/stat.h>

#include "bundled_suite.hpp"
#include "golden_test_support.hpp"
#include "moe/golden/isolated_read.hpp"
#include "moe/golden/manifest.hpp"
#include "moe/golden/stored_results.hpp"
#include "moe/spec/error.hpp"

using namespace moe::test::golden_support;
using moe::test::bundled_case;

namespace {

// A file written by write_golden, then changed by a Python snippet with `f` open read-write.
fs::path edited(const TempDir& dir, const std::string& name, const std::string& edit) {
    const fs::path p = dir / name;
    write_golden(p, small_case());
    REQUIRE(python(dir, "f = h5py.File(" + py_str(p) + ", 'r+')\n" + edit + "\nf.close()\n") == 0);
    return p;
}

std::string refused(const fs::path& p) {
    return file_error([&] { read_golden(p); }, FileError::Kind::refused);
}

}  // namespace

TEST_CASE("files are written with the newest format bounds: metadata is checksummed") {
    TempDir dir;
    write_golden(dir / "c.h5", small_case());
    FileStorage s;
    ReadOptions o;
    o.storage = &s;
    read_golden(dir / "c.h5", o);
    CHECK(s.superblock_version >= 2);
    CHECK(s.metadata_checksums);
    for (const auto& d : s.datasets) {
        CAPTURE(d.path);
        CHECK((d.fletcher32 || d.memory_bytes == 0));
    }
    // h5py's defaults write the oldest format: readable, reported as not checksummed.
    const fs::path old = dir / "old.h5";
    REQUIRE(python(dir, h5py_copy(dir / "c.h5", old, "libver='earliest'")) == 0);
    read_golden(old, o);
    CHECK(!s.metadata_checksums);
}

TEST_CASE("data outside the file is refused, naming the dataset and the feature") {
    TempDir dir;
    // External raw storage over another file.
    const fs::path outside = dir / "outside.bin";
    write_text(outside, std::string(4096, '\x01'));
    fs::path p = edited(dir, "external.h5",
                        "x = f['inputs/bias_1'][()]\ndel f['inputs/bias_1']\n"
                        "d = f['inputs'].create_dataset('bias_1', shape=x.shape, dtype=x.dtype, external=[(" +
                            py_str(outside) + ", 0, x.nbytes)])\nd.attrs['element_type'] = 'f16'");
    std::string msg = refused(p);
    CHECK(has(msg, "dataset /inputs/bias_1"));
    CHECK(has(msg, "external raw storage"));
    CHECK(has(msg, "outside.bin"));

    // An external link to another golden file's dataset.
    write_golden(dir / "other.h5", small_case());
    p = edited(dir, "elink.h5", "del f['inputs/weight_0']\nf['inputs/weight_0'] = h5py.ExternalLink(" +
                                    py_str(dir / "other.h5") + ", '/inputs/weight_0')");
    msg = refused(p);
    CHECK(has(msg, "/inputs/weight_0"));
    CHECK(has(msg, "external link"));
    CHECK(has(msg, "other.h5"));

    // A whole group behind an external link.
    p = edited(dir, "elink_group.h5", "del f['outputs']\nf['outputs'] = h5py.ExternalLink(" + py_str(dir / "other.h5") +
                                          ", '/outputs')");
    CHECK(has(refused(p), "group /outputs"));

    // A soft link through an external link leaves the file; one inside the file is fine.
    p = edited(dir, "soft_out.h5", "f['ext'] = h5py.ExternalLink(" + py_str(dir / "other.h5") +
                                       ", '/inputs')\ndel f['inputs/weight_1']\n"
                                       "f['inputs/weight_1'] = h5py.SoftLink('/ext/weight_1')");
    msg = refused(p);
    CHECK(has(msg, "/inputs/weight_1"));
    CHECK(has(msg, "soft link"));
    p = edited(dir, "soft_in.h5", "f.move('inputs/weight_1', 'moved')\nf['inputs/weight_1'] = h5py.SoftLink('/moved')");
    CHECK(read_golden(p).problem.inputs.at("weight_1") == small_case().problem.inputs.at("weight_1"));
    p = edited(dir, "soft_dangling.h5", "del f['inputs/weight_1']\nf['inputs/weight_1'] = h5py.SoftLink('/nowhere')");
    CHECK(has(file_error([&] { read_golden(p); }, FileError::Kind::malformed), "does not exist"));

    // A virtual dataset mapping another file.
    p = edited(dir, "vds.h5",
               "x = f['inputs/bias_1']\nshape, dtype = x.shape, x.dtype\ndel f['inputs/bias_1']\n"
               "lay = h5py.VirtualLayout(shape=shape, dtype=dtype)\n"
               "lay[...] = h5py.VirtualSource(" + py_str(dir / "other.h5") + ", 'inputs/bias_1', shape=shape)\n"
               "d = f['inputs'].create_virtual_dataset('bias_1', lay)\nd.attrs['element_type'] = 'f16'");
    msg = refused(p);
    CHECK(has(msg, "dataset /inputs/bias_1"));
    CHECK(has(msg, "virtual dataset"));
}

TEST_CASE("filters other than deflate, shuffle and fletcher32 are refused") {
    TempDir dir;
    const fs::path p = edited(dir, "lzf.h5",
                              "x = f['inputs/bias_0'][()]\ndel f['inputs/bias_0']\n"
                              "d = f['inputs'].create_dataset('bias_0', data=x, compression='lzf')\n"
                              "d.attrs['element_type'] = 'f16'");
    const std::string msg = refused(p);
    CHECK(has(msg, "dataset /inputs/bias_0"));
    CHECK(has(msg, "filter"));
    CHECK(has(msg, "32000"));  // lzf's filter id
}

TEST_CASE("a FIFO or a device is refused at once, never waited on") {
    TempDir dir;
    const fs::path fifo = dir / "x.h5";
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    CHECK(has(refused(fifo), "FIFO"));
    CHECK(has(refused("/dev/zero"), "character device"));
    CHECK_THROWS_AS(sha256_file(fifo), moe::InputError);
}

TEST_CASE("memory: a dataset whose shape its stored bytes cannot hold, or over the budget, is refused before reading") {
    TempDir dir;
    // Chunks never written: the data would read as fill values.
    fs::path p = edited(dir, "unwritten.h5",
                        "del f['inputs/weight_1']\nd = f['inputs'].create_dataset('weight_1', shape=(3, 4, 3), "
                        "dtype='f2', chunks=(1, 4, 3))\nd.attrs['element_type'] = 'f16'");
    CHECK(has(file_error([&] { read_golden(p); }, FileError::Kind::malformed), "chunks are stored"));

    // A budget smaller than the case.
    write_golden(dir / "c.h5", small_case());
    ReadOptions o;
    o.max_memory = 256;
    const std::string msg = file_error([&] { read_golden(dir / "c.h5", o); }, FileError::Kind::refused);
    CHECK(has(msg, "memory budget"));
    o.max_memory = 1 << 20;
    CHECK_NOTHROW(read_golden(dir / "c.h5", o));
}

TEST_CASE("datasets whose fill time is 'never' read as written") {
    // The reader reads into memory it has not zero-filled; where HDF5 would leave elements as
    // they were (fill time never: a missing chunk is skipped) it zero-fills first. Every input
    // rewritten that way, chunked with its checksum, reads back bit for bit, in process and
    // through the isolated reader (which fills its memory from a pipe).
    TempDir dir;
    const GoldenCase c = small_case();
    const fs::path p = dir / "fill_never.h5";
    write_golden(p, c);
    REQUIRE(python(dir, "f = h5py.File(" + py_str(p) + ", 'r+')\n"
                        "g = f['inputs']\n"
                        "for name in list(g):\n"
                        "    old = g[name]\n"
                        "    a, attrs, tid, chunks = old[...], dict(old.attrs), old.id.get_type(), old.chunks\n"
                        "    del g[name]\n"
                        "    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)\n"
                        "    if chunks:\n"
                        "        dcpl.set_chunk(chunks)\n"
                        "        dcpl.set_fletcher32()\n"
                        "    dcpl.set_fill_time(h5py.h5d.FILL_TIME_NEVER)\n"
                        "    d = h5py.h5d.create(g.id, name.encode(), tid, h5py.h5s.create_simple(a.shape), dcpl=dcpl)\n"
                        "    if a.size:\n"
                        "        d.write(h5py.h5s.ALL, h5py.h5s.ALL, a)\n"
                        "    for k, v in attrs.items():\n"
                        "        g[name].attrs[k] = v\n"
                        "    assert g[name].id.get_create_plist().get_fill_time() == h5py.h5d.FILL_TIME_NEVER\n"
                        "f.close()\n") == 0);
    check_same(c, read_golden(p));
    check_same(c, read_golden_isolated(p, ReadOptions{}));
}

TEST_CASE("stored error bounds and output must belong to the inputs") {
    TempDir dir;
    const fs::path bundled = bundled_case("gemm2_gptoss_openvino_f32.h5");
    auto check = [&](const fs::path& p) {
        GoldenCase c = read_golden(p);
        moe::validate(c.problem);
        return check_stored_results(p, c);
    };
    CHECK(check(bundled) > 0);
    // The non-finite case: its +Inf and NaN bounds are the reference's own (recomputed there).
    CHECK(check(bundled_case("nonfinite_propagation.h5")) > 0);

    auto variant = [&](const std::string& name, const std::string& edit) {
        const fs::path p = dir / name;
        fs::copy_file(bundled, p);
        REQUIRE(python(dir, "f = h5py.File(" + py_str(p) + ", 'r+')\n" + edit + "\nf.close()\n") == 0);
        return p;
    };
    struct Bad {
        const char* name;
        const char* edit;
        FileError::Kind kind;
        const char* dataset;
    };
    const Bad bad[] = {
        {"negative.h5", "f['outputs/bound_down_acc'][0, 0] = -1.0", FileError::Kind::malformed, "/outputs/bound_down_acc"},
        {"scaled.h5", "b = f['outputs/bound_first_acc']\nb[...] = b[()] * 1e300", FileError::Kind::corrupt,
         "/outputs/bound_first_acc"},
        {"zeroed.h5", "b = f['outputs/bound_act_eval']\nb[...] = 0", FileError::Kind::corrupt, "/outputs/bound_act_eval"},
        {"inf.h5", "b = f['outputs/bound_down_store']\nb[...] = float('inf')", FileError::Kind::corrupt,
         "/outputs/bound_down_store"},
        {"one_element.h5", "f['outputs/bound_first_store'][3, 7] *= 1e6", FileError::Kind::corrupt,
         "/outputs/bound_first_store"},
        {"output.h5", "o = f['outputs/output']\no[...] = 0", FileError::Kind::corrupt, "/outputs/output"},
        // A false claim of exactness: zero tolerance would fail correct backends.
        {"claims_exact.h5", "f.attrs['exact'] = np.uint8(1)", FileError::Kind::malformed, "root attribute 'exact'"},
    };
    for (const Bad& b : bad) {
        CAPTURE(b.name);
        const fs::path p = variant(b.name, b.edit);
        const std::string msg = file_error([&] { check(p); }, b.kind);
        CHECK(has(msg, b.dataset));
        CHECK(has(msg, b.name));
    }
    // A true claim stands: the bundled exact cases pass the certificate.
    CHECK(check(bundled_case("exact_gemm2_lane1.h5")) > 0);
    // A bound of another shape than the output is malformed already when read.
    const fs::path p = variant("shape.h5", "del f['outputs/bound_act_store']\nf['outputs/bound_act_store'] = "
                                           "np.zeros((2, 2))\nf['outputs/bound_act_store'].attrs['element_type'] = 'f64'");
    CHECK(has(file_error([&] { read_golden(p); }, FileError::Kind::malformed), "/outputs/bound_act_store"));
}

TEST_CASE("printable: every byte a terminal would act on, or that is not UTF-8, is \\xNN; a backslash is \\\\") {
    // C0, DEL and C1 controls (U+009B is a CSI in a UTF-8 terminal, U+0085 a line end).
    CHECK(printable("a\x1b[2Jb\x7f") == "a\\x1b[2Jb\\x7f");
    CHECK(printable("csi\xc2\x9b" "31m nel\xc2\x85 c1\xc2\x80\xc2\x9f") ==
          "csi\\xc2\\x9b31m nel\\xc2\\x85 c1\\xc2\\x80\\xc2\\x9f");
    // Bidirectional and line-separator format characters: "safe\u202eexe.fdp" reads as "safepdf.exe".
    CHECK(printable("safe\xe2\x80\xae" "exe.fdp") == "safe\\xe2\\x80\\xaeexe.fdp");
    for (const char* format : {"\xe2\x80\x8e", "\xe2\x80\x8f", "\xe2\x80\xaa", "\xe2\x80\xab", "\xe2\x80\xac",
                               "\xe2\x80\xad", "\xe2\x81\xa6", "\xe2\x81\xa7", "\xe2\x81\xa8", "\xe2\x81\xa9",
                               "\xe2\x80\xa8", "\xe2\x80\xa9"}) {
        CAPTURE(format);
        const std::string shown = printable(format);
        CHECK(shown.size() == 12);
        CHECK(shown.rfind("\\xe2\\x8", 0) == 0);
    }
    // Invalid UTF-8: a stray byte, a truncated sequence, an overlong form, a surrogate, past U+10FFFF.
    CHECK(printable("bad\xff\xfe\xc3(") == "bad\\xff\\xfe\\xc3(");
    CHECK(printable("cut\xe2\x80") == "cut\\xe2\\x80");
    CHECK(printable("\xc0\xaf \xed\xa0\x80 \xf4\x90\x80\x80") ==
          "\\xc0\\xaf \\xed\\xa0\\x80 \\xf4\\x90\\x80\\x80");
    // Other text is kept: accents, arrows, a no-break space, a zero-width space, an emoji.
    const std::string kept = "caf\xc3\xa9 \xe2\x86\x92 \xc2\xa0 \xe2\x80\x8b \xf0\x9f\x99\x82 plain";
    CHECK(printable(kept) == kept);
    // Injective: the literal text x\x0ay and x<newline>y no longer print the same.
    CHECK(printable("x\\x0ay") == "x\\\\x0ay");
    CHECK(printable("x\ny") == "x\\x0ay");
    CHECK(printable("a\\b\\\\") == "a\\\\b\\\\\\\\");
}

TEST_CASE("a malformed-attribute message quotes the value escaped: no C1 control or bidi override reaches the terminal") {
    TempDir dir;
    const fs::path p = edited(dir, "c1.h5", "f.attrs['expert_type'] = 'GEMM\\u009b2J\\u202e4'");
    const std::string msg = file_error([&] { read_golden(p); }, FileError::Kind::malformed);
    CHECK(has(msg, "'GEMM\\xc2\\x9b2J\\xe2\\x80\\xae4'"));
    CHECK_FALSE(has(msg, "\xc2\x9b"));
    CHECK_FALSE(has(msg, "\xe2\x80\xae"));
}

TEST_CASE("manifest problems name the files escaped: a file name holds no newline or terminal escape for the terminal") {
    TempDir dir;
    write_golden(dir / "ok.h5", small_case());
    fs::copy_file(dir / "ok.h5", dir / "evil\x1b[31mRED\nFAKE\xc2\x9b.h5");
    fs::copy_file(dir / "ok.h5", dir / "changed\x1b]0;t\x07.h5");
    const std::string zeros(64, '0');
    write_text(dir / kManifestName, sha256_file(dir / "ok.h5") + "  ok.h5\n" + zeros + "  changed\x1b]0;t\x07.h5\n" +
                                        zeros + "  gone\x1b[2J.h5\n");
    const std::vector<std::string> problems = manifest_problems(dir.path());
    REQUIRE(problems.size() == 3);
    for (const auto& p : problems) {
        CAPTURE(p);
        CHECK_FALSE(has(p, "\x1b"));
        CHECK_FALSE(has(p, "\n"));
        CHECK_FALSE(has(p, "\x07"));
        CHECK_FALSE(has(p, "\xc2\x9b"));
    }
    CHECK(has(problems[0], "changed\\x1b]0;t\\x07.h5: SHA-256 differs"));
    CHECK(has(problems[1], "evil\\x1b[31mRED\\x0aFAKE\\xc2\\x9b.h5: not listed"));
    CHECK(has(problems[2], "gone\\x1b[2J.h5: listed in"));
    // One --case file against its folder's manifest.
    const auto one = manifest_problem_for_file(dir / "changed\x1b]0;t\x07.h5");
    REQUIRE(one);
    CHECK(has(*one, "changed\\x1b]0;t\\x07.h5: SHA-256 differs"));
    CHECK_FALSE(has(*one, "\x1b"));
}

TEST_CASE("a MANIFEST.sha256 that is a FIFO or a folder is refused at once, never waited on") {
    // A FIFO hung every run over its suite (opening it waited for a writer); a folder read as an
    // empty manifest, and every file was "not listed".
    TempDir dir;
    write_golden(dir / "ok.h5", small_case());
    REQUIRE(::mkfifo((dir / kManifestName).c_str(), 0644) == 0);
    for (int kind = 0; kind < 2; ++kind) {
        CAPTURE(kind);
        try {
            manifest_problems(dir.path());
            FAIL("expected InputError");
        } catch (const InputError& e) {
            CHECK(has(e.what(), "MANIFEST.sha256 is not a regular file"));
        }
        try {
            manifest_problem_for_file(dir / "ok.h5");
            FAIL("expected InputError");
        } catch (const InputError& e) {
            CHECK(has(e.what(), "is not a regular file"));
        }
        fs::remove(dir / kManifestName);
        fs::create_directory(dir / kManifestName);
    }
    // Larger than any manifest: refused before it is read.
    fs::remove(dir / kManifestName);
    {
        std::ofstream big(dir / kManifestName);
        big.seekp((std::streamoff{64} << 20) + 1);
        big.put('\n');
    }
    try {
        manifest_problems(dir.path());
        FAIL("expected InputError");
    } catch (const InputError& e) {
        CHECK(has(e.what(), "a manifest is at most 64 MiB"));
    }
}
