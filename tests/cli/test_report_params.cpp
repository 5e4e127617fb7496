// The case's op parameters in the reports of a FAIL or ERROR (spec/report-format.md: the text
// details' `params:` line, the JSON results' `params`): a kernel with SiLU (swish beta 1) or
// GPT-OSS's 1.702/7.0 compiled in failed dozens of cases whose details said nothing of why. Here
// the loop backend's mutant swish_beta_one is that kernel. Each report is read as a user reads it,
// in worker processes (the default, where results cross a pipe) and in one process, from run and
// from check, and from the Python door.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <nlohmann/json.hpp>

#include "bundled_suite.hpp"
#include "run_command.hpp"
#include "temp_dir.hpp"
#include "text_contains.hpp"

using moe::test::moe_conform;
using moe::test::run_command;
using moe::test::TempDir;
using moe::test::bundled_case;
using moe::test::has;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// GPT-OSS's constants in the openvino convention: what swish_beta_one gets wrong.
const std::string kGemm2 = bundled_case("gemm2_gptoss_openvino_f32.h5");
const std::string kGemm2Line =
    "  params: GEMM2_BIAS_SWIGLU_CLAMP, openvino convention, swish_beta 1.702, clamp_limit 7, gate_lane 0, "
    "weight_layout NK, routing_layout compact\n";
// swish beta 1: swish_beta_one passes it (no details block, so no params line in the text).
const std::string kGemm3 = bundled_case("gemm3_qwen_openvino_f32.h5");

std::string file_text(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    REQUIRE_MESSAGE(in, "cannot open " << path);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

const json gemm2_params = {{"expert_type", "GEMM2_BIAS_SWIGLU_CLAMP"}, {"convention", "openvino"},
                           {"swish_beta", 1.702},   {"clamp_limit", 7.0},
                           {"gate_lane", 0},        {"weight_layout", "NK"},
                           {"routing_layout", "compact"}};
// No clamp_limit: GEMM3 has none.
const json gemm3_params = {{"expert_type", "GEMM3_SWIGLU"}, {"convention", "openvino"}, {"swish_beta", 1.0},
                           {"gate_lane", 0},          {"weight_layout", "NK"},    {"routing_layout", "compact"}};

}  // namespace

TEST_CASE("a FAIL's text, JSON, JUnit and HTML reports say the case's parameters, in worker processes and in one") {
    for (const std::string mode : {"", " --no-isolation"}) {
        CAPTURE(mode);
        TempDir dir;
        const fs::path j = dir.path() / "r.json", x = dir.path() / "r.xml", h = dir.path() / "r.html";
        const auto r = run_command(moe_conform() + " run --quiet" + mode + " --backend mutant:swish_beta_one --case " +
                                   kGemm3 + " --case " + kGemm2 + " --json " + j.string() + " --junit " + x.string() +
                                   " --html " + h.string());
        CAPTURE(r.output);
        REQUIRE(r.exit_code == 1);
        // The FAIL's details block: the line right after its types line.
        CHECK(has(r.output, "  types: data f32, compute f32, storage f32\n" + kGemm2Line));
        CHECK_FALSE(has(r.output, "params: GEMM3_SWIGLU"));  // the PASS has no details

        // Every result of a read case carries them in JSON, the PASS too: a reader contrasts the
        // parameters of what passes with those of what fails.
        const json doc = json::parse(file_text(j));
        REQUIRE(doc["results"].size() == 2);
        CHECK(doc["results"][0]["status"] == "PASS");
        CHECK(doc["results"][0]["params"] == gemm3_params);
        CHECK(doc["results"][1]["status"] == "FAIL");
        CHECK(doc["results"][1]["params"] == gemm2_params);
        const auto valid = run_command("/usr/bin/python3 " MOE_SOURCE_DIR "/tests/python/check_report_files.py " +
                                       j.string() + " " + x.string() + " " MOE_SOURCE_DIR
                                       "/spec/report.schema.json --expect-total 2");
        CAPTURE(valid.output);
        CHECK(valid.exit_code == 0);

        // JUnit's <failure> holds the text details; the HTML failure section a line of its own.
        CHECK(has(file_text(x), kGemm2Line));
        CHECK(has(file_text(h), "<p class=\"meta\">params: GEMM2_BIAS_SWIGLU_CLAMP, openvino convention, swish_beta "
                                "1.702, clamp_limit 7, gate_lane 0, weight_layout NK, routing_layout compact</p>"));
    }
}

