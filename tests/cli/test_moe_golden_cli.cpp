// moe-golden end to end: bad input of every kind ends in exit 2 with a message naming what is
// wrong, never a crash; good input is completed, generated and verified.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>

#include "moe/golden/golden_file.hpp"
#include "bundled_suite.hpp"
#include "run_command.hpp"
#include "temp_dir.hpp"
#include "small_cases.hpp"

using namespace moe;
using moe::test::kBundledSuite;
using moe::test::bundled_case;
using moe::test::moe_golden;
using moe::test::run_command;
using moe::test::run_python;
using moe::test::small_problem;
namespace fs = std::filesystem;
using moe::test::TempDir;

namespace {


const auto G2 = ExpertType::gemm2_bias_swiglu_clamp;
const auto G3 = ExpertType::gemm3_swiglu;

// Writes `p` as an inputs-only golden file and runs `moe-golden complete` on it.
test::CommandResult complete(const TempDir& dir, const Problem& p) {
    golden::GoldenCase c;
    c.problem = p;
    c.problem.name = "bad";
    const fs::path in = dir.path() / "in.h5", out = dir.path() / "out.h5";
    fs::remove(out);
    golden::write_golden(in, c);
    auto r = run_command(moe_golden() + " complete " + in.string() + " -o " + out.string());
    CHECK_MESSAGE(!fs::exists(out), "a rejected problem must not leave an output file");
    return r;
}

void expect_rejected(const TempDir& dir, const Problem& p, const std::string& message) {
    const auto r = complete(dir, p);
    CAPTURE(r.output);
    CHECK(r.exit_code == 2);
    CHECK(r.output.find(message) != std::string::npos);
    // The file is named, as inspect and run name it.
    CHECK(r.output.find("golden file '" + (dir.path() / "in.h5").string() + "': the problem is rejected: ") !=
          std::string::npos);
}

// moe-golden with `args` exits 2 saying `message`.
void expect_refused(const std::string& args, const std::string& message) {
    const auto r = run_command(moe_golden() + args);
    CAPTURE(args);
    CAPTURE(r.output);
    CHECK(r.exit_code == 2);
    CHECK(r.output.find(message) != std::string::npos);
}

}  // namespace

