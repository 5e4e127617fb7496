// Golden files (spec/golden-format.md): atomic writing, what the writer refuses, files written by
// hand with h5py, the h5py checker, and that failures print nothing.
#include <doctest/doctest.h>
#include <sys/stat.h>

#include <algorithm>
#include <thread>
#include <vector>

#include "golden_test_support.hpp"
#include "moe/golden/result_file.hpp"

using namespace moe::test::golden_support;

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

    // A FIFO at the destination (a device node alike: -o /dev/null) is written into, byte for byte
    // what a regular file gets, and stays a FIFO; no temporary file is left.
    REQUIRE(::mkfifo((dir / "f.h5").c_str(), 0600) == 0);
    std::string through;
    std::thread reader([&] { through = read_bytes(dir / "f.h5"); });
    write_golden(dir / "f.h5", small_case());
    reader.join();
    CHECK(fs::is_fifo(dir / "f.h5"));
    CHECK(through.compare(0, 8, "\x89HDF\r\n\x1a\n") == 0);
    write_text(dir / "through.h5", through);
    CHECK(read_golden(dir / "through.h5").problem.name == small_case().problem.name);
    auto entries = dir_entries(dir.path());
    std::sort(entries.begin(), entries.end());
    CHECK(entries == std::vector<std::string>{"c.h5", "f.h5", "through.h5"});
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

TEST_CASE("a result file keeps the precision it declares, the dequantisation type included") {
    // run --write-results once dropped dequant_type: check then judged a bf16-dequantising
    // backend's results with the f32 default, a tighter bound than run had used.
    TempDir dir;
    ResultFile r;
    r.case_name = "some_case";
    r.golden_sha256 = std::string(64, 'a');
    r.output = Tensor(DType::f32, {2, 3});
    for (const Precision p : {Precision(DType::f32, DType::bf16, DType::bf16), Precision(DType::f32, DType::f32)}) {
        r.precision = p;
        const auto file = dir.path() / "r.h5";
        write_result(file, r);
        const ResultFile back = read_result(file);
        REQUIRE(back.precision.has_value());
        CHECK(back.precision->compute == p.compute);
        CHECK(back.precision->storage == p.storage);
        CHECK(back.precision->dequant == p.dequant);
    }
}
