#include <iostream>

#include "commands.hpp"
#include "moe/golden/isolated_read.hpp"
#include "moe/generator/golden_builder.hpp"

namespace moe::golden_cli {

int complete(const CompleteOptions& o) {
    golden::ReadOptions ro;
    ro.require_output = false;
    ro.max_memory = o.max_memory;
    golden::GoldenCase c = golden::read_golden_isolated(o.input, ro);
    const Dims d = validate(c.problem);  // bad inputs: InputError, exit 2
    if (c.problem.name.empty()) c.problem.name = "user_case";
    if (c.generator.empty()) c.generator = std::string(generator::kGeneratorName) + " complete";
    generator::BuildReport report;
    generator::compute_outputs(c, {o.stages, o.threads}, &report);
    const std::string out = o.output.empty() ? o.input : o.output;
    golden::write_golden(out, c);
    std::cerr << "moe-golden: " << c.problem.name << " (T=" << d.T << " H=" << d.H << " I=" << d.I << " E=" << d.E
              << " K=" << d.K << "): output computed in " << report.reference_seconds << " s, written to " << out
              << (report.dense_differs ? " (with output_dense: the dense reading differs)" : "") << "\n";
    return 0;
}

}  // namespace moe::golden_cli