TEST_CASE("complete: every rejected-input rule exits 2 with its message") {
    TempDir dir;
    Problem p = small_problem(G2, Convention::openvino);
    p.inputs[kTopkIndices].set_index(3, 4);
    expect_rejected(dir, p, "router_topk_output_indices: element [token 1, slot 1] = 4 is outside [0, E = 4)");
    p.inputs[kTopkIndices].set_index(3, -2);
    expect_rejected(dir, p, "= -2 is outside");

    p = small_problem(G2, Convention::openvino);
    p.inputs[kTopkIndices].set_index(1, p.input(kTopkIndices).get_index(0));
    expect_rejected(dir, p, "token 0 selects expert");

    p = small_problem(G2, Convention::spec);
    const auto& idx = p.input(kTopkIndices);
    std::size_t unused = 0;
    while (unused == static_cast<std::size_t>(idx.get_index(0)) || unused == static_cast<std::size_t>(idx.get_index(1)))
        ++unused;
    p.inputs[kRoutingWeights].set(unused * 5, 0.5);
    expect_rejected(dir, p, "routing_weights: dense weight for expert " + std::to_string(unused) + ", token 0 is 0.5");

    p = small_problem(G2, Convention::openvino);
    p.inputs[kTopkIndices] = Tensor(DType::i64, {5, 0});
    p.inputs[kRoutingWeights] = Tensor(DType::f32, {5, 0});
    expect_rejected(dir, p, "top-k = 0");

    p = small_problem(G3, Convention::openvino);
    p.inputs[kWeight2] = Tensor(DType::f32, {3, 12, 6});
    expect_rejected(dir, p, "weight_2: has 3 experts");
    p = small_problem(G3, Convention::openvino);
    p.inputs[kWeight1] = Tensor(DType::f32, {4, 6, 13});
    expect_rejected(dir, p, "weight_1: expected shape [4, 6, 12]");

    p = small_problem(G2, Convention::openvino);
    p.inputs[kHiddenStates] = Tensor(DType::f32, {1, 1, 5, 12});
    expect_rejected(dir, p, "hidden_states: expected rank 2 [T, H] or rank 3 [B, S, H]");

    p = small_problem(G2, Convention::openvino);
    p.inputs.erase(kWeight1);
    expect_rejected(dir, p, "required input weight_1 is missing");

    p = small_problem(G2, Convention::openvino, 1, 12, 6, 2, 2);
    p.inputs[kTopkIndices] = Tensor::from_f64(DType::i32, {1, 3}, {0, 1, 0});
    p.inputs[kRoutingWeights] = Tensor(DType::f32, {1, 3});
    expect_rejected(dir, p, "top-k = 3 (last dim of [1, 3]) must be in [1, E = 2]");

    p = small_problem(G2, Convention::openvino);
    p.inputs[kWeight0] = Tensor(DType::f32, {4, 12, 11});
    expect_rejected(dir, p, "weight_0: shape [4, 12, 11] has input size 11");

    p = small_problem(G2, Convention::openvino);
    p.inputs[kWeight2] = Tensor(DType::f32, {4, 12, 6});
    expect_rejected(dir, p, "weight_2 is given but GEMM2_BIAS_SWIGLU_CLAMP has two GEMMs");

    p = small_problem(G3, Convention::openvino);
    p.inputs[kBias1] = Tensor(DType::f32, {4, 12});
    expect_rejected(dir, p, "bias_1 is given but GEMM3_SWIGLU takes no biases");

    p = small_problem(G2, Convention::openvino);
    p.inputs[kWeight1] = Tensor(DType::f16, {4, 12, 6});
    expect_rejected(dir, p, "weight_1: element type f16 differs from hidden_states' f32");

    p = small_problem(G2, Convention::openvino);
    p.inputs[kRoutingWeights] = Tensor(DType::f32, {5, 3});
    expect_rejected(dir, p, "compact routing must have the shape of router_topk_output_indices [5, 2]");

    p = small_problem(G2, Convention::openvino);
    p.inputs[kBias0] = Tensor(DType::f32, {4, 2, 12});
    expect_rejected(dir, p, "bias_0: expected shape [4, 1, 12] or [4, 12]");

    // Attributes out of their domain cannot be written by our writer; a user's h5py can.
    golden::GoldenCase c;
    c.problem = small_problem(G2, Convention::openvino);
    const fs::path in = dir.path() / "attr.h5";
    golden::write_golden(in, c);
    REQUIRE(run_command("/usr/bin/python3 -c \"import h5py; f = h5py.File('" + in.string() +
                        "', 'r+'); f.attrs['gate_idx'] = 5\"").exit_code == 0);
    auto r = run_command(moe_golden() + " complete " + in.string());
    CHECK(r.exit_code == 2);
    CHECK(r.output.find("gate_idx = 5 (expected 0 or 1)") != std::string::npos);

    // A negative clamp limit (openvino: expert_alpha), and a non-finite swish beta.
    golden::write_golden(in, c);
    REQUIRE(run_python("import h5py\nf = h5py.File('" + in.string() + "', 'r+')\nf.attrs['expert_alpha'] = -1.0\n"
                       "del f.attrs['clamp_limit']\n").exit_code == 0);
    r = run_command(moe_golden() + " complete " + in.string());
    CHECK(r.exit_code == 2);
    CHECK(r.output.find("expert_alpha (clamp limit) must be >= 0") != std::string::npos);
    golden::write_golden(in, c);
    REQUIRE(run_python("import h5py\nf = h5py.File('" + in.string() + "', 'r+')\nf.attrs['expert_beta'] = float('inf')\n"
                       "del f.attrs['swish_beta']\n").exit_code == 0);
    r = run_command(moe_golden() + " complete " + in.string());
    CHECK(r.exit_code == 2);
    CHECK(r.output.find("expert_beta (swish beta) must be finite") != std::string::npos);
}

TEST_CASE("flag values out of range exit 2 saying what is wanted") {
    TempDir dir;
    const std::string catalog = std::string(MOE_SOURCE_DIR) + "/conformance/catalog/bundled.json";
    const std::pair<std::string, std::string> refused[] = {
        {" generate --catalog " + catalog + " --out " + dir.path().string() + " --threads 0",
         "--threads: 0: expected more than 0"},
        {" inspect " + catalog + " --max-memory 0", "--max-memory: 0: expected more than 0"},
        {" complete " + catalog + " --max-memory -5M", "--max-memory"},
        {" generate --catalog " + catalog + " --out " + dir.path().string() + " --bogus", "--bogus"},
        // Output paths, checked before anything is read or generated.
        {" generate --catalog " + catalog + " --out " + catalog + "/sub", catalog + " is not a folder"},
        {" complete " + catalog + " -o " + dir.path().string() + "/no/such/x.h5",
         "folder " + dir.path().string() + "/no/such does not exist"},
    };
    for (const auto& [args, message] : refused) expect_refused(args, message);
    CHECK(fs::is_empty(dir.path()));  // nothing generated
}

