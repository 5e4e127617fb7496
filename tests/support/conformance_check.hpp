#pragma once
// Judging a backend's result the way moe-conform does, not by a threshold of the test's own:
// golden_case() builds, for a problem, exactly the golden case the generator writes (the
// reference output, the dense reading's where non-finite data makes it differ, the error-term
// magnitudes /outputs/bound_<term>; with_stages: the reference's stages), and verdict() /
// stage_verdict() run the product's comparison (conformance::compare_output,
// conformance::first_divergent_stage) with the backend's declared precision.
//
//   const auto c = test::golden_case(p);
//   CHECK(test::verdict(c, backend.run(p, false).output, backend.precision(dtype)) == "PASS");
//
// Link moe_conformance and moe_generator.
#include <map>
#include <string>

#include "moe/conformance/compare.hpp"
#include "moe/generator/golden_builder.hpp"

namespace moe::test {

inline golden::GoldenCase golden_case(const Problem& p, bool with_stages = false) {
    golden::GoldenCase c;
    c.problem = p;
    generator::compute_outputs(c, {with_stages, 1});
    return c;
}

// "PASS", or the comparison's status and reason ("FAIL: 3 of 60 elements outside their bound
// ..."), so that a failing CHECK shows why.
inline std::string verdict(const golden::GoldenCase& c, const Tensor& got, const Precision& precision) {
    const conformance::Comparison r = conformance::compare_output(c, got, precision, 1);
    if (r.status == conformance::Status::pass) return "PASS";
    return std::string(conformance::status_name(r.status)) + ": " + r.reason;
}

// "PASS" when every stage the backend returned is within its bounds, else the first stage (in
// pipeline order) that leaves them, with its worst element.
inline std::string stage_verdict(const golden::GoldenCase& c, const std::map<std::string, Tensor>& got,
                                 const Precision& precision) {
    const auto d = conformance::first_divergent_stage(c, got, precision, 1);
    if (!d) return "PASS";
    return "stage " + d->stage + " diverges: token " + std::to_string(d->token) + ", slot " +
           std::to_string(d->slot) + ", feature " + std::to_string(d->feature) + ", " +
           std::to_string(d->worst_ratio) + " x bound";
}

}  // namespace moe::test
