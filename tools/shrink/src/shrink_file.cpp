#include "moe/shrink/shrink_file.hpp"

#include "moe/conformance/case_file_name.hpp"
#include "moe/golden/stored_results.hpp"
#include "moe/spec/printable.hpp"
#include "moe/spec/problem.hpp"

namespace moe::shrink {

namespace {

std::string verdict_text(const Verdict& v) {
    std::string t(conformance::status_name(v.status));
    if (!v.stage.empty()) t += " (first divergent stage " + v.stage + ")";
    return t + ": " + v.reason;
}

}  // namespace

golden::GoldenCase read_failing_case(const std::string& file, int threads) {
    golden::GoldenCase c = golden::read_golden(file);
    validate(c.problem);
    golden::check_stored_results(file, c, {golden::StoredResultsOptions{}.max_tokens, threads});
    return c;
}

std::string default_output(const golden::GoldenCase& original) {
    return conformance::case_file_stem(original.problem.name + "_shrunk") + ".h5";
}

namespace {

void name_and_write(const std::string& file, const golden::GoldenCase& original, golden::GoldenCase& out,
                    const std::string& how) {
    out.problem.name = original.problem.name + "_shrunk";
    out.generator = "moe-conform shrink";
    // The original's description told its shapes and values ("a token's weights sum to 2"),
    // which the shrunk case no longer has: kept only as what it is, the original's.
    out.description = "Shrunk from case " + original.problem.name + " " + how +
                      ": a smaller case that fails the same way; its shapes and values are the search's, not the "
                      "original's." +
                      (original.description.empty() ? "" : " Original description: " + original.description);
    golden::write_golden(file, out);  // atomically: a kill mid-write leaves the previous case
}

}  // namespace

void write_shrunk(const std::string& file, const golden::GoldenCase& original, Result& r, const std::string& backend) {
    name_and_write(file, original, r.shrunk,
                   "for backend " + backend + " (" + std::to_string(r.edits.size()) + " edits, " +
                       std::to_string(r.runs) + " runs)");
}

void write_partial(const std::string& file, const golden::GoldenCase& original, const golden::GoldenCase& current,
                   const std::string& backend) {
    golden::GoldenCase out = current;
    name_and_write(file, original, out, "for backend " + backend + " (the search had not finished)");
}

std::string summary_lines(const golden::GoldenCase& original, const Result& r, const std::string& backend) {
    return "shrunk " + printable(original.problem.name) + " for " + printable(backend) + " in " +
           std::to_string(r.runs) + " runs (" + std::to_string(r.edits.size()) + " edits)\n" +
           "  before: " + r.before.to_string() + "\n" + "  after:  " + r.after.to_string() +
           (r.shrunk.exact ? " (exact by construction)" : "") + "\n" + "  still:  " + verdict_text(r.verdict) + "\n" +
           (r.limit.empty() ? "" : "  stopped early: the search reached " + r.limit +
                                       " before it tried every edit, so the case may shrink further\n") +
           (r.stable ? "" : "  warning: two more runs did not both fail the same way: the backend is not deterministic\n");
}

}  // namespace moe::shrink