namespace {

// A catalogue of cases, each a small valid GEMM3 case unless told otherwise: `name` and `seed`
// as JSON text, `more` further members.
std::string catalog_case(const std::string& name, const std::string& shape = R"({"tokens": 4, "hidden": 8, "inter": 4, "experts": 4, "topk": 2})",
                         const std::string& seed = "1", const std::string& more = "") {
    return R"({"name": )" + name + R"(, "expert_type": "GEMM3_SWIGLU", "convention": "openvino", "seed": )" + seed +
           R"(, "shape": )" + shape + more + "}";
}
std::string catalog_of(const std::string& cases) {
    return R"({"format": "moe-catalog", "format_version": 1, "cases": [)" + cases + "]}";
}

struct Generated {
    test::CommandResult result;
    fs::path catalog, out;
};

// Writes `text` as DIR/cat.json and runs generate on it into DIR/out.
Generated generate_from(const TempDir& dir, const std::string& text, const std::string& flags = "") {
    Generated g{{}, dir.path() / "cat.json", dir.path() / "out"};
    std::ofstream(g.catalog) << text;
    g.result = run_command(moe_golden() + " generate --catalog " + g.catalog.string() + " --out " + g.out.string() + flags);
    return g;
}

}  // namespace

TEST_CASE("generate: a case needing more memory than --max-memory is refused before any case is generated") {
    TempDir dir;
    // 10^8 tokens of H = 64: about 1.4 GiB of hidden states alone, more in f64 outputs. Used to
    // end in "internal error: std::bad_alloc" (exit 3) after the cases before it were written.
    const std::string small = catalog_case(R"("small")"),
                      big = catalog_case(R"("big")", R"({"tokens": 100000000, "hidden": 64, "inter": 32, "experts": 8, "topk": 2})");
    auto g = generate_from(dir, catalog_of(small + ", " + big), " --max-memory 8G");
    CAPTURE(g.result.output);
    CHECK(g.result.exit_code == 2);
    CHECK(g.result.output.find("catalog " + g.catalog.string() + ", case big (T=100000000 H=64 I=32 E=8 K=2, f32): "
                               "generating it needs about ") != std::string::npos);
    CHECK(g.result.output.find("more than the memory budget of 8.0 GiB; on a machine with the memory, give --max-memory ") !=
          std::string::npos);
    CHECK_FALSE(fs::exists(g.out));  // not even the small case before it

    // The default budget (at most 8 GiB) refuses it too, and --max-memory moves the limit both ways.
    g = generate_from(dir, catalog_of(big));
    CHECK(g.result.exit_code == 2);
    CHECK(g.result.output.find("case big (T=100000000") != std::string::npos);
    g = generate_from(dir, catalog_of(small), " --max-memory 1K");
    CHECK(g.result.exit_code == 2);
    CHECK(g.result.output.find("case small (T=4 H=8 I=4 E=4 K=2, f32): generating it needs about ") != std::string::npos);
    CHECK(g.result.output.find("more than the memory budget of 1.0 KiB") != std::string::npos);
    g = generate_from(dir, catalog_of(small), " --max-memory 1M --stages");
    CHECK(g.result.exit_code == 0);
    CHECK(fs::exists(g.out / "small.h5"));
}

TEST_CASE("verify: a catalogue case needing more memory than --max-memory is refused before any file is read") {
    // verify regenerates every case: a hostile catalogue could make it allocate without bound.
    TempDir dir;
    const std::string small = catalog_case(R"("small")"),
                      big = catalog_case(R"("big")", R"({"tokens": 100000000, "hidden": 64, "inter": 32, "experts": 8, "topk": 2})");
    auto g = generate_from(dir, catalog_of(small), " --manifest --stages");
    REQUIRE(g.result.exit_code == 0);
    std::ofstream(g.catalog) << catalog_of(small + ", " + big);
    const auto verify = [&](const std::string& flags) {
        return run_command(moe_golden() + " verify --catalog " + g.catalog.string() + " --dir " + g.out.string() + flags);
    };
    auto v = verify(" --max-memory 8G");
    CAPTURE(v.output);
    CHECK(v.exit_code == 2);
    CHECK(v.output.find("case big (T=100000000 H=64 I=32 E=8 K=2, f32): generating it needs about ") != std::string::npos);
    CHECK_FALSE(v.output.find("[1] small") != std::string::npos);  // refused up front
    // Within the budget: the file is read and regenerated; a budget too small for its stages
    // (checked once the file says it has them) is refused naming it.
    std::ofstream(g.catalog) << catalog_of(small);
    v = verify(" --max-memory 8G");
    CHECK(v.exit_code == 0);
    CHECK(v.output.find("all identical") != std::string::npos);
    v = verify(" --max-memory 1K");
    CHECK(v.exit_code == 2);
    CHECK(v.output.find("more than the memory budget of 1.0 KiB") != std::string::npos);
}

TEST_CASE("generate: a shape whose element count overflows is refused by the memory check, whatever the budget") {
    // T x H, and B x S, of 2^64 wrap to 0 in 64-bit arithmetic: the need is computed in double.
    TempDir dir;
    auto g = generate_from(dir, catalog_of(catalog_case(
                                    R"("huge")", R"({"tokens": 4294967296, "hidden": 4294967296, "inter": 4, "experts": 2, "topk": 1})")),
                           " --max-memory 15E");
    CAPTURE(g.result.output);
    CHECK(g.result.exit_code == 2);
    CHECK(g.result.output.find("case huge (T=4294967296 H=4294967296 I=4 E=2 K=1, f32): generating it needs about ") !=
          std::string::npos);
    CHECK(g.result.output.find("GiB; no --max-memory admits it") != std::string::npos);
    g = generate_from(dir, catalog_of(catalog_case(
                               R"("bs")", R"({"batch": 4294967296, "seq": 4294967296, "hidden": 8, "inter": 4, "experts": 2, "topk": 1})")),
                      " --max-memory 15E");
    CHECK(g.result.exit_code == 2);
    CHECK(g.result.output.find("case bs (B=4294967296 S=4294967296 H=8 I=4 E=2 K=1, f32): generating it needs about ") !=
          std::string::npos);
}

