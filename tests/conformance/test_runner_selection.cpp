// The runner's doors for a user's own kernel: selecting cases by expert type (which case names do
// not say), a backend that says "not applicable" while running (SKIP, not ERROR), and check's
// message for a case no result file answers (the user's to fix, not "backend threw").
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "moe/conformance/compare.hpp"
#include "moe/conformance/result_check.hpp"
#include "moe/conformance/runner.hpp"
#include "moe/golden/result_file.hpp"
#include "moe/golden/suite.hpp"
#include "moe/spec/error.hpp"
#include "runner_fixtures.hpp"
#include "text_contains.hpp"

using namespace moe;
using namespace moe::conformance;
using test::Behaviour;
using test::ScriptedBackend;
using test::case_names;
using moe::test::has;

namespace {

// Throws CaseSkipped on GEMM2 cases (a kernel of GEMM3 alone), else runs as `correct`.
class Gemm3Only : public ScriptedBackend {
public:
    Gemm3Only() : ScriptedBackend("gemm3_only", Behaviour::correct) {}
    Output run(const Problem& p, bool want_stages) override {
        if (p.attributes.expert_type != ExpertType::gemm3_swiglu) throw CaseSkipped("GEMM3_SWIGLU only");
        return ScriptedBackend::run(p, want_stages);
    }
};

// A result file for the case of `golden_file`: `output`, computed in `precision`.
void write_answer(const std::string& file, const std::string& golden_file, const Tensor& output,
                  const Precision& precision = Precision{DType::f32, DType::f32}) {
    const golden::CaseIdentity id = golden::identify_case(golden_file);
    golden::ResultFile result;
    result.case_name = id.case_name;
    result.golden_sha256 = id.sha256;
    result.precision = precision;
    result.output = output;
    golden::write_result(file, result);
}

PreparedCheck prepared_check(const std::vector<std::string>& golden_files, const std::vector<std::string>& result_files) {
    CheckInputs in;
    in.golden_files = golden_files;
    in.result_files = result_files;
    return prepare_check(in);
}

// The prepared check's cases of `golden_files`, run in this process.
RunOutcome run_check(const PreparedCheck& prepared, const std::vector<std::string>& golden_files) {
    RunOptions o = test::quiet_options(golden_files);
    o.isolate = false;
    return run_suite_from_makers(o, {prepared.replay});
}

}  // namespace

TEST_CASE("--expert-type's values: gemm2, gemm3 or the spec's names, in any case; anything else names the option") {
    CHECK(expert_type_option("gemm2", "--expert-type") == ExpertType::gemm2_bias_swiglu_clamp);
    CHECK(expert_type_option("GEMM3", "--expert-type") == ExpertType::gemm3_swiglu);
    CHECK(expert_type_option("GEMM2_BIAS_SWIGLU_CLAMP", "--expert-type") == ExpertType::gemm2_bias_swiglu_clamp);
    CHECK(expert_type_option("gemm3_SwiGLU", "--expert-type") == ExpertType::gemm3_swiglu);
    for (const char* bad : {"", "gemm", "gemm4", "GEMM3_SWIGLU ", "swiglu"}) {
        CAPTURE(bad);
        try {
            expert_type_option(bad, "expert_type");
            FAIL("accepted");
        } catch (const InputError& e) {
            CHECK(has(e.what(), "expert_type '" + std::string(bad) + "': expected gemm2 (GEMM2_BIAS_SWIGLU_CLAMP) or gemm3"));
        }
    }
}

TEST_CASE("expert_type selects the cases of one expert type, with filters and tiers as well") {
    test::TempDir dir;
    const auto files = test::write_suite(dir);  // alpha GEMM2 (quick), beta GEMM3 (ci), gamma GEMM3 (full)
    ScriptedBackend b("scripted", Behaviour::correct);
    auto run = [&](std::optional<ExpertType> type, std::vector<std::string> filters = {}, std::string tier = "full") {
        RunOptions o = test::quiet_options(files);
        o.expert_type = type;
        o.filters = std::move(filters);
        o.tier = std::move(tier);
        return case_names(run_suite(o, {&b}));
    };
    using Names = std::vector<std::string>;
    CHECK(run(std::nullopt) == Names{"alpha", "beta", "gamma"});
    CHECK(run(ExpertType::gemm3_swiglu) == Names{"beta", "gamma"});
    CHECK(run(ExpertType::gemm2_bias_swiglu_clamp) == Names{"alpha"});
    CHECK(run(ExpertType::gemm3_swiglu, {"?amma", "alpha"}) == Names{"gamma"});
    CHECK(run(ExpertType::gemm3_swiglu, {}, "ci") == Names{"beta"});
    CHECK(run(ExpertType::gemm2_bias_swiglu_clamp, {"beta"}).empty());
}

TEST_CASE("select_files keeps the files of one expert type from the root attributes, so counters count them alone") {
    test::TempDir dir;
    const auto files = test::write_suite(dir);
    using Files = std::vector<std::string>;
    CHECK(golden::select_files(files, {}, "", nullptr, "GEMM3_SWIGLU") == Files{files[1], files[2]});
    CHECK(golden::select_files(files, {}, "", nullptr, "GEMM2_BIAS_SWIGLU_CLAMP") == Files{files[0]});
    CHECK(golden::select_files(files, {"g*"}, "", nullptr, "GEMM3_SWIGLU") == Files{files[2]});
    std::vector<std::string> names;
    CHECK(golden::select_files(files, {}, "ci", &names, "GEMM3_SWIGLU") == Files{files[1]});
    CHECK(names == Files{"beta"});
    CHECK(golden::select_files(files, {}, "", nullptr, "") == files);
}

