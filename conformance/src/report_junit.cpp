// The JUnit XML report (spec/report-format.md, "JUnit XML report"): a <testsuites> root, one
// <testsuite> per backend, one <testcase> per result.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "moe/conformance/reports.hpp"
#include "moe/conformance/text_file.hpp"
#include "utf8_text.hpp"

namespace moe::conformance {

namespace detail {
// Defined in report_text.cpp.
void write_case_details(std::ostream& out, const CaseResult& r);
}  // namespace detail

namespace {

// XML 1.0 text (after valid_utf8): the five special characters as entities; in attributes also
// tab, newline and carriage return as character references (so they survive attribute-value
// normalisation); other control characters, which XML 1.0 cannot carry at all, as the visible
// text "\xNN".
std::string escape(const std::string& raw, bool attribute) {
    const std::string s = valid_utf8(raw);
    std::string out;
    out.reserve(s.size() + s.size() / 8);
    for (char ch : s) {
        const auto c = static_cast<unsigned char>(ch);
        switch (c) {
            case '&': out += "&amp;"; break;
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '"': out += "&quot;"; break;
            case '\'': out += "&apos;"; break;
            case '\t': out += attribute ? "&#9;" : "\t"; break;
            case '\n': out += attribute ? "&#10;" : "\n"; break;
            case '\r': out += "&#13;"; break;
            default:
                if (c < 0x20) {
                    char buf[8];
                    std::snprintf(buf, sizeof buf, "\\x%02X", static_cast<unsigned>(c));
                    out += buf;
                } else {
                    out += ch;
                }
        }
    }
    return out;
}

std::string attr(const std::string& s) { return escape(s, true); }
std::string text(const std::string& s) { return escape(s, false); }

// JUnit times are non-negative decimals; anything else (NaN, negative) is written as 0.
std::string seconds(double v) {
    if (!std::isfinite(v) || v < 0) v = 0;
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.3f", v);
    return buf;
}

std::string number(double v) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.9g", v);
    return buf;
}

struct Counts {
    bool fail_on_mistrusted = false;  // RunInfo's: a MISTRUSTED result then counts as a failure
    std::size_t tests = 0, failures = 0, errors = 0, skipped = 0;
    double time = 0;
    void add(const CaseResult& r) {
        ++tests;
        switch (r.status) {
            case Status::fail:
            case Status::xpass: ++failures; break;
            case Status::error: ++errors; break;
            case Status::mistrusted: ++(fail_on_mistrusted ? failures : skipped); break;
            case Status::skip:
            case Status::xfail: ++skipped; break;
            case Status::pass: break;
        }
        if (std::isfinite(r.seconds) && r.seconds > 0) time += r.seconds;
    }
    std::string attributes() const {
        return " tests=\"" + std::to_string(tests) + "\" failures=\"" + std::to_string(failures) +
               "\" errors=\"" + std::to_string(errors) + "\" skipped=\"" + std::to_string(skipped) + "\"";
    }
};

void write_property(std::ostream& out, const char* name, const std::string& value) {
    out << "        <property name=\"" << name << "\" value=\"" << attr(value) << "\"/>\n";
}

// A MISTRUSTED result that fails the run: a <failure> whose message names the flag that made it
// one (a dashboard shows the message, not the command line), then the reason.
void write_mistrusted_failure(std::ostream& out, const CaseResult& r, const std::string& details) {
    const std::string why = kMistrustedFailsTheRun;
    out << "      <failure message=\"" << attr(r.reason.empty() ? why : why + ": " + r.reason)
        << "\" type=\"MISTRUSTED\">" << text(details) << "</failure>\n";
}

void write_testcase(std::ostream& out, const std::string& classname, const CaseResult& r, bool fail_on_mistrusted) {
    out << "    <testcase classname=\"" << attr(classname) << "\" name=\"" << attr(r.case_name) << "\"";
    if (!r.file.empty()) out << " file=\"" << attr(r.file) << "\"";
    out << " time=\"" << seconds(r.seconds) << "\">\n";

    const Metrics& m = r.metrics;
    out << "      <properties>\n";
    write_property(out, "status", std::string(status_name(r.status)));
    write_property(out, "data_type", r.data_type);
    write_property(out, "compute_type", r.compute_type);
    write_property(out, "max_abs_error", number(m.max_abs_error));
    write_property(out, "max_rel_error", number(m.max_rel_error));
    write_property(out, "max_ulps", number(m.max_ulps));
    write_property(out, "worst_ratio", number(m.worst_ratio));
    write_property(out, "over_bound", std::to_string(m.over_bound));
    write_property(out, "elements", std::to_string(m.elements));
    if (!r.ticket.empty()) write_property(out, "ticket", r.ticket);
    if (!r.repro.empty()) write_property(out, "repro", r.repro);
    out << "      </properties>\n";

    const std::string status(status_name(r.status));
    auto details = [&] {
        std::ostringstream d;
        detail::write_case_details(d, r);
        return d.str();
    };
    switch (r.status) {
        case Status::pass: break;
        case Status::fail:
        case Status::xpass: {
            std::string message = r.reason;
            if (message.empty())
                message = r.status == Status::fail ? "outside the bound" : "passed although expected to fail";
            out << "      <failure message=\"" << attr(message) << "\" type=\"" << status << "\">"
                << text(details()) << "</failure>\n";
            break;
        }
        case Status::error:
            out << "      <error message=\"" << attr(r.reason.empty() ? "backend error" : r.reason)
                << "\" type=\"ERROR\">" << text(details()) << "</error>\n";
            break;
        case Status::mistrusted:
            if (fail_on_mistrusted) {
                write_mistrusted_failure(out, r, details());
                break;
            }
            [[fallthrough]];
        case Status::skip:
        case Status::xfail:
            out << "      <skipped message=\"" << attr(r.reason.empty() ? status : status + ": " + r.reason)
                << "\"/>\n";
            break;
    }
    out << "    </testcase>\n";
}

}  // namespace

void write_junit_report(const std::string& file, const RunInfo& info, const std::vector<CaseResult>& results) {
    // Backends in RunInfo order, then any others in the order they first appear.
    std::vector<std::string> order;
    std::map<std::string, std::vector<const CaseResult*>> by_backend;
    auto note_backend = [&](const std::string& b) {
        if (by_backend.emplace(b, std::vector<const CaseResult*>{}).second) order.push_back(b);
    };
    for (const auto& b : info.backends) note_backend(b);
    for (const auto& r : results) {
        note_backend(r.backend);
        by_backend[r.backend].push_back(&r);
    }

    Counts total{info.fail_on_mistrusted};
    for (const auto& r : results) total.add(r);
    const double total_time = std::isfinite(info.seconds) && info.seconds > 0 ? info.seconds : total.time;

    std::ostringstream out;
    out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
    out << "<testsuites name=\"moe-conform\"" << total.attributes() << " time=\"" << seconds(total_time) << "\">\n";
    for (const auto& backend : order) {
        const auto& cases = by_backend[backend];
        Counts c{info.fail_on_mistrusted};
        for (const CaseResult* r : cases) c.add(*r);
        const std::string name = "moe-conform." + backend;
        out << "  <testsuite name=\"" << attr(name) << "\"" << c.attributes() << " time=\"" << seconds(c.time)
            << "\">\n";
        for (const CaseResult* r : cases) write_testcase(out, name, *r, info.fail_on_mistrusted);
        out << "  </testsuite>\n";
    }
    out << "</testsuites>\n";
    write_file_atomically(file, out.str());
}

}  // namespace moe::conformance