TEST_CASE("generate: integer keys take JSON integers only: no negative, fractional or string value is cast") {
    TempDir dir;
    const std::string shape = R"({"tokens": 4, "hidden": 8, "inter": 4, "experts": 4, "topk": 2})";
    auto with_shape = [](const std::string& key, const std::string& value) {
        std::string s = R"({"tokens": 4, "hidden": 8, "inter": 4, "experts": 4, "topk": 2})";
        const auto at = s.find("\"" + key + "\": ") + key.size() + 4;
        return s.replace(at, s.find_first_of(",}", at) - at, value);
    };
    // Before: -4 became 2^64 - 4 ("tensor: shape [18446744073709551612, 8]"), 4.9 became 4, a
    // seed of -1 became 2^64 - 1.
    const std::pair<std::string, std::string> refused[] = {
        {catalog_case(R"("neg")", with_shape("tokens", "-4")), "case neg, key shape.tokens: -4 is not a non-negative integer"},
        {catalog_case(R"("frac")", with_shape("tokens", "4.9")), "case frac, key shape.tokens: 4.9 is not a non-negative integer"},
        {catalog_case(R"("whole_float")", with_shape("hidden", "8.0")), "key shape.hidden: 8.0 is not a non-negative integer"},
        {catalog_case(R"("text")", with_shape("experts", "\"4\"")), R"(key shape.experts: "4" is not a non-negative integer)"},
        {catalog_case(R"("negk")", with_shape("topk", "-1")), "key shape.topk: -1 is not a non-negative integer"},
        {catalog_case(R"("negseed")", shape, "-1"), "case negseed, key seed: -1 is not a non-negative integer"},
        {catalog_case(R"("bigseed")", shape, "18446744073709551616"), "key seed: 1.8446744073709552e+19 is not a non-negative integer"},
        {catalog_case(R"("excl")", shape, "1", R"(, "routing": {"exclude": [1, -1]})"),
         "key routing.exclude[1]: -1 is not a non-negative integer"},
        {catalog_case(R"("ovr")", shape, "1", R"(, "overrides": [{"input": "hidden_states", "index": [0, 1.5], "value": 1}])"),
         "key overrides.index[1]: 1.5 is not a non-negative integer"},
        {catalog_case(R"("bits")", shape, "1", R"(, "fill": {"hidden_states": {"kind": "dyadic", "range": 4, "bits": 2.5}})"),
         "key fill.hidden_states.bits: 2.5 is not an integer in [-2147483648, 2147483647]"},
        {catalog_case(R"("wide_bits")", shape, "1", R"(, "fill": {"hidden_states": {"kind": "dyadic", "range": 4, "bits": 4294967298}})"),
         "key fill.hidden_states.bits: 4294967298 is not an integer in [-2147483648, 2147483647]"},
        {catalog_case(R"("gate")", shape, "1", R"(, "attributes": {"gate_idx": 0.5})"),
         "key attributes.gate_idx: 0.5 is not an integer"},
        {catalog_case(R"("group")", shape, "1", R"(, "weight_dtype": "u4", "group_size": -4)"),
         "key group_size: -4 is not a non-negative integer"},
    };
    for (const auto& [text, message] : refused) {
        const auto g = generate_from(dir, catalog_of(text));
        CAPTURE(text);
        CAPTURE(g.result.output);
        CHECK(g.result.exit_code == 2);
        CHECK(g.result.output.find("catalog " + g.catalog.string() + ", case ") != std::string::npos);
        CHECK(g.result.output.find(message) != std::string::npos);
        CHECK_FALSE(fs::exists(g.out));
    }
    auto g = generate_from(dir, R"({"format": "moe-catalog", "format_version": 1.5, "cases": []})");
    CHECK(g.result.exit_code == 2);
    CHECK(g.result.output.find("key format_version: 1.5 is not an integer") != std::string::npos);

    // The largest seed is an integer like any other.
    g = generate_from(dir, catalog_of(catalog_case(R"("maxseed")", shape, "18446744073709551615")));
    CAPTURE(g.result.output);
    CHECK(g.result.exit_code == 0);
    CHECK(golden::read_golden(g.out / "maxseed.h5").seed == 18446744073709551615ull);
}

