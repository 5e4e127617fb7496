#include "moe/conformance/results.hpp"

namespace moe::conformance {

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

}  // namespace moe::conformance
