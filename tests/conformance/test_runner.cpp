// The runner (conformance::run_suite) over golden files written here, driving backends written
// here against the contract: statuses, reasons, case selection, expectations, input errors and
// the repro line. No backend library is linked.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <optional>
#include <string>
#include <vector>

#include <unistd.h>

#include "moe/conformance/expectations.hpp"
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

// What a run of a backend whose prepare() takes 400 ms printed on stderr (its one result checked).
std::string stderr_of_slow_run(const RunOptions& o) {
    std::ostringstream err;
    auto* old = std::cerr.rdbuf(err.rdbuf());
    const RunOutcome out = run_suite_from_makers(
        o, {{"slow", [] { return std::make_unique<ScriptedBackend>("slow", Behaviour::slow_prepare); }, ""}});
    std::cerr.rdbuf(old);
    CHECK(out.results.size() == 1);
    return err.str();
}

}  // namespace

TEST_CASE("a correct backend passes every case; each result names its file, backend and types") {
    test::TempDir dir;
    const auto files = test::write_suite(dir);
    ScriptedBackend b("scripted", Behaviour::correct);
    const RunOutcome r = run_suite(test::quiet_options(files), {&b});
    CHECK(r.input_errors.empty());
    REQUIRE(r.results.size() == 3);
    CHECK(b.runs == 3);
    for (std::size_t i = 0; i < 3; ++i) {
        const CaseResult& x = r.results[i];
        CAPTURE(x.case_name);
        CHECK(x.status == Status::pass);
        CHECK(x.reason.empty());
        CHECK(x.file == files[i]);
        CHECK(x.backend == "scripted");
        CHECK(x.compute_type == "f32");
        CHECK(x.storage_type == "f32");
        CHECK(x.metrics.elements == 60);
        CHECK(x.metrics.worst_ratio == 0.0);
        CHECK_FALSE(x.first_divergent_stage);
    }
    CHECK(case_names(r) == std::vector<std::string>{"alpha", "beta", "gamma"});
    CHECK(r.results[0].data_type == "f32");
    CHECK(r.results[1].data_type == "f16");
    const RunSummary s = summarize(r.results);
    CHECK(s.total == 3);
    CHECK(s.passed == 3);
}

TEST_CASE("a wrong backend FAILs; when it provides stages the first divergent stage is named") {
    test::TempDir dir;
    const auto files = test::write_suite(dir);
    ScriptedBackend wrong("wrong", Behaviour::wrong_output), act("act", Behaviour::wrong_act);
    const RunOutcome r = run_suite(test::quiet_options({files[0]}), {&wrong, &act});
    REQUIRE(r.results.size() == 2);
    CHECK(r.results[0].status == Status::fail);
    CHECK(has(r.results[0].reason, "elements outside their bound"));
    CHECK(r.results[0].metrics.over_bound > 0);
    CHECK_FALSE(r.results[0].first_divergent_stage);  // no stages provided
    CHECK(r.results[1].status == Status::fail);
    REQUIRE(r.results[1].first_divergent_stage);
    CHECK(r.results[1].first_divergent_stage->stage == "act");
    CHECK(r.results[1].first_divergent_stage->worst_ratio > 1.0);
}

TEST_CASE("a backend that throws is ERROR with its message") {
    test::TempDir dir;
    const auto files = test::write_suite(dir);
    ScriptedBackend b("thrower", Behaviour::throws);
    const RunOutcome r = run_suite(test::quiet_options(files), {&b});
    REQUIRE(r.results.size() == 3);
    for (const auto& x : r.results) {
        CHECK(x.status == Status::error);
        CHECK(x.reason == "backend threw: device lost");
    }
    CHECK(summarize(r.results).errors == 3);
}

TEST_CASE("a case's seconds are run()'s: prepare(), the per-weights work done once, is not counted") {
    test::TempDir dir;
    const auto files = test::write_suite(dir);
    ScriptedBackend b("slow_prepare", Behaviour::slow_prepare);
    const RunOutcome r = run_suite(test::quiet_options(files), {&b});
    REQUIRE(r.results.size() == 3);
    for (const auto& x : r.results) {
        CHECK(x.status == Status::pass);
        CHECK(x.seconds < 0.3);  // prepare() sleeps 0.4 s; run() is the reference on a tiny case
    }
}

