// shrink_isolated: the oracle runs in a worker process, so a crash or a hang is a verdict the
// search keeps (the same signal, a hang) and the case shrinks to the smallest that still crashes
// or hangs; a maker that fails is WorkerFailed; OpenMP still runs in a worker forked after the
// shrinking process ran it; and each bundled case crosses to the worker intact.
#include <doctest/doctest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "case_wire.hpp"
#include "moe/golden/golden_file.hpp"
#include "moe/shrink/shrink.hpp"
#include "moe/spec/error.hpp"
#include "bundled_suite.hpp"

using namespace moe;
using namespace moe::shrink;
using moe::conformance::Status;
using moe::test::kBundledSuite;
using moe::test::bundled_case;

namespace {

golden::GoldenCase medium() { return golden::read_golden(bundled_case("gemm2_medium.h5")); }  // T 67

std::size_t tokens(const golden::GoldenCase& c) { return validate(c.problem).T; }

Verdict failing() { return {Status::fail, "", "1 of 1 elements outside their bound", 0, 0}; }

// A real fault, not raise(): the kernel's own signal.
void segfault() {
    volatile int* volatile nowhere = nullptr;
    *nowhere = 1;
}

Options quick(double candidate_seconds = 0) {
    Options o;
    o.max_seconds = 30;
    o.candidate_seconds = candidate_seconds;
    return o;
}

}  // namespace

TEST_CASE("same_failure: a crash is the same by its signal, a hang is a hang, and neither is a returned ERROR or FAIL") {
    const Verdict segv{Status::error, "", "the backend run crashed its worker process: SIGSEGV", SIGSEGV, 0};
    const Verdict abrt{Status::error, "", "the backend run crashed its worker process: SIGABRT", SIGABRT, 0};
    const Verdict hang{Status::error, "", "the backend run hangs", 0, 10};
    const Verdict same_text_no_crash{Status::error, "", segv.reason, 0, 0};
    CHECK(same_failure(segv, segv));
    CHECK_FALSE(same_failure(segv, abrt));
    CHECK(same_failure(hang, Verdict{Status::error, "", "the backend run hangs", 0, 3}));
    CHECK_FALSE(same_failure(segv, hang));
    CHECK_FALSE(same_failure(hang, segv));
    CHECK_FALSE(same_failure(segv, same_text_no_crash));
    CHECK_FALSE(same_failure(same_text_no_crash, segv));
    CHECK_FALSE(same_failure(failing(), segv));
    CHECK_FALSE(same_failure(failing(), hang));
}

TEST_CASE("shrink_isolated: a case the oracle crashes on shrinks to the fewest tokens that still crash, same signal") {
    // The oracle segfaults on more than 3 tokens and passes the rest: each crash ends a worker,
    // the next run starts another, and the search ends at 4 tokens.
    const OracleMaker make = [] {
        return Oracle([](const golden::GoldenCase& c) {
            if (tokens(c) > 3) segfault();
            return Verdict{};
        });
    };
    const Result r = shrink_isolated(medium(), make, quick());
    CHECK(tokens(r.shrunk) == 4);
    CHECK(r.verdict.status == Status::error);
    CHECK(r.verdict.signal == SIGSEGV);
    CHECK(r.verdict.reason == "the backend run crashed its worker process: SIGSEGV, a segmentation fault: an invalid "
                              "memory access");
    CHECK(r.stable);
    CHECK(r.limit.empty());
}

TEST_CASE("shrink_isolated: a case the oracle hangs on shrinks to the fewest tokens that still hang") {
    // Killed after candidate_seconds, each hanging run is the verdict. The limit bounds the search:
    // the tokens come first, so they are down to 4 when max_seconds ends it.
    const OracleMaker make = [] {
        return Oracle([](const golden::GoldenCase& c) {
            if (tokens(c) > 3)
                for (;;) ::pause();
            return Verdict{};
        });
    };
    Options o = quick(0.2);
    o.max_seconds = 3;
    const auto start = std::chrono::steady_clock::now();
    const Result r = shrink_isolated(medium(), make, o);
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    CHECK(tokens(r.shrunk) == 4);
    CHECK(r.verdict.hung_after == doctest::Approx(0.2));
    CHECK(r.verdict.reason == "the backend run hangs: it had not returned after 0.2 s, and its worker process was killed");
    CHECK(r.stable);
    // The case as given, the search, its last run and two reruns: 3 + 4 x 0.2 s, and the set-up.
    CHECK(took < 8);
}

