// Two hints in the reports of `moe-conform run` (spec/report-format.md), read as a user reads them:
//  - why the skips were skipped: a plugin that declined most of the suite printed
//    "37 passed, 0 failed, 133 skipped" and exit 0 with nothing on why, and a supports() that
//    over-declines looks the same. The text report groups the skips by reason above the count
//    line; JSON has `skip_reasons`.
//  - a FAIL whose returned stages are all within their bounds: the report showed no stage line
//    and JSON a null first_divergent_stage, as for a backend that returned no stages, though it
//    says the bug is after the last stage (routing weights, the top-k sum, the output's rounding).
//    Here the loop backend's mutant routing_slot_shifted is that bug; swish_beta_one (wrong act)
//    is the contrast. In worker processes (the default: results cross a pipe) and in one.
// MOE_CONFORM_UNDER_TEST names another moe-conform to test (an older build, to see these fail).
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <nlohmann/json.hpp>

#include "bundled_suite.hpp"
#include "run_command.hpp"
#include "temp_dir.hpp"
#include "text_contains.hpp"

using moe::test::run_command;
using moe::test::TempDir;
using moe::test::bundled_case;
using moe::test::has;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

const std::string kChecker = "/usr/bin/python3 " + std::string(MOE_SOURCE_DIR) + "/tests/python/check_report_files.py";
const std::string kSchema = std::string(MOE_SOURCE_DIR) + "/spec/report.schema.json";
const std::string kAfter = " within bound; the divergence is after them (routing weights, the sum over top-k, or "
                           "the output's rounding)\n";

std::string tool() {
    const char* other = std::getenv("MOE_CONFORM_UNDER_TEST");
    return other && *other ? other : moe::test::moe_conform();
}

std::string file_text(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    REQUIRE_MESSAGE(in, "cannot open " << path);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The report's last lines, from `from` on.
std::string tail_from(const std::string& text, const std::string& from) {
    const auto at = text.rfind(from);
    return at == std::string::npos ? "" : text.substr(at);
}

}  // namespace

TEST_CASE("a run that skips says why, grouped by reason, most frequent first, above the count line") {
    TempDir dir;
    const fs::path expect = dir.path() / "expect.json", j = dir.path() / "r.json", x = dir.path() / "r.xml";
    std::ofstream(expect) << R"({"format": "moe-expectations", "format_version": 1, "expectations": [
      {"backend": "reference", "case": "gemm2_*", "status": "SKIP", "reason": "no GEMM2"},
      {"backend": "reference", "case": "gemm3_qwen_*", "status": "SKIP", "reason": "GEMM3 \"qwen\" not ready"}]})";
    // One GEMM2 skip before two GEMM3 skips: the larger group comes first all the same.
    const auto r = run_command(tool() + " run --quiet --backend reference --case " +
                               bundled_case("gemm2_gptoss_spec_f32.h5") + " --case " +
                               bundled_case("gemm3_qwen_openvino_f32.h5") + " --case " +
                               bundled_case("exact_gemm3_spec_f32.h5") + " --case " +
                               bundled_case("gemm3_qwen_spec_f32.h5") + " --expect " + expect.string() +
                               " --json " + j.string() + " --junit " + x.string());
    INFO(r.output);
    CHECK(r.exit_code == 0);  // skips fail nothing: the exit code is as before
    CHECK(tail_from(r.output, "skipped by reason:\n") ==
          "skipped by reason:\n"
          "  2 x \"expectation file: GEMM3 \"qwen\" not ready\"\n"
          "  1 x \"expectation file: no GEMM2\"\n"
          "1 passed, 0 failed, 3 skipped\n");

    const json doc = json::parse(file_text(j));
    CHECK(doc.at("skip_reasons") ==
          json::parse(R"([{"reason": "expectation file: GEMM3 \"qwen\" not ready", "count": 2, "backends": ["reference"]},
                          {"reason": "expectation file: no GEMM2", "count": 1, "backends": ["reference"]}])"));
    const auto check = run_command(kChecker + " " + j.string() + " " + x.string() + " " + kSchema);
    CHECK_MESSAGE(check.exit_code == 0, check.output);
}

