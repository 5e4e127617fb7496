// moe-conform shrink on every selftest mutant: for each, the smallest bundled case of at least
// 1000 input values that catches it is shrunk, written as a golden file, read back, and must still
// fail the same way while being much smaller (for a race whose shrunk case fails only sometimes,
// the next catching case). One test case per mutant family, so that CTest runs the families apart.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "moe/backends/registry.hpp"
#include "moe/golden/golden_file.hpp"
#include "moe/golden/suite.hpp"
#include "bundled_suite.hpp"
#include "moe/shrink/shrink.hpp"
#include "temp_dir.hpp"

using namespace moe;
using namespace moe::shrink;
using moe::conformance::Status;

namespace {

// The bundled cases of at least 1000 input values (so that shrinking has work to do), smallest
// first, then the smaller ones (a mutant that only they catch is shrunk from one of them).
const std::vector<golden::GoldenCase>& cases_by_size() {
    static const std::vector<golden::GoldenCase> cases = [] {
        std::vector<golden::GoldenCase> all;
        for (const auto& f : golden::suite_files(moe::test::kBundledSuite))
            all.push_back(golden::read_golden(f));
        auto size = [](const golden::GoldenCase& c) {
            std::size_t n = 0;
            for (const auto& [name, t] : c.problem.inputs) n += t.size();
            return n;
        };
        std::stable_sort(all.begin(), all.end(), [&](const auto& a, const auto& b) {
            const bool big_a = size(a) >= 1000, big_b = size(b) >= 1000;
            return big_a != big_b ? big_a : size(a) < size(b);
        });
        return all;
    }();
    return cases;
}

void shrink_family(const std::string& family) {
    std::size_t shrunk = 0;
    for (const auto& m : backends::selftest_mutants()) {
        if (m.family != family) continue;
        CAPTURE(m.name);
        auto backend = m.make();
        if (!backend->availability().available) {
            MESSAGE("skipped (unavailable): " << m.name);
            continue;
        }
        const Oracle oracle = make_backend_oracle(*backend, 1);
        // The smallest catching case first. A race (opencl_missing_barrier) can fail a case every
        // time yet shrink to one it fails only sometimes: the shrinker then says so (stable =
        // false), or the case read back fails otherwise, and the next catching case is tried,
        // three at most.
        std::size_t tried = 0;
        bool done = false;
        for (const auto& c : cases_by_size()) {
            if (done || tried == 3) break;
            const Verdict v = oracle(c);
            if (v.status != Status::fail && v.status != Status::error) continue;
            ++tried;
            const golden::GoldenCase* failing = &c;
            CAPTURE(failing->problem.name);
            Options o;
            o.max_seconds = 60;
            const Result r = shrink_case(*failing, oracle, o);
            MESSAGE(m.name << ": " << failing->problem.name << " " << r.before.to_string() << " -> "
                           << r.after.to_string() << " in " << r.runs << " runs" << std::string(r.stable ? "" : ", not stable"));
            if (!r.stable) continue;
            // Written and read back as a golden file, it still fails the same way (a race may
            // not: then the next case).
            test::TempDir dir;
            const auto file = dir / (m.name + ".h5");
            golden::GoldenCase out = r.shrunk;
            out.problem.name = failing->problem.name + "_shrunk";
            golden::write_golden(file, out);
            const Verdict again = oracle(golden::read_golden(file));
            if (!same_failure(r.verdict, again)) {
                MESSAGE(m.name << ": the shrunk " << failing->problem.name << " read back fails otherwise");
                continue;
            }
            // Much smaller: at most a quarter of the non-zero input values, and no size grew.
            CHECK(r.after.nonzero_values * 4 <= std::max<std::size_t>(r.before.nonzero_values, 4));
            CHECK(r.after.T <= r.before.T);
            CHECK(r.after.H <= r.before.H);
            CHECK(r.after.I <= r.before.I);
            CHECK(r.after.E <= r.before.E);
            done = true;
        }
        REQUIRE_MESSAGE(tried > 0, "no bundled case catches " << m.name);
        CHECK_MESSAGE(done, m.name << ": no stable, reproducible shrink from the first " << tried << " catching cases");
        ++shrunk;
    }
    CHECK(shrunk > 0);
}

}  // namespace

TEST_CASE("shrink every loop mutant") { shrink_family("loop"); }
TEST_CASE("shrink every cpu mutant") { shrink_family("cpu"); }
TEST_CASE("shrink every opencl mutant") { shrink_family("opencl"); }
TEST_CASE("shrink every blockwise mutant") { shrink_family("blockwise"); }
TEST_CASE("shrink every expert_parallel mutant") { shrink_family("expert_parallel"); }
