// The runner's options from the flags run and check share (one place, so the two commands cannot
// drift apart in how they run a suite).
#include <iostream>
#include <utility>

#include "commands.hpp"
#include "moe/conformance/expectations.hpp"
#include "moe/conformance/shell_word.hpp"
#include "moe/spec/printable.hpp"

namespace moe::conform_cli {

conformance::RunOptions run_options(const SuiteRunFlags& f, std::vector<std::string> files) {
    conformance::RunOptions o;
    o.files = std::move(files);
    o.repro_command = f.tool + " run";
    o.filters = f.filters;
    if (!f.expert_type.empty()) {
        o.expert_type = parse_expert_type(f.expert_type);
        // The selection is part of what was run: a repro line reruns it.
        o.repro_command += " --expert-type " + f.expert_type;
    }
    o.tier = f.tier;
    o.threads = f.threads;
    o.progress = !f.quiet;
    o.max_memory = f.max_memory;
    o.check_stored_results = !f.trust_stored_results;
    o.isolate = !f.no_isolation;
    o.case_timeout = f.case_timeout;
    if (!f.expect.empty()) {
        o.expectations = conformance::load_expectations(f.expect);
        // An XFAIL or XPASS is one only against the expectation file: the rerun reads it too.
        o.repro_command += " --expect " + conformance::shell_word(f.expect);
    }
    // A MISTRUSTED result fails only under the flag: the rerun exits as this run did.
    if (f.fail_on_mistrusted) o.repro_command += " --fail-on-mistrusted";
    return o;
}

void note_unused_expectations(const SuiteRunFlags& f, const conformance::RunOptions& o,
                              const conformance::RunOutcome& outcome, const std::string& shard) {
    // An input error's run has no results to have used the entries.
    if (f.expect.empty() || conformance::run_exit_code(outcome) == 2) return;
    const auto& list = o.expectations;
    const auto unused = conformance::unused_expectations(list, outcome.results);
    if (unused.empty()) return;
    constexpr std::size_t kShown = 10;
    std::cerr << "moe-conform: note: " << unused.size() << " of the " << list.size() << " entries of "
              << printable(f.expect) << " applied to no result of this run"
              << (shard.empty() ? "" : " (shard " + shard + ": the other shards may use them)")
              << "; a case renamed or removed, a file name for a case name, or a backend not run:\n";
    for (std::size_t k = 0; k < unused.size() && k < kShown; ++k) {
        const auto& e = list[unused[k]];
        std::cerr << "  entry " << unused[k] << ": backend \"" << printable(e.backend) << "\", case \""
                  << printable(e.case_glob) << "\"\n";
    }
    if (unused.size() > kShown) std::cerr << "  ... and " << unused.size() - kShown << " more\n";
}

}  // namespace moe::conform_cli
