// selftest: the suite must catch every deliberately broken backend and pass every correct one.
#include <iomanip>
#include <iostream>

#include "commands.hpp"
#include "moe/backends/registry.hpp"
#include "moe/conformance/runner.hpp"

namespace moe::conform_cli {

int selftest(const SelftestCommand& c) {
    conformance::RunOptions o;
    o.files = conformance::suite_files(c.suite);
    o.threads = c.threads;
    o.progress = false;
    int problems = 0;

    std::cout << "Correct backends (must pass every case):\n";
    for (const auto& name : backends::builtin_backend_names()) {
        auto b = backends::make_builtin_backend(name);
        if (!b->availability().available) {
            std::cout << "  " << std::left << std::setw(18) << name << "unavailable: " << b->availability().reason << "\n";
            continue;
        }
        const auto outcome = conformance::run_suite(o, {b.get()});
        if (!outcome.input_errors.empty()) {
            for (const auto& e : outcome.input_errors) std::cerr << "moe-conform: error: " << e << "\n";
            return 2;
        }
        const auto s = conformance::summarize(outcome.results);
        double headroom = 0;
        for (const auto& r : outcome.results) headroom = std::max(headroom, r.metrics.worst_ratio);
        const bool clean = s.failed + s.errors + s.xpassed + s.mistrusted == 0;
        problems += !clean;
        std::cout << "  " << std::left << std::setw(18) << name << (clean ? "ok      " : "PROBLEM ") << s.passed
                  << " passed, " << s.failed << " failed, " << s.errors << " errors, " << s.mistrusted
                  << " mistrusted; worst error/bound " << std::setprecision(3) << headroom << "\n";
        for (const auto& r : outcome.results)
            if (r.status != conformance::Status::pass && r.status != conformance::Status::skip)
                std::cout << "      " << conformance::status_name(r.status) << " " << r.case_name << ": " << r.reason
                          << "\n";
    }

    std::cout << "Mutants (each must be caught by at least one case):\n";
    std::size_t caught_count = 0;
    const auto catalogue = backends::selftest_mutants();
    for (const auto& m : catalogue) {
        const auto b = m.make();
        const auto outcome = conformance::run_suite(o, {b.get()});
        std::size_t caught = 0;
        const conformance::CaseResult* first = nullptr;
        for (const auto& r : outcome.results) {
            if (r.status == conformance::Status::fail || r.status == conformance::Status::error) {
                if (!first) first = &r;
                ++caught;
            }
        }
        caught_count += caught > 0;
        problems += caught == 0;
        std::cout << "  " << std::left << std::setw(28) << m.name << (caught ? "caught  " : "MISSED  ") << std::setw(3)
                  << caught << "of " << outcome.results.size() << " cases";
        if (first) {
            std::cout << "  first: " << first->case_name;
            if (first->first_divergent_stage) std::cout << " (stage " << first->first_divergent_stage->stage << ")";
        }
        std::cout << "\n";
    }
    std::cout << "selftest: " << caught_count << " of " << catalogue.size() << " mutants caught; "
              << (problems ? "FAILED" : "all correct backends pass") << "\n";
    return problems ? 1 : 0;
}

}  // namespace moe::conform_cli
