// The selftest verdict (conformance::run_selftest): a mutant is caught when a case FAILs or ERRORs
// on it, missed otherwise; an unavailable one is SKIPPED and counts neither way; the selftest
// passes when every runnable mutant is caught and every available correct backend is clean.
#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "moe/conformance/selftest.hpp"
#include "runner_fixtures.hpp"

using namespace moe;
using namespace moe::conformance;
using test::Behaviour;
using test::ScriptedBackend;

namespace {

Mutant mutant(const std::string& name, Behaviour b) {
    return {name, "scripted", "plants " + name, [name, b] { return std::make_unique<ScriptedBackend>("mutant:" + name, b); }};
}


}  // namespace

TEST_CASE("caught, missed and unavailable mutants") {
    test::TempDir dir;
    const auto files = test::write_suite(dir);
    ScriptedBackend good("good", Behaviour::correct);
    const std::vector<Mutant> mutants = {mutant("wrong", Behaviour::wrong_output), mutant("harmless", Behaviour::correct),
                                         mutant("offline", Behaviour::unavailable), mutant("crash", Behaviour::throws)};
    const SelftestReport r = run_selftest(test::quiet_options(files), {&good}, mutants);
    CHECK(r.input_errors.empty());
    REQUIRE(r.correct.size() == 1);
    CHECK(r.correct[0].name == "good");
    CHECK(r.correct[0].clean());
    CHECK(r.correct[0].summary.passed == 3);
    CHECK(r.correct[0].worst_ratio == 0.0);
    REQUIRE(r.mutants.size() == 4);

    const MutantVerdict &wrong = r.mutants[0], &harmless = r.mutants[1], &offline = r.mutants[2], &crash = r.mutants[3];
    CHECK(wrong.name == "wrong");
    CHECK(wrong.family == "scripted");
    CHECK(wrong.description == "plants wrong");
    CHECK(wrong.caught());
    CHECK(wrong.cases == 3);
    CHECK(wrong.caught_by == 3);
    REQUIRE(wrong.first_catch);
    CHECK(wrong.first_catch->case_name == "alpha");
    CHECK(wrong.first_catch->status == Status::fail);

    CHECK_FALSE(harmless.caught());
    CHECK(harmless.cases == 3);
    CHECK(harmless.caught_by == 0);
    CHECK_FALSE(harmless.first_catch);

    REQUIRE(offline.unavailable);
    CHECK(*offline.unavailable == "no device in this test");
    CHECK(offline.cases == 0);

    CHECK(crash.caught());  // ERROR counts as caught
    CHECK(crash.first_catch->status == Status::error);

    // The unavailable mutant counts neither way; the missed one fails the selftest.
    CHECK(r.runnable_mutants() == 3);
    CHECK(r.caught_mutants() == 2);
    CHECK_FALSE(r.passed());
}

// A mutant that a case SKIPs (it declares that case unsupported) has not been shown wrong: a skip
// says nothing about its arithmetic, and counting it would let a mutant that declares everything
// unsupported score as caught.
TEST_CASE("a SKIP is no catch: a mutant that skips a case and passes the others is missed") {
    test::TempDir dir;
    const auto files = test::write_suite(dir);
    ScriptedBackend good("good", Behaviour::correct);
    const SelftestReport r = run_selftest(test::quiet_options(files), {&good}, {mutant("f16less", Behaviour::no_f16)});
    REQUIRE(r.mutants.size() == 1);
    REQUIRE(r.mutants[0].cells.size() == 3);
    CHECK(r.mutants[0].cells[1].status == Status::skip);  // beta, the f16 case
    CHECK_FALSE(r.mutants[0].caught());
    CHECK(r.mutants[0].caught_by == 0);
    CHECK_FALSE(r.passed());
}

TEST_CASE("passed(): every runnable mutant caught, every available correct backend clean") {
    test::TempDir dir;
    const auto files = test::write_suite(dir);
    ScriptedBackend good("good", Behaviour::correct), absent("absent", Behaviour::unavailable),
        partial("partial", Behaviour::no_f16), broken("broken", Behaviour::wrong_output),
        crashing("crashing", Behaviour::throws);
    const std::vector<Mutant> caught = {mutant("wrong", Behaviour::wrong_output), mutant("offline", Behaviour::unavailable)};

    SelftestReport r = run_selftest(test::quiet_options(files), {&good, &absent, &partial}, caught);
    CHECK(r.runnable_mutants() == 1);
    CHECK(r.caught_mutants() == 1);
    // An unavailable correct backend is reported with its reason and does not fail the run; a
    // SKIP (unsupported case) is not a problem either.
    REQUIRE(r.correct.size() == 3);
    REQUIRE(r.correct[1].unavailable);
    CHECK(*r.correct[1].unavailable == "no device in this test");
    CHECK_FALSE(r.correct[1].clean());
    CHECK(r.correct[2].clean());
    CHECK(r.correct[2].summary.skipped == 1);
    CHECK(r.passed());

    // A correct backend that fails a case: listed with the case, and the selftest fails.
    r = run_selftest(test::quiet_options(files), {&good, &broken}, caught);
    REQUIRE(r.correct.size() == 2);
    CHECK_FALSE(r.correct[1].clean());
    CHECK(r.correct[1].problems.size() == 3);
    CHECK(r.correct[1].worst_ratio > 1.0);
    CHECK(r.caught_mutants() == r.runnable_mutants());
    CHECK_FALSE(r.passed());
    // ERROR is a problem too.
    r = run_selftest(test::quiet_options(files), {&crashing}, caught);
    REQUIRE(r.correct.size() == 1);
    REQUIRE(r.correct[0].problems.size() == 3);
    CHECK(r.correct[0].problems[0].status == Status::error);
    CHECK(r.correct[0].summary.errors == 3);
    CHECK_FALSE(r.passed());

    // Only unavailable mutants: nothing to catch, nothing missed.
    r = run_selftest(test::quiet_options(files), {&good}, {mutant("offline", Behaviour::unavailable)});
    CHECK(r.runnable_mutants() == 0);
    CHECK(r.passed());
}