TEST_CASE("generate: a case name must be a plain file name inside --out") {
    TempDir dir;
    // Before: "../x" and an absolute name wrote outside --out, "" wrote out/.h5.
    const std::string outside = (dir.path() / "abs_escape").string();
    const std::pair<std::string, std::string> refused[] = {
        {R"("../v_escape")", "it contains '/' or '\\'"},
        {"\"" + outside + "\"", "it contains '/' or '\\'"},
        {R"("a\\b")", "it contains '/' or '\\'"},
        {R"("")", "it is empty"},
        {R"(".")", "it starts with '.'"},
        {R"("..")", "it starts with '.'"},
        {R"(".hidden")", "it starts with '.'"},
        {R"("bell\u0007")", "it contains a control character"},
        {R"("del\u007f")", "it contains a control character"},
    };
    for (const auto& [name, why] : refused) {
        const auto g = generate_from(dir, catalog_of(catalog_case(R"("fine")") + ", " + catalog_case(name)));
        CAPTURE(name);
        CAPTURE(g.result.output);
        CHECK(g.result.exit_code == 2);
        CHECK(g.result.output.find("catalog " + g.catalog.string() + ", case cases[1], key name: ") != std::string::npos);
        CHECK(g.result.output.find(" cannot be a case name: " + why) != std::string::npos);
        CHECK_FALSE(fs::exists(g.out));
        CHECK_FALSE(fs::exists(dir.path() / "v_escape.h5"));
        CHECK_FALSE(fs::exists(outside + ".h5"));
    }
    // An expansion suffix is part of the name, and checked with it.
    const auto g = generate_from(
        dir, catalog_of(catalog_case(R"("base")", R"({"tokens": 4, "hidden": 8, "inter": 4, "experts": 4, "topk": 2})", "1",
                                     R"(, "expand": {"seed": [{"suffix": "x/../../up", "value": 2}]})")));
    CHECK(g.result.exit_code == 2);
    CHECK(g.result.output.find(R"(case cases[0], key name: "base_x/../../up" cannot be a case name)") != std::string::npos);
}

TEST_CASE("an unknown subcommand is named") {
    const auto r = run_command(moe_golden() + " frobnicate");
    CAPTURE(r.output);
    CHECK(r.exit_code == 2);
    CHECK(r.output.find("moe-golden: unknown command 'frobnicate' (commands: generate, verify, complete, inspect") !=
          std::string::npos);
}

TEST_CASE("complete: malformed files exit 2 naming the file and what is wrong") {
    TempDir dir;
    const fs::path text = dir.path() / "not_hdf5.h5";
    std::ofstream(text) << "hello";
    auto r = run_command(moe_golden() + " complete " + text.string());
    CHECK(r.exit_code == 2);
    CHECK(r.output.find("not_hdf5.h5") != std::string::npos);

    r = run_command(moe_golden() + " complete " + (dir.path() / "missing.h5").string());
    CHECK(r.exit_code == 2);
    CHECK(r.output.find("missing.h5") != std::string::npos);

    // Unknown expert_type and convention strings, written by h5py as a user would.
    const fs::path odd = dir.path() / "odd.h5";
    const std::string py = "/usr/bin/python3 -c \"import h5py, numpy as np\n"
                           "f = h5py.File('" + odd.string() + "', 'w')\n"
                           "f.attrs['format'] = 'moe-golden'; f.attrs['format_version'] = 1; f.attrs['case'] = 'odd'\n"
                           "f.attrs['expert_type'] = 'GEMM2_BIAS_GELU'; f.attrs['convention'] = 'openvino'\n"
                           "f.create_group('inputs')\"";
    REQUIRE(run_command(py).exit_code == 0);
    r = run_command(moe_golden() + " complete " + odd.string());
    CHECK(r.exit_code == 2);
    CHECK(r.output.find("GEMM2_BIAS_GELU") != std::string::npos);
}

TEST_CASE("complete, inspect: a good inputs-only file gets its output") {
    TempDir dir;
    golden::GoldenCase c;
    c.problem = small_problem(G3, Convention::spec);
    c.problem.name = "mine";
    const fs::path in = dir.path() / "mine.h5";
    golden::write_golden(in, c);
    auto r = run_command(moe_golden() + " complete " + in.string() + " --stages");
    CAPTURE(r.output);
    REQUIRE(r.exit_code == 0);
    const auto done = golden::read_golden(in);
    CHECK(done.outputs.at("output").shape() == Shape{5, 12});
    CHECK(done.stages.size() == 4);
    r = run_command(moe_golden() + " inspect " + in.string());
    CHECK(r.exit_code == 0);
    CHECK(r.output.find("/outputs/output") != std::string::npos);
    CHECK(r.output.find("Fletcher32 verified") != std::string::npos);
}