TEST_CASE("isolated runs say which step is still going when one takes long (model-sized cases)") {
    // A backend whose prepare() takes 400 ms, noticed after 0.1 s (30 s by default).
    test::TempDir dir;
    RunOptions o;
    o.files = test::write_suite(dir, {test::default_suite()[0]});
    o.notice_seconds = 0.1;
    CHECK(stderr_of_slow_run(o).find("[1/1] still running slow on " + o.files[0] + " (0 s)\n") != std::string::npos);
    o.notice_seconds = 30;  // the default: nothing said for a short step
    CHECK(stderr_of_slow_run(o).find("still") == std::string::npos);
}

TEST_CASE("runs in one process (--no-isolation) say which step is still going too, before its progress line") {
    // The same backend, run here: a thread of the runner notices the step (there was no notice
    // at all without worker processes).
    test::TempDir dir;
    RunOptions o;
    o.files = test::write_suite(dir, {test::default_suite()[0]});
    o.isolate = false;
    o.notice_seconds = 0.1;
    const auto run = [&o] { return stderr_of_slow_run(o); };
    std::string err = run();
    CAPTURE(err);
    const auto notice = err.find("[1/1] still running slow on " + o.files[0] + " (0 s)\n");
    const auto done = err.find("[1/1] PASS");
    CHECK(notice != std::string::npos);
    REQUIRE(done != std::string::npos);
    CHECK(notice < done);
    CHECK(err.find("still", done) == std::string::npos);  // none after the step ended
    o.notice_seconds = 30;  // the default: nothing said for a short step
    CHECK(run().find("still") == std::string::npos);
    o.notice_seconds = 0.1;
    o.progress = false;  // --quiet: no notice either
    CHECK(run().empty());
}

TEST_CASE("an unsupported problem is SKIP with the backend's reason; the other cases run") {
    test::TempDir dir;
    const auto files = test::write_suite(dir);
    ScriptedBackend b("no_f16", Behaviour::no_f16);
    const RunOutcome r = run_suite(test::quiet_options(files), {&b});
    REQUIRE(r.results.size() == 3);
    CHECK(r.results[0].status == Status::pass);
    CHECK(r.results[1].status == Status::skip);
    CHECK(r.results[1].reason == "not supported: f16 inputs are not supported by this backend");
    CHECK(r.results[2].status == Status::pass);
    CHECK(b.runs == 2);
}

TEST_CASE("an unavailable backend is SKIP on every case, with the reason, and never runs") {
    test::TempDir dir;
    const auto files = test::write_suite(dir);
    ScriptedBackend b("absent", Behaviour::unavailable);
    const RunOutcome r = run_suite(test::quiet_options(files), {&b});
    REQUIRE(r.results.size() == 3);
    for (const auto& x : r.results) {
        CHECK(x.status == Status::skip);
        CHECK(x.reason == "backend unavailable: no device in this test");
    }
    CHECK(b.runs == 0);
    CHECK(summarize(r.results).skipped == 3);
}

TEST_CASE("filters and tiers select the cases") {
    test::TempDir dir;
    const auto files = test::write_suite(dir);
    ScriptedBackend b("scripted", Behaviour::correct);
    auto run = [&](std::vector<std::string> filters, std::string tier) {
        RunOptions o = test::quiet_options(files);
        o.filters = std::move(filters);
        o.tier = std::move(tier);
        return case_names(run_suite(o, {&b}));
    };
    using Names = std::vector<std::string>;
    CHECK(run({}, "full") == Names{"alpha", "beta", "gamma"});
    CHECK(run({}, "ci") == Names{"alpha", "beta"});
    CHECK(run({}, "quick") == Names{"alpha"});
    CHECK(run({"a*"}, "full") == Names{"alpha"});
    CHECK(run({"a*", "g?mma"}, "full") == Names{"alpha", "gamma"});
    CHECK(run({"?e*"}, "full") == Names{"beta"});
    CHECK(run({"g*"}, "ci").empty());  // gamma is of tier full
    CHECK(run({"delta"}, "full").empty());
}

