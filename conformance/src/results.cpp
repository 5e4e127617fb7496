#include "moe/conformance/results.hpp"

#include <algorithm>

#include "moe/golden/golden_file.hpp"

namespace moe::conformance {

CaseParams case_params(const OpAttributes& a) { return {a.expert_type, a.convention, resolve(a)}; }

std::string params_text(const CaseParams& p) {
    const ResolvedParams& r = p.resolved;
    std::string s = std::string(expert_type_name(p.expert_type)) + ", " + std::string(convention_name(p.convention)) +
                    " convention, swish_beta " + golden::shortest_decimal(r.swish_beta);
    if (p.expert_type == ExpertType::gemm2_bias_swiglu_clamp)
        s += ", clamp_limit " + golden::shortest_decimal(r.clamp_limit);
    return s + ", gate_lane " + std::to_string(r.gate_lane) + ", weight_layout " +
           std::string(weight_layout_name(r.weight_layout)) + ", routing_layout " +
           std::string(routing_layout_name(r.routing_layout));
}

std::string_view status_name(Status s) {
    switch (s) {
        case Status::pass: return "PASS";
        case Status::fail: return "FAIL";
        case Status::skip: return "SKIP";
        case Status::xfail: return "XFAIL";
        case Status::xpass: return "XPASS";
        case Status::mistrusted: return "MISTRUSTED";
        case Status::error: return "ERROR";
    }
    return "?";
}

bool fails_run(Status s, bool fail_on_mistrusted) {
    return s == Status::fail || s == Status::error || s == Status::xpass ||
           (fail_on_mistrusted && s == Status::mistrusted);
}

RunSummary summarize(const std::vector<CaseResult>& results) {
    RunSummary s;
    for (const auto& r : results) {
        ++s.total;
        switch (r.status) {
            case Status::pass: ++s.passed; break;
            case Status::fail: ++s.failed; break;
            case Status::skip: ++s.skipped; break;
            case Status::xfail: ++s.xfailed; break;
            case Status::xpass: ++s.xpassed; break;
            case Status::mistrusted: ++s.mistrusted; break;
            case Status::error: ++s.errors; break;
        }
    }
    return s;
}

std::vector<SkipGroup> skip_reasons(const std::vector<CaseResult>& results) {
    std::vector<SkipGroup> groups;  // first-seen order; a suite has a handful of reasons
    for (const auto& r : results) {
        if (r.status != Status::skip) continue;
        auto g = std::find_if(groups.begin(), groups.end(), [&](const SkipGroup& x) { return x.reason == r.reason; });
        if (g == groups.end()) g = groups.insert(groups.end(), SkipGroup{r.reason, 0, {}});
        ++g->count;
        if (std::find(g->backends.begin(), g->backends.end(), r.backend) == g->backends.end())
            g->backends.push_back(r.backend);
    }
    // Stable: equal counts keep the order in which the run met them.
    std::stable_sort(groups.begin(), groups.end(), [](const SkipGroup& a, const SkipGroup& b) { return a.count > b.count; });
    return groups;
}

}  // namespace moe::conformance