TEST_CASE("shrink_isolated: an oracle that ends its process is that ERROR; a FAIL is kept as in this process") {
    const OracleMaker exits = [] {
        return Oracle([](const golden::GoldenCase& c) {
            if (tokens(c) > 3) std::_Exit(3);
            return Verdict{};
        });
    };
    const Result r = shrink_isolated(medium(), exits, quick());
    CHECK(tokens(r.shrunk) == 4);
    CHECK(r.verdict.signal == 0);
    CHECK(r.verdict.reason ==
          "the backend run ended its worker process (exited with status 3) before returning; a backend must not call exit()");
    // A failure the oracle returns: the same search as shrink_case, the same result.
    const Oracle fails = [](const golden::GoldenCase& c) { return tokens(c) > 3 ? failing() : Verdict{}; };
    const Result here = shrink_case(medium(), fails, quick());
    const Result there = shrink_isolated(medium(), [&] { return fails; }, quick());
    CHECK(tokens(there.shrunk) == 4);
    CHECK(there.edits == here.edits);
    CHECK(there.runs == here.runs);
    CHECK(there.shrunk.problem.inputs == here.shrunk.problem.inputs);
}

TEST_CASE("shrink_isolated: a maker that throws or crashes is WorkerFailed, before any verdict") {
    const OracleMaker unavailable = []() -> Oracle { throw InputError("backend x is unavailable: no device"); };
    CHECK_THROWS_WITH_AS(shrink_isolated(medium(), unavailable, quick()), "backend x is unavailable: no device",
                         WorkerFailed);
    const OracleMaker crashes = []() -> Oracle {
        segfault();
        return {};
    };
    CHECK_THROWS_WITH_AS(shrink_isolated(medium(), crashes, quick()),
                         doctest::Contains("making the backend in the shrink's worker process failed: the worker was "
                                           "killed by SIGSEGV"),
                         WorkerFailed);
    // A case that does not fail is InputError, as for shrink_case.
    CHECK_THROWS_AS(shrink_isolated(medium(), [] { return Oracle([](const golden::GoldenCase&) { return Verdict{}; }); },
                                    quick()),
                    InputError);
}

TEST_CASE("shrink_isolated: OpenMP runs in the worker after the shrinking process ran a parallel region") {
    // GNU libgomp's pool does not survive fork: without its release before each fork, the worker's
    // first parallel region waited for the parent's threads forever, and every run was a "hang".
    int here = 0;
#pragma omp parallel num_threads(2) reduction(+ : here)
    here += 1;
    REQUIRE(here == 2);
    const OracleMaker make = [] {
        return Oracle([](const golden::GoldenCase& c) {
            int threads = 0;
#pragma omp parallel num_threads(2) reduction(+ : threads)
            threads += 1;
            Verdict v = tokens(c) > 3 ? failing() : Verdict{};
            if (threads != 2) v = {Status::error, "", "the parallel region had " + std::to_string(threads) + " threads"};
            return v;
        });
    };
    const Result r = shrink_isolated(medium(), make, quick(5));
    CHECK(r.verdict.hung_after == 0);
    CHECK(r.verdict.status == Status::fail);
    CHECK(tokens(r.shrunk) == 4);
}

TEST_CASE("case_wire: every bundled case reaches the worker as it was read") {
    // Compressed weights, group scales, gate_idx, seeds, stages, [B, S, H] inputs: all of them.
    std::size_t cases = 0;
    for (const auto& entry : std::filesystem::directory_iterator(kBundledSuite)) {
        if (entry.path().extension() != ".h5") continue;
        CAPTURE(entry.path().string());
        const golden::GoldenCase c = golden::read_golden(entry.path().string());
        const golden::GoldenCase back = wire::decode_case(wire::encode_case(c));
        CHECK(back.problem.name == c.problem.name);
        CHECK(back.problem.attributes.expert_type == c.problem.attributes.expert_type);
        CHECK(back.problem.attributes.convention == c.problem.attributes.convention);
        CHECK(back.problem.attributes.expert_alpha == c.problem.attributes.expert_alpha);
        CHECK(back.problem.attributes.expert_beta == c.problem.attributes.expert_beta);
        CHECK(back.problem.attributes.gate_idx == c.problem.attributes.gate_idx);
        CHECK(back.problem.inputs == c.problem.inputs);
        CHECK(back.seed == c.seed);
        CHECK(back.generator == c.generator);
        CHECK(back.tier == c.tier);
        CHECK(back.description == c.description);
        CHECK(back.exact == c.exact);
        CHECK(back.outputs == c.outputs);
        CHECK(back.stages == c.stages);
        ++cases;
    }
    CHECK(cases > 100);
    const std::string bytes = wire::encode_case(medium());
    CHECK_THROWS_AS(wire::decode_case(bytes.substr(0, bytes.size() - 1)), std::runtime_error);
    const Verdict v{Status::fail, "down", "1 of 2 elements", SIGBUS, 1.5};
    const Verdict w = wire::decode_verdict(wire::encode_verdict(v));
    CHECK(w.status == v.status);
    CHECK(w.stage == v.stage);
    CHECK(w.reason == v.reason);
    CHECK(w.signal == v.signal);
    CHECK(w.hung_after == v.hung_after);
}