TEST_CASE("a run that skips nothing has no skip block, and an empty skip_reasons") {
    TempDir dir;
    const fs::path j = dir.path() / "r.json";
    const auto r = run_command(tool() + " run --quiet --backend reference --case " +
                               bundled_case("exact_gemm3_spec_f32.h5") + " --json " + j.string());
    INFO(r.output);
    CHECK(r.exit_code == 0);
    CHECK_FALSE(has(r.output, "skipped by reason"));
    CHECK(json::parse(file_text(j)).at("skip_reasons") == json::array());
}

TEST_CASE("a FAIL whose stages are all within bound says the divergence is after them, in every report") {
    for (const std::string mode : {"", " --no-isolation"}) {
        CAPTURE(mode);
        TempDir dir;
        const fs::path j = dir.path() / "r.json", x = dir.path() / "r.xml", h = dir.path() / "r.html";
        const auto r = run_command(tool() + " run --quiet" + mode + " --backend mutant:routing_slot_shifted --case " +
                                   bundled_case("gemm3_qwen_spec_f32.h5") + " --case " +
                                   bundled_case("gemm2_gptoss_spec_f32.h5") + " --json " + j.string() + " --junit " +
                                   x.string() + " --html " + h.string());
        INFO(r.output);
        CHECK(r.exit_code == 1);
        const std::string gemm3 = "  stages: gate, up, act, down" + kAfter, gemm2 = "  stages: gate_up, act, down" + kAfter;
        CHECK(has(r.output, gemm3));
        CHECK(has(r.output, gemm2));
        CHECK_FALSE(has(r.output, "first divergent stage"));

        const json doc = json::parse(file_text(j));
        REQUIRE(doc.at("results").size() == 2);
        const std::vector<std::vector<std::string>> names = {{"gate", "up", "act", "down"}, {"gate_up", "act", "down"}};
        for (std::size_t i = 0; i < 2; ++i) {
            const json& res = doc["results"][i];
            CAPTURE(res.dump());
            CHECK(res.at("status") == "FAIL");
            CHECK(res.at("first_divergent_stage").is_null());  // as before: no stage left its bound
            const json& within = res.at("stages_within_bound");
            REQUIRE(within.is_array());
            REQUIRE(within.size() == names[i].size());
            for (std::size_t k = 0; k < within.size(); ++k) {
                CHECK(within[k].at("stage") == names[i][k]);
                CHECK(within[k].at("worst_ratio").get<double>() <= 1.0);
            }
        }
        // JUnit's failure text is the text report's details block; the HTML page says it too.
        const std::string xml = file_text(x);
        CHECK(has(xml, "stages: gate, up, act, down within bound; the divergence is after them"));
        CHECK(has(file_text(h), "the divergence is after them (routing weights, the sum over top-k, or the output&#39;s rounding)"));
        const auto check = run_command(kChecker + " " + j.string() + " " + x.string() + " " + kSchema);
        CHECK_MESSAGE(check.exit_code == 0, check.output);
    }
}

TEST_CASE("a FAIL with a divergent stage names it, and has no stages_within_bound") {
    TempDir dir;
    const fs::path j = dir.path() / "r.json";
    const auto r = run_command(tool() + " run --quiet --backend mutant:swish_beta_one --case " +
                               bundled_case("gemm2_gptoss_spec_f32.h5") + " --json " + j.string());
    INFO(r.output);
    CHECK(r.exit_code == 1);
    CHECK(has(r.output, "  first divergent stage: act at token"));
    CHECK_FALSE(has(r.output, "  stages: "));
    const json doc = json::parse(file_text(j));
    const json& res = doc.at("results").at(0);
    CHECK(res.at("first_divergent_stage").at("stage") == "act");
    CHECK(res.at("stages_within_bound").is_null());
}