TEST_CASE("a backend that crashes its worker process: the ERROR still says the case's parameters") {
    // The worker read the file before the backend crashed it; the parent builds the ERROR.
    const auto r = run_command(moe_conform() + " run --quiet --backend-lib " + MOE_CRASHES_WHEN_SMALL + " --case " +
                               bundled_case("gemm3_single_token.h5"));
    CAPTURE(r.output);
    REQUIRE(r.exit_code == 1);
    CHECK(has(r.output, "crashed: the worker process was killed by signal 11"));
    CHECK(has(r.output, "  params: GEMM3_SWIGLU, openvino convention, swish_beta 1, gate_lane 0, weight_layout NK, "
                        "routing_layout compact\n"));
}

TEST_CASE("check: a FAIL judged from result files says the case's parameters, in worker processes and in one") {
    TempDir dir;
    const fs::path results = dir.path() / "results";
    REQUIRE(run_command(moe_conform() + " run --quiet --backend mutant:swish_beta_one --case " + kGemm2 +
                        " --write-results " + results.string())
                .exit_code == 1);
    for (const std::string mode : {"", " --no-isolation"}) {
        CAPTURE(mode);
        const fs::path j = dir.path() / "check.json";
        const auto r = run_command(moe_conform() + " check --quiet" + mode + " --case " + kGemm2 + " --results " +
                                   results.string() + " --json " + j.string());
        CAPTURE(r.output);
        REQUIRE(r.exit_code == 1);
        CHECK(has(r.output, kGemm2Line));
        CHECK(json::parse(file_text(j))["results"][0]["params"] == gemm2_params);
    }
}

TEST_CASE("the Python door: Result.params, from check() and run_suite(), and in report_text") {
    // check() judges through judge_output, not the runner: it fills them itself. A wrong output
    // (the reference scaled) FAILs; a function that raises is an ERROR, with them too.
    const std::string code =
        "import sys, moe_conform\n"
        "c = moe_conform.load_case(sys.argv[1])\n"
        "r = moe_conform.check(c, c.reference * 1.5, compute='f32')\n"
        "assert r.status == 'FAIL', r.status\n"
        "assert r.params == {'expert_type': 'GEMM2_BIAS_SWIGLU_CLAMP', 'convention': 'openvino', 'swish_beta': 1.702,"
        " 'clamp_limit': 7.0, 'gate_lane': 0, 'weight_layout': 'NK', 'routing_layout': 'compact'}, r.params\n"
        "assert 'params: GEMM2_BIAS_SWIGLU_CLAMP, openvino convention, swish_beta 1.702' in r.report_text, r.report_text\n"
        "def broken(case):\n"
        "    raise RuntimeError('not written yet')\n"
        "s = moe_conform.run_suite(broken, sys.argv[2], compute='f32', quiet=True)\n"
        "e = s.results[0]\n"
        "assert e.status == 'ERROR' and e.params['expert_type'] == 'GEMM3_SWIGLU', (e.status, e.params)\n"
        "assert 'clamp_limit' not in e.params\n"
        "assert '  params: GEMM3_SWIGLU, openvino convention, swish_beta 1, gate_lane 0' in s.report_text, s.report_text\n"
        "print('ok')\n";
    std::string quoted = "'";
    for (const char c : code) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    const auto r = run_command("PYTHONPATH=" MOE_BINARY_DIR "/python /usr/bin/python3 -c " + quoted + "' " + kGemm2 +
                               " " + kGemm3);
    CAPTURE(r.output);
    CHECK(r.exit_code == 0);
    CHECK(has(r.output, "ok"));
}

// The declared dequantisation type sets a compressed case's bound (spec/tolerance.md, "Compressed
// weights"), but the reports said only data, compute and storage: a kernel that dequantises u4 to
// bf16 while its run declared f32 could not see which type its FAIL was judged with.
TEST_CASE("a compressed case's reports say the declared dequantisation type; other cases' say none") {
    const std::string u4 = bundled_case("compressed_u4_gemm3_group4_zp.h5");
    for (const std::string mode : {"", " --no-isolation"}) {
        CAPTURE(mode);
        TempDir dir;
        const fs::path j = dir.path() / "r.json";
        const auto r = run_command(moe_conform() + " run --quiet" + mode +
                                   " --backend mutant:nibble_order_swapped,loop_lowp --case " + u4 + " --case " +
                                   kGemm3 + " --json " + j.string());
        CAPTURE(r.output);
        REQUIRE(r.exit_code == 1);
        CHECK(has(r.output, "  types: data f16, compute f32, storage f32, dequant f32\n"));
        const json doc = json::parse(file_text(j));
        REQUIRE(doc["results"].size() == 4);
        for (const json& res : doc["results"]) {
            CAPTURE(res.dump());
            REQUIRE(res.contains("dequant_type"));
            const bool compressed = res["case"] == "compressed_u4_gemm3_group4_zp";
            if (!compressed) CHECK(res["dequant_type"].is_null());
            else if (res["backend"] == "loop_lowp") CHECK(res["dequant_type"] == "f16");
            else CHECK(res["dequant_type"] == "f32");
        }
    }
}
