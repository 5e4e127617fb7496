#pragma once
// What a conformance run produces: one CaseResult per (case file, backend), in run order. The
// text, JSON and JUnit reports are three views of this structure (spec/report-format.md).
#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "moe/spec/problem.hpp"

namespace moe::conformance {

enum class Status {
    pass,        // every element within its bound
    fail,        // some element outside its bound (or wrong shape, or a non-finite class mismatch)
    skip,        // not run: backend unavailable, case unsupported, or listed as SKIP; reason given
    xfail,       // failed, and an expectation file lists it as failing (reason, ticket)
    xpass,       // passed although an expectation file lists it as failing: the list is stale
    mistrusted,  // passed, but the comparison is vacuous (output mostly zeros, activation saturated)
    error,       // the backend threw; message given
};
std::string_view status_name(Status s);  // "PASS", "FAIL", ...
// Whether a result of this status fails the run (exit 1, spec/report-format.md, section 2): FAIL,
// ERROR and XPASS always; MISTRUSTED only when the run was asked to (--fail-on-mistrusted: a CI
// that must not accept a pass the suite cannot tell from a wrong answer). One rule for the exit
// code and for every report that calls a result a failure.
bool fails_run(Status s, bool fail_on_mistrusted);

// One element of the output, with its bound.
struct ElementReport {
    std::size_t token = 0, feature = 0;
    double reference = 0, got = 0, bound = 0;
};

// error/bound over the output's [token, feature] plane, downsampled to at most 64 x 64 cells,
// each the largest ratio of the elements it covers (inf where a zero-tolerance element differs or
// a class does not match): a dropped tile edge or a wrong row shows as a stripe. Cell (r, c)
// covers tokens [r T / rows, (r + 1) T / rows) and features [c H / cols, (c + 1) H / cols).
struct RatioGrid {
    static constexpr std::size_t kMaxSide = 64;
    std::size_t tokens = 0, features = 0;  // the output's T and H
    std::size_t rows = 0, cols = 0;        // min(T, 64), min(H, 64)
    std::vector<double> cells;             // rows * cols, row-major
    double at(std::size_t r, std::size_t c) const { return cells[r * cols + c]; }
};

struct Metrics {
    std::size_t elements = 0;        // compared elements
    std::size_t over_bound = 0;      // elements outside their bound
    double max_abs_error = 0;
    double max_rel_error = 0;        // over elements with a non-zero reference
    double max_ulps = 0;             // |got - ref| in ulps of the compute type at ref
    double worst_ratio = 0;          // max |got - ref| / bound (headroom on PASS: < 1)
    std::optional<ElementReport> worst;       // the element of worst_ratio
    std::vector<ElementReport> violations;    // at most 10, in index order
    std::optional<RatioGrid> ratio_grid;      // failing comparisons only (compare_output)
};

struct StageDivergence {
    std::string stage;        // first stage in pipeline order whose error exceeds its bound
    double worst_ratio = 0;
    std::size_t token = 0, slot = 0, feature = 0;
    double reference = 0, got = 0, bound = 0;
    // Every stage compared, in pipeline order, with its worst error/bound: where the error
    // enters and how it grows.
    std::vector<std::pair<std::string, double>> per_stage{};
};

// The op's parameters for a case: its expert type and convention, and the parameters resolve()
// makes of its attributes (spec/README.md, section 4). A FAIL's types and element tables do not
// say why; these often do (a kernel with SiLU or GPT-OSS's 1.702/7.0 compiled in fails exactly
// the cases whose swish_beta or clamp_limit differ).
struct CaseParams {
    ExpertType expert_type = ExpertType::gemm2_bias_swiglu_clamp;
    Convention convention = Convention::openvino;
    ResolvedParams resolved;
};
CaseParams case_params(const OpAttributes& a);  // resolve(a), with a's type and convention
// One line in spec/README's names: "GEMM2_BIAS_SWIGLU_CLAMP, openvino convention, swish_beta
// 1.702, clamp_limit 7, gate_lane 0, weight_layout NK, routing_layout compact" (clamp_limit for
// GEMM2 alone; numbers in the fewest digits that read back as the same double).
std::string params_text(const CaseParams& p);

struct CaseResult {
    std::string case_name;
    std::string file;
    std::string backend;
    std::string data_type;      // f32, ...
    std::string compute_type;   // the backend's declared compute type for it
    std::string storage_type;
    // The type it declared for dequantised weights, on a case with compressed weights ("" on
    // others): a bound is as wide as this type's rounding where the weights need it.
    std::string dequant_type;
    bool exact = false;         // compared with a zero tolerance
    Status status = Status::pass;
    std::string reason;         // skip/xfail/mistrusted/error reason, or the failure summary
    std::string ticket;         // from the expectation file
    double seconds = 0;         // backend run time
    Metrics metrics;
    std::optional<StageDivergence> first_divergent_stage;
    // A failing output whose returned stages were compared and every one is within its bound:
    // those stages, in pipeline order, with their worst error/bound. The error enters after
    // them (the routing-weighted sum over the top-k slots, or the output's rounding), which a
    // null first_divergent_stage alone cannot tell from "no stages returned". Empty otherwise.
    std::vector<std::pair<std::string, double>> stages_within_bound;
    std::string repro;          // command line that reruns exactly this case on this backend
    std::optional<CaseParams> params;  // absent when the case's file was not read
};

struct RunSummary {
    std::size_t total = 0, passed = 0, failed = 0, skipped = 0, xfailed = 0, xpassed = 0, mistrusted = 0,
                errors = 0;
};

RunSummary summarize(const std::vector<CaseResult>& results);

// The SKIP results grouped by their reason (verbatim), most frequent first, ties in order of
// first appearance: a plugin that declines most of the suite, or a supports() that over-declines,
// shows what it declined at a glance instead of as a bare skip count.
struct SkipGroup {
    std::string reason;
    std::size_t count = 0;
    std::vector<std::string> backends;  // that gave this reason, in first-seen order
};
std::vector<SkipGroup> skip_reasons(const std::vector<CaseResult>& results);

}  // namespace moe::conformance
