// Golden files (spec/golden-format.md): round trips for every element type, determinism, and what h5py
// sees of the written data.
#include <doctest/doctest.h>

#include <chrono>
#include <thread>

#include "golden_test_support.hpp"

using namespace moe::test::golden_support;

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
