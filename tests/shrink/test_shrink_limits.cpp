// The limits of a shrink that a hang or a mistyped case name meets (tools/shrink): the timer
// (conformance::StepTimer) on each backend run and the default limit derived from the case as given; a missing --case
// named with its suite and a close name.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "bundled_suite.hpp"
#include "conformance_check.hpp"
#include "moe/shrink/case_in_suite.hpp"
#include "moe/conformance/step_timer.hpp"
#include "moe/shrink/candidate_limit.hpp"
#include "moe/shrink/shrink.hpp"
#include "moe/spec/error.hpp"
#include "small_cases.hpp"
#include "text_contains.hpp"

using namespace moe;
using namespace moe::shrink;
using moe::conformance::Status;
using moe::test::has;

namespace {

std::string message_of(const std::string& file) {
    try {
        check_case_exists(file);
    } catch (const InputError& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST_CASE("default_candidate_seconds: ten times the case as given, at least 10 s, at most the search's budget") {
    CHECK(default_candidate_seconds(0.001, 120) == 10);   // the floor: a first run at a new shape may compile
    CHECK(default_candidate_seconds(3, 120) == 30);
    CHECK(default_candidate_seconds(60, 120) == 120);     // a run longer than the whole search has overrun it
    CHECK(default_candidate_seconds(0.001, 1e-9) == 10);  // a tiny --max-seconds does not make every run a hang
    CHECK(default_candidate_seconds(60, 1e-9) == 10);
}

TEST_CASE("StepTimer: a step past its time is reported once (every 0), with what it ran; a step that ends is not") {
    std::promise<std::string> told;
    std::atomic<int> calls{0};
    conformance::StepTimer timer([&](const std::string& what, double seconds) {
        if (calls++ == 0) told.set_value(what + (seconds >= 0.05 ? " after its time" : " early"));
    });
    timer.begin("a quick one", 3600);
    timer.end();
    // This "run" waits for the report itself: only the timer ends it (the minute only bounds the
    // test should the timer not fire; nothing is measured).
    auto report = told.get_future();
    timer.begin("the stuck one", 0.05);
    REQUIRE(report.wait_for(std::chrono::minutes(1)) == std::future_status::ready);
    const std::string said = report.get();
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // no second call for this step
    timer.end();
    CHECK(said == "the stuck one after its time");
    CHECK(calls == 1);
}

TEST_CASE("StepTimer: with `every`, a step is reported again until it ends, and never after") {
    std::mutex m;
    std::condition_variable cv;
    std::vector<std::string> calls;
    conformance::StepTimer timer([&](const std::string& what, double) {
        const std::lock_guard<std::mutex> lock(m);
        calls.push_back(what);
        cv.notify_all();
    });
    timer.begin("slow", 0.01, 0.01);
    {
        std::unique_lock<std::mutex> lock(m);
        REQUIRE(cv.wait_for(lock, std::chrono::minutes(1), [&] { return calls.size() >= 3; }));
    }
    timer.end();  // waits for a call in progress: none comes after it
    std::size_t at_end;
    {
        const std::lock_guard<std::mutex> lock(m);
        at_end = calls.size();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const std::lock_guard<std::mutex> lock(m);
    CHECK(calls.size() == at_end);
    CHECK(calls.front() == "slow");
}

TEST_CASE("shrink_case with a watchdog: a candidate that hangs is reported with its edit and size; the limit derives "
          "from the case as given") {
    const auto c = test::golden_case(test::small_problem(ExpertType::gemm2_bias_swiglu_clamp, Convention::spec, 7, 12, 6, 5, 2), true);
    std::promise<void> released;
    auto release = released.get_future().share();
    std::string running;
    double limit = 0;
    bool hung = false;
    // Fails every case; "hangs" on one token until the watchdog has reported it (then returns
    // another failure, so that the search goes on without it, as a test may let it).
    const Oracle hangs_on_one_token = [&](const golden::GoldenCase& g) {
        if (validate(g.problem).T == 1) {
            if (!hung) release.wait_for(std::chrono::minutes(1));  // a bound on the test should no watchdog fire
            hung = true;
            return Verdict{Status::error, "", "hung"};
        }
        return Verdict{Status::fail, "act", "planted"};
    };
    Options o;
    o.candidate_seconds = 0.05;
    o.overrun = [&](const std::string& what, double seconds) {
        if (!running.empty()) return;
        running = what;
        limit = seconds;
        released.set_value();
    };
    const Result r = shrink_case(c, hangs_on_one_token, o);
    CAPTURE(running);
    CHECK(has(running, "the candidate 'tokens "));
    CHECK(has(running, "-> 1' (T 1, K "));
    CHECK(limit == 0.05);
    CHECK(r.candidate_seconds == 0.05);
    CHECK(r.after.T == 2);  // the hung candidate was not kept
    // Not given: the case as given (microseconds here) sets it, at the floor.
    const Oracle fails = [](const golden::GoldenCase&) { return Verdict{Status::fail, "act", "planted"}; };
    Options derived;
    derived.max_runs = 3;
    derived.overrun = [](const std::string&, double) {};
    CHECK(shrink_case(c, fails, derived).candidate_seconds == kMinCandidateSeconds);
}

TEST_CASE("closest_name: a typo or a missing .h5 finds the case; a different name does not") {
    const std::vector<std::string> names = {"gemm2_medium.h5", "gemm2_small.h5", "gemm3_single_token.h5"};
    CHECK(closest_name("gemm2_mediun.h5", names) == "gemm2_medium.h5");
    CHECK(closest_name("gemm2_medium", names) == "gemm2_medium.h5");
    CHECK(closest_name("gemm3_single_tokens.h5", names) == "gemm3_single_token.h5");
    CHECK_FALSE(closest_name("qwen_large.h5", names));
    CHECK_FALSE(closest_name("x.h5", {}));
}

TEST_CASE("check_case_exists: a missing file in a suite names the suite and a close case; elsewhere, no such file") {
    const std::string suite = moe::test::kBundledSuite;
    CHECK(message_of(suite + "/gemm2_medium.h5").empty());
    const std::string typo = message_of(suite + "/gemm2_mediun.h5");
    CAPTURE(typo);
    CHECK(has(typo, "--case " + suite + "/gemm2_mediun.h5: no case gemm2_mediun.h5 in the suite " + suite +
                        " (its MANIFEST.sha256 lists "));
    CHECK(has(typo, "; did you mean " + suite + "/gemm2_medium.h5?"));
    CHECK_FALSE(has(message_of(suite + "/nothing_like_any_case.h5"), "did you mean"));
    const std::string elsewhere = (std::filesystem::temp_directory_path() / "moe_no_such_case.h5").string();
    CHECK(message_of(elsewhere) == "--case " + elsewhere + ": no such file");
}
