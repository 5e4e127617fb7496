#include <iostream>

#include "commands.hpp"
#include "moe/generator/golden_builder.hpp"
#include "moe/golden/isolated_read.hpp"
#include "moe/reference/exactness.hpp"
#include "moe/spec/error.hpp"

namespace moe::golden_cli {

int complete(const CompleteOptions& o) {
    golden::ReadOptions ro;
    ro.require_output = false;
    ro.max_memory = o.max_memory;
    golden::GoldenCase c = golden::read_golden_isolated(o.input, ro);
    const std::string file = "golden file '" + golden::printable(o.input) + "': ";
    Dims d;
    try {
        d = validate(c.problem);
    } catch (const InputError& e) {
        throw InputError(file + "the problem is rejected: " + e.what());
    }
    // The output written is the reference's; an `exact` claim it carries must hold (zero tolerance).
    if (c.exact) {
        try {
            reference::certify_exact(c.problem);
        } catch (const InputError& e) {
            throw InputError(file + "root attribute 'exact' is 1, but the case is not exact by construction (" +
                             e.what() + "); set it to 0");
        }
    }
    if (c.generator.empty()) c.generator = std::string(generator::kGeneratorName) + " complete";
    generator::BuildReport report;
    generator::compute_outputs(c, {o.stages, o.threads}, &report);
    const std::string out = o.output.empty() ? o.input : o.output;
    golden::write_golden(out, c);
    std::cerr << "moe-golden: " << golden::printable(c.problem.name) << " (T=" << d.T << " H=" << d.H << " I=" << d.I
              << " E=" << d.E << " K=" << d.K << "): output computed in " << report.reference_seconds
              << " s, written to " << golden::printable(out)
              << (report.dense_differs ? " (with output_dense: the dense reading differs)" : "") << "\n";
    return 0;
}

}  // namespace moe::golden_cli
