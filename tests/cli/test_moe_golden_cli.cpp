// moe-golden end to end: bad input of every kind ends in exit 2 with a message naming what is
// wrong, never a crash; good input is completed, generated and verified.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <utility>

#include "moe/golden/golden_file.hpp"
#include "run_command.hpp"
#include "temp_dir.hpp"
#include "small_cases.hpp"

using namespace moe;
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
    for (const auto& [args, message] : refused) {
        const auto r = run_command(moe_golden() + args);
        CAPTURE(args);
        CAPTURE(r.output);
        CHECK(r.exit_code == 2);
        CHECK(r.output.find(message) != std::string::npos);
    }
    CHECK(fs::is_empty(dir.path()));  // nothing generated
}

TEST_CASE("generate: a shape whose element count overflows exits 2") {
    TempDir dir;
    const fs::path cat = dir.path() / "cat.json";
    std::ofstream(cat) << R"({"format": "moe-catalog", "format_version": 1, "cases": [
        {"name": "huge", "expert_type": "GEMM3_SWIGLU", "convention": "openvino", "seed": 1,
         "shape": {"tokens": 4294967296, "hidden": 4294967296, "inter": 4, "experts": 2, "topk": 1}}]})";
    const auto r = run_command(moe_golden() + " generate --catalog " + cat.string() + " --out " + (dir.path() / "o").string());
    CAPTURE(r.output);
    CHECK(r.exit_code == 2);
    CHECK(r.output.find("more elements than can be addressed") != std::string::npos);
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
