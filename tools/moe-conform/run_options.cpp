// The runner's options from the flags run and check share (one place, so the two commands cannot
// drift apart in how they run a suite).
#include <utility>

#include "commands.hpp"

namespace moe::conform_cli {

conformance::RunOptions run_options(const SuiteRunFlags& f, std::vector<std::string> files) {
    conformance::RunOptions o;
    o.files = std::move(files);
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
    return o;
}

}  // namespace moe::conform_cli