TEST_CASE("generate: a write that fails (file-size limit) is exit 2, no crash, no file left") {
    TempDir dir;
    const std::string cat = std::string(MOE_SOURCE_DIR) + "/conformance/catalog/bundled.json";
    const fs::path out = dir.path() / "out";
    fs::create_directories(out);
    // SIGXFSZ ignored: the writes fail with EFBIG, as on a full disk, and the file's close fails.
    const auto r = run_command("bash -c \"trap '' XFSZ; ulimit -f 20; exec " + moe_golden() + " generate --catalog " +
                               cat + " --out " + out.string() + " --filter gemm2_gptoss_openvino_f32\"");
    CHECK(r.exit_code == 2);
    CHECK(r.output.find("cannot finish writing") != std::string::npos);
    CHECK(fs::is_empty(out));
}

TEST_CASE("generate: catalogue errors name the file, the case and the key") {
    TempDir dir;
    const fs::path cat = dir.path() / "cat.json";
    std::ofstream(cat) << R"({"format": "moe-catalog", "format_version": 1, "cases": [
        {"name": "c1", "expert_type": "GEMM3_SWIGLU", "convention": "openvino", "seed": 1,
         "shape": {"tokens": 2, "hidden": 8, "inter": 4, "experts": 2, "topk": 1}, "dtpye": "f16"}]})";
    auto r = run_command(moe_golden() + " generate --catalog " + cat.string() + " --out " + (dir.path() / "out").string());
    CHECK(r.exit_code == 2);
    CHECK(r.output.find("case c1, key dtpye: unknown key") != std::string::npos);

    std::ofstream(cat) << R"({"format": "moe-catalog", "format_version": 1, "cases": [
        {"name": "c1", "expert_type": "GEMM3_SWIGLU", "convention": "openvino", "seed": 1,
         "shape": {"tokens": 2, "hidden": 8, "inter": 4, "experts": 2, "topk": 3}}]})";
    r = run_command(moe_golden() + " generate --catalog " + cat.string() + " --out " + (dir.path() / "out").string());
    CHECK(r.exit_code == 2);
    CHECK(r.output.find("c1") != std::string::npos);

    r = run_command(moe_golden() + " generate --catalog " + cat.string());
    CHECK(r.exit_code == 2);  // usage: --out is required
    CHECK(r.output.find("--out") != std::string::npos);

    // JSON that parses but overflows a double, and a top-level key of the wrong type: malformed
    // catalogues (exit 2, the file named), not internal errors.
    for (const char* text : {R"({"format": "moe-catalog", "format_version": 1e400, "cases": []})",
                             R"({"format": 5, "format_version": 1, "cases": []})"}) {
        CAPTURE(text);
        std::ofstream(cat) << text;
        r = run_command(moe_golden() + " generate --catalog " + cat.string() + " --out " + (dir.path() / "out").string());
        CHECK(r.exit_code == 2);
        CHECK(r.output.find("catalog " + cat.string()) != std::string::npos);
    }
}

TEST_CASE("generate then verify; verify notices a changed file") {
    TempDir dir;
    const std::string cat = std::string(MOE_SOURCE_DIR) + "/conformance/catalog/bundled.json";
    const std::string out = (dir.path() / "g").string();
    auto r = run_command(moe_golden() + " generate --catalog " + cat + " --out " + out +
                         " --filter 'exact_gemm3*' --filter gemm2_nobias_spec --stages --manifest");
    CAPTURE(r.output);
    REQUIRE(r.exit_code == 0);
    CHECK(fs::exists(fs::path(out) / "MANIFEST.sha256"));
    CHECK(fs::exists(fs::path(out) / "exact_gemm3_spec_f16.h5"));
    // Regenerate and write one case with another seed: its data and its digest change.
    r = run_command(moe_golden() + " verify --catalog " + cat + " --dir " + out + " --tier quick");
    CAPTURE(r.output);
    CHECK(r.exit_code == 1);  // the catalogue has many cases this folder lacks
    CHECK(r.output.find("gemm2_nobias_openvino.h5 does not exist") != std::string::npos);
    CHECK(r.output.find("FAIL gemm2_nobias_spec") == std::string::npos);
}

TEST_CASE("complete: a file that claims `exact` must be exact by construction") {
    // exact = 1 gives every backend a tolerance of zero: complete must not pass on a false claim.
    TempDir dir;
    golden::GoldenCase c;
    c.problem = small_problem(G2, Convention::openvino);  // random values: not exact
    c.exact = true;
    const fs::path in = dir.path() / "claims_exact.h5", out = dir.path() / "out.h5";
    golden::write_golden(in, c);
    const auto r = run_command(moe_golden() + " complete " + in.string() + " -o " + out.string());
    CAPTURE(r.output);
    CHECK(r.exit_code == 2);
    CHECK(r.output.find("root attribute 'exact' is 1, but the case is not exact by construction (not exact: ") !=
          std::string::npos);
    CHECK_FALSE(fs::exists(out));
    // The same case without the claim is completed.
    c.exact = false;
    golden::write_golden(in, c);
    CHECK(run_command(moe_golden() + " complete " + in.string() + " -o " + out.string()).exit_code == 0);
}