TEST_CASE("a backend that throws CaseSkipped while running is SKIP with its reason, not ERROR; all SKIP is exit 77") {
    test::TempDir dir;
    const auto files = test::write_suite(dir);
    Gemm3Only b;
    const RunOutcome r = run_suite(test::quiet_options(files), {&b});
    REQUIRE(r.results.size() == 3);
    CHECK(r.results[0].status == Status::skip);
    CHECK(r.results[0].reason == "not supported: GEMM3_SWIGLU only");
    CHECK(r.results[0].seconds == 0);
    CHECK(r.results[1].status == Status::pass);
    CHECK(r.results[2].status == Status::pass);
    const RunSummary s = summarize(r.results);
    CHECK(s.skipped == 1);
    CHECK(s.errors == 0);
    CHECK(run_exit_code(r) == 0);
    // Every case skipped: nothing was compared, which is no success (77).
    const RunOutcome only_gemm2 = run_suite(test::quiet_options({files[0]}), {&b});
    REQUIRE(only_gemm2.results.size() == 1);
    CHECK(only_gemm2.results[0].status == Status::skip);
    CHECK(run_exit_code(only_gemm2) == 77);
}

TEST_CASE("check: a case no result file answers is ERROR saying how to leave it out, not 'backend threw'") {
    test::TempDir dir;
    const auto files = test::write_suite(dir);
    // A result for alpha alone.
    const std::string result_file = (dir / "alpha_result.h5").string();
    write_answer(result_file, files[0], golden::read_golden(files[0]).outputs.at("output"));
    const PreparedCheck prepared = prepared_check(files, {result_file});
    REQUIRE(prepared.problems.empty());
    const RunOutcome r = run_check(prepared, files);
    REQUIRE(r.results.size() == 3);
    CHECK(r.results[0].status == Status::pass);
    for (std::size_t i : {1, 2}) {
        const CaseResult& x = r.results[i];
        CAPTURE(x.case_name);
        CHECK(x.status == Status::error);
        CHECK_FALSE(has(x.reason, "backend threw"));
        CHECK(x.reason == "no result file answers this case (missing result): give --case FILE... or "
                          "--filter/--expert-type to judge only the cases you answer");
    }
    CHECK(run_exit_code(r) == 1);  // still an ERROR: a missing result never passes
}

// A result file declares the types it computed and stored in (compute_type, storage_type): the
// bounds are those types'. Judged as if computed in the data type instead, a result declaring f32
// on f16 data would get f16's far wider accumulation bounds: 0.3 % off passes them.
TEST_CASE("check: a result is judged by the precision its file declares, not by the data type") {
    test::TempDir dir;
    const auto files = test::write_suite(dir);
    const golden::GoldenCase beta = golden::read_golden(files[1]);  // f16 data
    REQUIRE(beta.problem.input(kHiddenStates).dtype() == DType::f16);
    const Tensor& ref = beta.outputs.at("output");
    Tensor off(DType::f32, ref.shape());
    for (std::size_t i = 0; i < ref.size(); ++i) off.set(i, ref.get(i) * 1.003);
    const Precision f32{DType::f32, DType::f32}, f16{DType::f16, DType::f16};
    // 0.3 % off: outside f32's bounds, inside f16's.
    REQUIRE(compare_output(beta, off, f32, 1).status == Status::fail);
    REQUIRE(compare_output(beta, off, f16, 1).status == Status::pass);
    for (const Precision& declared : {f32, f16}) {
        CAPTURE(dtype_name(declared.compute));
        const std::string result_file = (dir / "beta_result.h5").string();
        write_answer(result_file, files[1], off, declared);
        const PreparedCheck prepared = prepared_check({files[1]}, {result_file});
        REQUIRE(prepared.problems.empty());
        const RunOutcome r = run_check(prepared, {files[1]});
        REQUIRE(r.results.size() == 1);
        CHECK(r.results[0].status == (declared.compute == DType::f32 ? Status::fail : Status::pass));
        CHECK(r.results[0].compute_type == std::string(dtype_name(declared.compute)));
    }
}

// prepare_check reads every result file's attributes and shapes; each file is read again, in
// full, only when its case runs. A file replaced in between (another case's result, another
// shape) would be judged unchecked: it is refused, an ERROR naming the file.
TEST_CASE("check: a result file replaced after it was checked is ERROR, not judged") {
    test::TempDir dir;
    const auto files = test::write_suite(dir);
    const std::string result_file = (dir / "alpha_result.h5").string();
    write_answer(result_file, files[0], golden::read_golden(files[0]).outputs.at("output"));
    const PreparedCheck prepared = prepared_check({files[0]}, {result_file});
    REQUIRE(prepared.problems.empty());
    // gamma's result under alpha's file name
    write_answer(result_file, files[2], golden::read_golden(files[2]).outputs.at("output"));
    const RunOutcome r = run_check(prepared, {files[0]});
    REQUIRE(r.results.size() == 1);
    CHECK(r.results[0].status == Status::error);
    CHECK(has(r.results[0].reason, "changed after it was checked"));
    CHECK(has(r.results[0].reason, result_file));
    CHECK(run_exit_code(r) == 1);
}