TEST_CASE("a bad golden file stops the selftest as an input error") {
    test::TempDir dir;
    auto files = test::write_suite(dir);
    const std::string junk = (dir / "junk.h5").string();
    std::ofstream(junk) << "not an HDF5 file";
    files.push_back(junk);
    ScriptedBackend good("good", Behaviour::correct);
    const SelftestReport r = run_selftest(test::quiet_options(files), {&good}, {mutant("wrong", Behaviour::wrong_output)});
    REQUIRE(r.input_errors.size() == 1);
    CHECK(r.input_errors[0].find("junk.h5") != std::string::npos);
    CHECK(r.mutants.empty());  // stopped before the mutants
    CHECK_FALSE(r.passed());
}

TEST_CASE("the catch matrix: one cell per case and row, the score, and its JSON document") {
    test::TempDir dir;
    const auto files = test::write_suite(dir);
    ScriptedBackend good("good", Behaviour::correct), partial("partial", Behaviour::no_f16);
    const std::vector<Mutant> mutants = {mutant("wrong", Behaviour::wrong_output), mutant("harmless", Behaviour::correct),
                                         mutant("offline", Behaviour::unavailable)};
    const SelftestReport r = run_selftest(test::quiet_options(files), {&good, &partial}, mutants);
    CHECK(r.cases == std::vector<std::string>{"alpha", "beta", "gamma"});
    REQUIRE(r.mutants.size() == 3);
    REQUIRE(r.mutants[0].cells.size() == 3);
    for (const auto& c : r.mutants[0].cells) CHECK(c.status == Status::fail);
    CHECK(r.mutants[0].cells[1].case_name == "beta");
    CHECK(r.mutants[0].cells[0].worst_ratio > 1.0);
    for (const auto& c : r.mutants[1].cells) CHECK(c.status == Status::pass);
    CHECK(r.mutants[2].cells.empty());
    CHECK(r.correct[1].cells.at(1).status == Status::skip);  // partial: no f16
    CHECK(r.mutation_score() == 0.5);                          // 1 of 2 runnable

    const std::string file = (dir / "selftest.json").string();
    RunInfo info;
    info.tool_version = "moe-conform 0.1.0";
    info.suite = dir.path().string();
    write_selftest_json(file, info, r);
    std::ifstream in(file);
    const nlohmann::json doc = nlohmann::json::parse(in);
    CHECK(doc["format"] == "moe-selftest");
    CHECK(doc["score"]["caught"] == 1);
    CHECK(doc["score"]["runnable"] == 2);
    CHECK(doc["score"]["skipped"] == 1);
    CHECK(doc["score"]["value"] == 0.5);
    CHECK(doc["passed"] == false);
    CHECK(doc["cases"] == nlohmann::json::array({"alpha", "beta", "gamma"}));
    CHECK(doc["mutants"][0]["statuses"] == nlohmann::json::array({"FAIL", "FAIL", "FAIL"}));
    CHECK(doc["mutants"][0]["first_catch"]["case"] == "alpha");
    CHECK(doc["mutants"][1]["statuses"] == nlohmann::json::array({"PASS", "PASS", "PASS"}));
    CHECK(doc["mutants"][1]["first_catch"].is_null());
    CHECK(doc["mutants"][2]["unavailable"] == "no device in this test");
    CHECK(doc["mutants"][2]["statuses"].empty());
    CHECK(doc["correct"][1]["statuses"] == nlohmann::json::array({"PASS", "SKIP", "PASS"}));
    // The schema and the document's own consistency, checked without our code.
    const std::string check = std::string("/usr/bin/python3 ") + MOE_SOURCE_DIR +
                              "/tests/python/check_selftest_json.py " + file + " " + MOE_SOURCE_DIR +
                              "/spec/selftest.schema.json --expect-mutants 3 > /dev/null";
    CHECK(std::system(check.c_str()) == 0);

    // A case name with bytes that are not UTF-8 (golden files are untrusted): written as U+FFFD.
    SelftestReport odd = r;
    odd.cases[0] = "alpha\xFF";
    write_selftest_json(file, info, odd);
    std::ifstream again(file);
    CHECK(nlohmann::json::parse(again)["cases"][0] == "alpha\xEF\xBF\xBD");
}