TEST_CASE("generate: a clamp limit of \"inf\" makes a file whose limit is +Inf; bad op parameters name their key") {
    // Before: "inf" was refused with "case clamp_Linf: wrong type: [json.exception.type_error.302] ...".
    TempDir dir;
    const std::string shape = R"("shape": {"tokens": 4, "hidden": 8, "inter": 4, "experts": 4, "topk": 2})";
    auto gemm2 = [&](const std::string& name, const std::string& convention, const std::string& op) {
        return R"({"name": ")" + name + R"(", "expert_type": "GEMM2_BIAS_SWIGLU_CLAMP", "convention": ")" + convention +
               R"(", "seed": 3, )" + shape + ", " + op + "}";
    };
    auto g = generate_from(dir, catalog_of(gemm2("clamp_Linf", "openvino", R"("params": {"swish_beta": 1.702, "clamp_limit": "inf"})") +
                                           ", " + gemm2("spec_Linf", "spec", R"("attributes": {"expert_beta": "inf"})")));
    CAPTURE(g.result.output);
    REQUIRE(g.result.exit_code == 0);
    const auto openvino = golden::read_golden(g.out / "clamp_Linf.h5");
    CHECK(openvino.problem.attributes.expert_alpha == std::numeric_limits<double>::infinity());
    CHECK(openvino.problem.attributes.expert_beta == 1.702);
    CHECK(golden::read_golden(g.out / "spec_Linf.h5").problem.attributes.expert_beta ==
          std::numeric_limits<double>::infinity());
    // As stored: the attributes and the resolved clamp_limit, read without our code.
    const auto py = run_python("import h5py\nf = h5py.File('" + (g.out / "clamp_Linf.h5").string() +
                               "', 'r')\nprint(repr(f.attrs['expert_alpha']), repr(f.attrs['clamp_limit']))\n");
    CAPTURE(py.output);
    CHECK(py.exit_code == 0);
    CHECK(py.output.find("inf") != std::string::npos);
    CHECK(py.output.find("-inf") == std::string::npos);
    const auto shown = run_command(moe_golden() + " inspect " + (g.out / "clamp_Linf.h5").string());
    CAPTURE(shown.output);
    CHECK(shown.exit_code == 0);
    CHECK(shown.output.find("resolved: swish_beta 1.702, clamp_limit inf, gate_lane 0") != std::string::npos);

    fs::remove_all(g.out);
    const std::pair<std::string, std::string> refused[] = {
        {gemm2("bad_type", "openvino", R"("params": {"clamp_limit": "infinity"})"),
         R"(case bad_type, key params.clamp_limit: "infinity" is not a number or "nan", "-nan", "inf", "-inf")"},
        {gemm2("nan_limit", "openvino", R"("params": {"clamp_limit": "nan"})"),
         R"(case nan_limit, key params.clamp_limit: the clamp limit must be >= 0 or "inf" (no clamping), got "nan")"},
        {gemm2("inf_beta", "openvino", R"("params": {"swish_beta": "inf"})"),
         R"(case inf_beta, key params.swish_beta: swish beta must be finite, got "inf")"},
        {gemm2("attr_inf_beta", "spec", R"("attributes": {"expert_alpha": "inf"})"),
         "case attr_inf_beta, key attributes.expert_alpha: attribute expert_alpha (swish beta) must be finite"},
        {gemm2("attr_list", "openvino", R"("attributes": {"expert_beta": [1]})"),
         "case attr_list, key attributes.expert_beta: [1] is not a number"},
        {gemm2("weights_type", "openvino", R"("routing": {"weights": 1})"),
         "case weights_type, key routing.weights: 1 is not a string"},
    };
    for (const auto& [text, message] : refused) {
        g = generate_from(dir, catalog_of(text));
        CAPTURE(text);
        CAPTURE(g.result.output);
        CHECK(g.result.exit_code == 2);
        CHECK(g.result.output.find("catalog " + g.catalog.string() + ", " + message) != std::string::npos);
        CHECK(g.result.output.find("json.exception") == std::string::npos);
        CHECK_FALSE(fs::exists(g.out));
    }
}

TEST_CASE("verify: a catalogue that selects no case at --tier is exit 2, as for generate, not \"all identical\"") {
    // It printed "verify: 0 case(s) regenerated, 1 manifest entries; all identical", exit 0: a CI
    // gate with a wrong catalogue or tier passed without checking a file.
    TempDir dir;
    const auto g = generate_from(dir, catalog_of(catalog_case(R"("one")")), " --manifest");
    REQUIRE(g.result.exit_code == 0);
    const fs::path empty = dir.path() / "empty.json", full = dir.path() / "full.json";
    std::ofstream(empty) << catalog_of("");
    std::ofstream(full) << catalog_of(catalog_case(R"("one")", R"({"tokens": 4, "hidden": 8, "inter": 4, "experts": 4, "topk": 2})",
                                                   "1", R"(, "tier": "full")"));
    for (const fs::path& catalog : {empty, full}) {
        const auto r = run_command(moe_golden() + " verify --catalog " + catalog.string() + " --dir " + g.out.string());
        CAPTURE(r.output);
        CHECK(r.exit_code == 2);
        CHECK(r.output.find("no case of " + catalog.string() + " is at tier ci or below: nothing to verify") !=
              std::string::npos);
        CHECK(r.output.find("all identical") == std::string::npos);
    }
    // The same folder against its own catalogue still passes.
    const auto ok = run_command(moe_golden() + " verify --catalog " + g.catalog.string() + " --dir " + g.out.string());
    CAPTURE(ok.output);
    CHECK(ok.exit_code == 0);
}

