// The runner's expectations where they meet other verdicts and selections: an XFAIL entry whose
// case now passes as MISTRUSTED, and entries matching case names as --filter does (stored or
// printed). The plain XFAIL / XPASS / SKIP rules are in test_runner.cpp.
#include <doctest/doctest.h>

#include <set>
#include <string>
#include <vector>

#include "conformance_check.hpp"
#include "moe/conformance/expectations.hpp"
#include "moe/conformance/runner.hpp"
#include "runner_fixtures.hpp"
#include "text_contains.hpp"

using namespace moe;
using namespace moe::conformance;
using test::Behaviour;
using test::ScriptedBackend;
using moe::test::has;

namespace {

// A golden file named `name` whose reference output is zero everywhere (every routing weight 0):
// a correct backend passes it, and the comparison proves nothing, so it is MISTRUSTED.
std::string write_zero_output_case(const test::TempDir& dir, const std::string& name) {
    Problem p = test::small_problem(ExpertType::gemm3_swiglu, Convention::openvino);
    p.name = name;
    Tensor& w = p.inputs[kRoutingWeights];
    for (std::size_t i = 0; i < w.size(); ++i) w.set(i, 0.0);
    const std::string file = (dir / (name + ".h5")).string();
    golden::write_golden(file, test::golden_case(p));
    return file;
}

}  // namespace

TEST_CASE("an XFAIL entry whose case now passes as MISTRUSTED is XPASS: the entry is stale, and the run fails") {
    test::TempDir dir;
    const std::string file = write_zero_output_case(dir, "zeros");
    ScriptedBackend good("good", Behaviour::correct);
    RunOptions o = test::quiet_options({file});
    RunOutcome r = run_suite(o, {&good});
    REQUIRE(r.input_errors.empty());
    REQUIRE(r.results.size() == 1);
    REQUIRE(r.results[0].status == Status::mistrusted);  // no entry: MISTRUSTED, exit 0
    const std::string why = r.results[0].reason;
    CHECK(run_exit_code(r) == 0);

    o.expectations = {{"good", "zeros", Status::fail, "zeros come out wrong", "T-7"}};
    r = run_suite(o, {&good});
    REQUIRE(r.results.size() == 1);
    const CaseResult& x = r.results[0];
    CHECK(x.status == Status::xpass);  // was MISTRUSTED, exit 0: the stale entry went unseen
    CHECK(x.ticket == "T-7");
    CHECK(has(x.reason, "listed as failing (zeros come out wrong) but passes, as MISTRUSTED (" + why + ")"));
    CHECK(has(x.reason, "update the expectation file"));
    CHECK(x.metrics.elements == 60);  // the comparison's figures stay
    CHECK(summarize(r.results).xpassed == 1);
    CHECK(run_exit_code(r) == 1);
    CHECK(unused_expectations(o.expectations, r.results).empty());

    // A SKIP entry still wins: the case is not run.
    o.expectations = {{"good", "zeros", Status::skip, "not here", ""}};
    CHECK(run_suite(o, {&good}).results.at(0).status == Status::skip);
}

TEST_CASE("expectation entries match case names as --filter does: as stored in the file or as printed") {
    // Three names that print with backslashes: a newline, the six characters x\x0ay as typed
    // (printed x\\x0ay), and a tab. For every glob, the cases an entry applies to are the cases
    // --filter selects. (Entries matched the printed name alone: "x\ny" or "tab\tname", a name as
    // stored, selected its case with --filter and applied to nothing as an entry.)
    test::TempDir dir;
    const auto files = test::write_suite(dir, {{"alpha", "ci", ExpertType::gemm3_swiglu, Convention::openvino, DType::f32}});
    golden::GoldenCase c = golden::read_golden(files[0]);
    std::vector<std::string> all;
    const std::vector<std::pair<std::string, std::string>> named = {
        {"x\ny", "newline.h5"}, {"x\\x0ay", "typed.h5"}, {"tab\tname", "tab.h5"}};
    for (const auto& [name, file] : named) {
        c.problem.name = name;
        all.push_back((dir / file).string());
        golden::write_golden(all.back(), c);
    }
    ScriptedBackend b("scripted", Behaviour::correct);
    const std::vector<std::string> globs = {"x\ny",        "x\\x0ay",      "x\\\\x0ay", "x?y",  "tab\tname",
                                            "tab\\x09name", "tab?name",     "*\\x*",     "*\\\\*", "x*"};
    for (const auto& glob : globs) {
        CAPTURE(glob);
        RunOptions selected = test::quiet_options(all);
        selected.filters = {glob};
        std::set<std::string> by_filter;
        for (const auto& r : run_suite(selected, {&b}).results) by_filter.insert(r.case_name);

        RunOptions listed = test::quiet_options(all);
        listed.expectations = {{"*", glob, Status::skip, "listed", ""}};
        const RunOutcome out = run_suite(listed, {&b});
        REQUIRE(out.results.size() == 3);
        std::set<std::string> by_entry;
        for (const auto& r : out.results)
            if (r.status == Status::skip) by_entry.insert(r.case_name);
        CHECK(by_entry == by_filter);
        // The note of unused entries judges the results as the run did.
        CHECK(unused_expectations(listed.expectations, out.results).empty() == !by_entry.empty());
    }
    // The globs that tell the names apart still do.
    RunOptions o = test::quiet_options(all);
    o.expectations = {{"*", "x\ny", Status::skip, "the newline one", ""}};
    const RunOutcome out = run_suite(o, {&b});
    REQUIRE(out.results.size() == 3);
    CHECK(out.results[0].status == Status::skip);
    CHECK(out.results[1].status == Status::pass);
    CHECK(out.results[2].status == Status::pass);
    CHECK(find_expectation(o.expectations, "scripted", "x\\x0ay") == &o.expectations[0]);  // printed newline
    CHECK(find_expectation(o.expectations, "scripted", "x\\\\x0ay") == nullptr);             // printed typed
}