TEST_CASE("expectation files: each malformed one is an input error naming the key or entry, never accepted") {
    const auto dir = std::filesystem::temp_directory_path() / ("moe_expect_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    const auto file = dir / "e.json";
    const std::string head = R"({"format": "moe-expectations", "format_version": 1, )";
    const std::string good = R"({"backend": "b", "case": "c", "status": "FAIL", "reason": "r"})";
    const std::pair<std::string, std::string> refused[] = {
        {"[]", "the file holds an array"},
        {R"({"format": "moe-expectations", "format_version": "1", "expectations": []})", "\"format_version\" is \"1\""},
        {R"({"format": "moe-expectations", "format_version": 1.5, "expectations": []})", "\"format_version\" is 1.5"},
        {R"({"format": 5, "format_version": 1, "expectations": []})", "\"format\" is 5"},
        {R"({"format": "moe-expectations", "format_version": 1})", "\"expectations\" is missing"},
        {head + R"("expectations": null})", "\"expectations\" is null"},
        {head + R"("expectations": {}})", "\"expectations\" is an object"},
        {head + R"("expectations": "abc"})", "\"expectations\" is a string"},
        {head + R"("expectations": [], "expectation": []})", "unknown key \"expectation\""},
        {head + R"("expectations": [7]})", "entry 0: must be an object, not a number"},
        {head + R"("expectations": [)" + good + R"(, {"backend": "b", "case": "c", "status": "FAIL"}]})",
         "entry 1: \"reason\" is missing"},
        {head + R"("expectations": [{"backend": "b", "case": "c", "status": "FAIL", "reason": "r", "tikcet": "#1"}]})",
         "entry 0: unknown key \"tikcet\""},
        {head + R"("expectations": [{"backend": "b", "case": "c", "status": "FAIL", "reason": "r", "ticket": 12}]})",
         "entry 0: \"ticket\" must be a string, not a number"},
        {head + R"("expectations": [{"backend": "b", "case": "c", "status": "fail", "reason": "r"}]})",
         "\"status\" must be FAIL or SKIP, not fail"},
        {head + R"("expectations": [{"backend": "", "case": "c", "status": "FAIL", "reason": "r"}]})", "must not be empty"},
    };
    for (const auto& [text, message] : refused) {
        CAPTURE(text);
        std::ofstream(file) << text;
        try {
            load_expectations(file);
            FAIL("accepted");
        } catch (const InputError& e) {
            CHECK_MESSAGE(std::string(e.what()).find(message) != std::string::npos, e.what());
        }
    }
    std::ofstream(file) << head + R"("description": "known failures", "expectations": [)" + good + "]}";
    const auto list = load_expectations(file);
    REQUIRE(list.size() == 1);
    CHECK(list[0].reason == "r");
    CHECK(list[0].ticket.empty());
    std::filesystem::remove_all(dir);
}

TEST_CASE("expectations: FAIL becomes XFAIL, PASS becomes XPASS, SKIP entries are not run") {
    test::TempDir dir;
    const auto files = test::write_suite(dir);
    ScriptedBackend wrong("wrong", Behaviour::wrong_output), good("good", Behaviour::correct);
    RunOptions o = test::quiet_options(files);
    o.expectations = {{"wrong", "alpha", Status::fail, "known rounding bug", "T-1"},
                      {"g*", "alpha", Status::fail, "thought broken", "T-2"},
                      {"*", "beta", Status::skip, "too slow here", ""}};
    const RunOutcome r = run_suite(o, {&wrong, &good});
    REQUIRE(r.results.size() == 6);  // alpha, beta, gamma x wrong, good
    const CaseResult &wa = r.results[0], &ga = r.results[1], &wb = r.results[2], &gb = r.results[3],
                     &wg = r.results[4], &gg = r.results[5];
    CHECK(wa.status == Status::xfail);
    CHECK(wa.ticket == "T-1");
    CHECK(has(wa.reason, "expected failure: known rounding bug ("));
    CHECK(has(wa.reason, "elements outside their bound"));
    CHECK(ga.status == Status::xpass);
    CHECK(ga.ticket == "T-2");
    CHECK(has(ga.reason, "listed as failing (thought broken) but passes"));
    CHECK(wb.status == Status::skip);
    CHECK(wb.reason == "expectation file: too slow here");
    CHECK(gb.status == Status::skip);
    // No entry for gamma: the plain verdicts.
    CHECK(wg.status == Status::fail);
    CHECK(gg.status == Status::pass);
    CHECK(wrong.runs == 2);  // alpha and gamma; beta is skipped before running
    const RunSummary s = summarize(r.results);
    CHECK(s.xfailed == 1);
    CHECK(s.xpassed == 1);
    CHECK(s.skipped == 2);
}

TEST_CASE("a bad golden file is an input error, never a result; the other files still run") {
    test::TempDir dir;
    auto files = test::write_suite(dir);
    const std::string junk = (dir / "junk.h5").string();
    std::ofstream(junk) << "not an HDF5 file";
    // A well-formed file whose problem breaks a rule (an expert index outside [0, E)).
    golden::GoldenCase bad = golden::read_golden(files[0]);
    bad.problem.name = "rejected";
    bad.problem.inputs[kTopkIndices].set_index(0, 99);
    const std::string rejected = (dir / "rejected.h5").string();
    golden::write_golden(rejected, bad);
    files.insert(files.begin() + 1, junk);
    files.push_back(rejected);
    ScriptedBackend b("scripted", Behaviour::correct);
    const RunOutcome r = run_suite(test::quiet_options(files), {&b});
    REQUIRE(r.input_errors.size() == 2);
    CHECK(has(r.input_errors[0], "junk.h5"));
    CHECK(has(r.input_errors[1], "rejected.h5"));
    CHECK(has(r.input_errors[1], "the problem is rejected"));
    CHECK(has(r.input_errors[1], "99"));
    CHECK(case_names(r) == std::vector<std::string>{"alpha", "beta", "gamma"});
    CHECK(b.runs == 3);
    // The files that did run pass; the run is still an input error (exit 2), never a success.
    CHECK(summarize(r.results).passed == 3);
    CHECK(run_exit_code(r) == 2);
}

TEST_CASE("the repro line reruns exactly this case on this backend, quoted for the shell") {
    test::TempDir dir;
    std::filesystem::create_directories(dir / "my suite");
    test::TempDir plain;
    const auto files = test::write_suite(plain, {{"alpha", "ci", ExpertType::gemm3_swiglu, Convention::openvino, DType::f32}});
    const std::string spaced = (dir / "my suite" / "alpha.h5").string();
    std::filesystem::copy_file(files[0], spaced);
    ScriptedBackend b("scripted", Behaviour::correct), odd("odd name", Behaviour::correct);
    RunOptions o = test::quiet_options({files[0], spaced});
    const RunOutcome r = run_suite(o, {&b, &odd});
    REQUIRE(r.results.size() == 4);
    CHECK(r.results[0].repro == "moe-conform run --backend scripted --case " + files[0]);
    CHECK(r.results[1].repro == "moe-conform run --backend 'odd name' --case " + files[0]);
    CHECK(r.results[2].repro == "moe-conform run --backend scripted --case '" + spaced + "'");
    o.repro_command = "moe-conform run --device 0:0";
    CHECK(run_suite(o, {&b}).results[0].repro == "moe-conform run --device 0:0 --backend scripted --case " + files[0]);
}

TEST_CASE("a rejected problem in a file whose name holds control characters: the message shows the name escaped") {
    test::TempDir dir;
    const auto files = test::write_suite(dir, {{"alpha", "ci", ExpertType::gemm3_swiglu, Convention::openvino, DType::f32}});
    golden::GoldenCase bad = golden::read_golden(files[0]);
    bad.problem.inputs[kTopkIndices].set_index(0, 99);  // an expert index outside [0, E)
    const std::string evil = (dir / "evil\x1b[31mRED\nFAKE\xc2\x9b.h5").string();
    golden::write_golden(evil, bad);
    ScriptedBackend b("scripted", Behaviour::correct);
    const RunOutcome r = run_suite(test::quiet_options({evil}), {&b});
    REQUIRE(r.input_errors.size() == 1);
    const std::string& e = r.input_errors[0];
    CAPTURE(e);
    CHECK(has(e, "evil\\x1b[31mRED\\x0aFAKE\\xc2\\x9b.h5': the problem is rejected"));
    CHECK_FALSE(has(e, "\x1b"));
    CHECK_FALSE(has(e, "\n"));
    CHECK_FALSE(has(e, "\xc2\x9b"));
}

TEST_CASE("names that printed alike before a backslash was escaped are two cases: x<newline>y and the text x\\x0ay") {
    test::TempDir dir;
    const auto files = test::write_suite(dir, {{"alpha", "ci", ExpertType::gemm3_swiglu, Convention::openvino, DType::f32}});
    golden::GoldenCase c = golden::read_golden(files[0]);
    c.problem.name = "x\ny";
    const std::string newline = (dir / "newline.h5").string();
    golden::write_golden(newline, c);
    c.problem.name = "x\\x0ay";  // the six characters, as typed
    const std::string typed = (dir / "typed.h5").string();
    golden::write_golden(typed, c);
    ScriptedBackend b("scripted", Behaviour::correct);
    RunOptions o = test::quiet_options({newline, typed});
    // The typed name as printed: this entry is the typed name's alone (the newline name prints x\x0ay).
    o.expectations = {{"*", "x\\\\x0ay", Status::skip, "the typed one", ""}};
    const RunOutcome r = run_suite(o, {&b});
    CHECK(r.input_errors.empty());  // not "case name 'x\x0ay' is in two files of this run"
    CHECK(case_names(r) == std::vector<std::string>{"x\\x0ay", "x\\\\x0ay"});
    REQUIRE(r.results.size() == 2);
    CHECK(r.results[0].status == Status::pass);
    CHECK(r.results[1].status == Status::skip);
}

TEST_CASE("check: every problem shows the case names, stage names and paths from the files escaped") {
    test::TempDir dir;
    const auto files = test::write_suite(dir, {{"alpha", "ci", ExpertType::gemm3_swiglu, Convention::openvino, DType::f32}});
    // Clears the screen, sets the window title, starts a CSI (U+009B), reverses the text (U+202E).
    const std::string evil = "\x1b[2J\x1b]0;owned\x07\xc2\x9b" "31m\xe2\x80\xaeRED";
    const std::string shown = "\\x1b[2J\\x1b]0;owned\\x07\\xc2\\x9b31m\\xe2\\x80\\xaeRED";
    golden::GoldenCase c = golden::read_golden(files[0]);
    c.problem.name = evil;
    const std::string golden_file = (dir / "g\x1b[31m\n.h5").string(), again = (dir / "again\x1b[31m.h5").string();
    golden::write_golden(golden_file, c);
    std::filesystem::copy_file(golden_file, again);
    const std::string sha = golden::identify_case(golden_file).sha256;
    const Tensor& output = c.outputs.at("output");
    auto result = [&](const std::string& name, const std::string& case_name, const Tensor& out,
                      std::optional<Precision> precision = Precision{DType::f32, DType::f32}) {
        golden::ResultFile r;
        r.case_name = case_name;
        r.golden_sha256 = sha;
        r.precision = precision;
        r.output = out;
        const std::string file = (dir / name).string();
        golden::write_result(file, r);
        return file;
    };
    auto problems_of = [&](std::vector<std::string> golden_files, std::vector<std::string> result_files) {
        CheckInputs in;
        in.golden_files = std::move(golden_files);
        in.result_files = std::move(result_files);
        const std::vector<std::string> problems = prepare_check(in).problems;
        std::string all;
        for (const auto& p : problems) all += p + "\n";
        CHECK(problems.size() == 1);
        for (const char* raw : {"\x1b", "\x07", "\xc2\x9b", "\xe2\x80\xae"}) CHECK_FALSE(has(all, raw));
        return all;
    };
    const std::string r_ok = result("ok\x1b[31m.h5", evil, output);
    // Two golden files of one case.
    std::string p = problems_of({golden_file, again}, {});
    CAPTURE(p);
    CHECK(has(p, "again\\x1b[31m.h5: case '" + shown + "' is also " + (dir / "g\\x1b[31m\\x0a.h5").string()));
    // A result for a case not in the run.
    p = problems_of({golden_file}, {result("extra\x1b.h5", evil + "\x1b[0m", output)});
    CHECK(has(p, "extra\\x1b.h5: answers case '" + shown + "\\x1b[0m', which is not among"));
    // A result of another golden file of the same case name.
    golden::ResultFile other = golden::read_result(r_ok);
    other.golden_sha256 = std::string(64, '0');
    golden::write_result(dir / "other\x1b.h5", other);
    p = problems_of({golden_file}, {(dir / "other\x1b.h5").string()});
    CHECK(has(p, "other\\x1b.h5: answers case '" + shown + "' of another golden file"));
    CHECK(has(p, "g\\x1b[31m\\x0a.h5 has "));
    // No precision declared.
    p = problems_of({golden_file}, {result("noprec\x1b.h5", evil, output, std::nullopt)});
    CHECK(has(p, "noprec\\x1b.h5: declares no precision"));
    // Two results for one case.
    p = problems_of({golden_file}, {r_ok, result("twice\x1b.h5", evil, output)});
    CHECK(has(p, "twice\\x1b.h5: case '" + shown + "' already has a result, " + (dir / "ok\\x1b[31m.h5").string()));
    // An output of the wrong shape, a stage that is no stage.
    p = problems_of({golden_file}, {result("shape\x1b.h5", evil, Tensor(DType::f32, {1, 1}))});
    CHECK(has(p, "shape\\x1b.h5: output shape [1, 1] is not hidden_states'"));
    CHECK(has(p, "(case " + shown + ")"));
    golden::ResultFile staged = golden::read_result(r_ok);
    staged.stages["\x1b]0;owned\x07"] = Tensor(DType::f32, {1, 1, 1});
    golden::write_result(dir / "stage.h5", staged);
    p = problems_of({golden_file}, {(dir / "stage.h5").string()});
    CHECK(has(p, "stage '\\x1b]0;owned\\x07' is not a stage of"));
    // A .npy result with more than one --case.
    p = problems_of({golden_file, files[0]}, {(dir / "out\x1b.npy").string()});
    CHECK(has(p, "out\\x1b.npy: a .npy result holds the output alone"));
}