TEST_CASE("verify without --catalog uses the bundled catalogue; --filter regenerates only the cases it names") {
    // --catalog was required, and the catalogue was not installed: an installed moe-golden could not
    // verify the installed suite (check_downstream.sh runs the installed one). Here, the build
    // tree's binary: the source tree's catalogue, named in the summary.
    const std::string suite = kBundledSuite;
    const std::string catalog = std::string(MOE_SOURCE_DIR) + "/conformance/catalog/bundled.json";
    auto r = run_command(moe_golden() + " verify --dir " + suite + " --filter topk_one --filter 'exact_gemm3*'");
    CAPTURE(r.output);
    CHECK(r.exit_code == 0);
    CHECK(r.output.find("] topk_one\n") != std::string::npos);
    CHECK(r.output.find("gemm2_") == std::string::npos);  // nothing else regenerated
    CHECK(r.output.find("note:") == std::string::npos);   // a case left out is no stray file
    CHECK(r.output.find(" case(s) of " + catalog + " regenerated, ") != std::string::npos);
    CHECK(r.output.find("all identical") != std::string::npos);
    r = run_command(moe_golden() + " verify --dir " + suite + " --filter 'no_such_*'");
    CHECK(r.exit_code == 2);
    CHECK(r.output.find("no case of " + catalog + " is at tier ci or below and matches --filter: nothing to verify") !=
          std::string::npos);
}

TEST_CASE("--threads in decimal digits, at most moe::cli::max_threads(); --filter '' refused") {
    TempDir dir;
    const std::string catalog = std::string(MOE_SOURCE_DIR) + "/conformance/catalog/bundled.json";
    const std::string gen = " generate --catalog " + catalog + " --out " + dir.path().string();
    // CLI11 read "010" as octal 8 and "0x10" as 16, and said "Could not convert" for "1.5".
    const std::pair<std::string, std::string> refused[] = {
        {gen + " --threads 0x10", "--threads: 0x10: expected a whole number in decimal digits"},
        {gen + " --threads 1.5", "--threads: 1.5: expected a whole number in decimal digits"},
        {gen + " --threads 99999999999999999999", "--threads: 99999999999999999999: out of range, at most "},
        {" verify --catalog " + catalog + " --dir " + dir.path().string() + " --threads 100000",
         "--threads: 100000: out of range, at most "},
        {" complete " + catalog + " --threads 1e3", "--threads: 1e3: expected a whole number"},
        // An empty glob matched nothing, with a message that did not name it.
        {gen + " --filter ''", "--filter: an empty value"},
    };
    for (const auto& [args, message] : refused) expect_refused(args, message);
    CHECK(fs::is_empty(dir.path()));
    // "09" is decimal 9 (CLI11 refused it as a bad octal number).
    const auto r = generate_from(dir, catalog_of(catalog_case(R"("one")")), " --threads 09");
    CAPTURE(r.result.output);
    CHECK(r.result.exit_code == 0);
}

TEST_CASE("generate: a case's file that is the catalogue itself is refused before anything is written") {
    // A catalogue kept in --out under a case's file name was replaced by that case.
    TempDir dir;
    const fs::path catalog = dir.path() / "one.h5";
    const std::string text = catalog_of(catalog_case(R"("one")"));
    std::ofstream(catalog) << text;
    const auto r = run_command(moe_golden() + " generate --catalog " + catalog.string() + " --out " + dir.path().string());
    CAPTURE(r.output);
    CHECK(r.exit_code == 2);
    CHECK(r.output.find("--out (case one) " + (dir.path() / "one.h5").string() + " is " + catalog.string() +
                        ", which this run reads") != std::string::npos);
    std::ifstream in(catalog);
    CHECK(std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()) == text);
}

TEST_CASE("--max-memory past 2^64 - 1 bytes is out of range, not 2^64 - 1") {
    const std::string file = bundled_case("topk_one.h5");
    const auto r = run_command(moe_golden() + " inspect " + file + " --max-memory 99999999999999999999");
    CAPTURE(r.output);
    CHECK(r.exit_code == 2);
    CHECK(r.output.find("--max-memory: 99999999999999999999: out of range, at most 18446744073709551615 bytes") !=
          std::string::npos);
}
