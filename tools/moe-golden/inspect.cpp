#include <cmath>
#include <iomanip>
#include <iostream>

#include "commands.hpp"
#include "moe/golden/golden_file.hpp"
#include "moe/spec/error.hpp"

namespace moe::golden_cli {

namespace {

void print_tensor(const std::string& path, const Tensor& t) {
    double lo = INFINITY, hi = -INFINITY, sum_abs = 0.0;
    std::size_t nan = 0, inf = 0, finite = 0;
    for (std::size_t i = 0; i < t.size(); ++i) {
        const double v = t.get(i);
        if (std::isnan(v)) ++nan;
        else if (std::isinf(v)) ++inf;
        else {
            lo = std::min(lo, v);
            hi = std::max(hi, v);
            sum_abs += std::fabs(v);
            ++finite;
        }
    }
    std::cout << "  " << std::left << std::setw(40) << path << std::setw(5) << dtype_name(t.dtype()) << std::setw(22)
              << shape_to_string(t.shape());
    if (finite)
        std::cout << std::setprecision(6) << "min " << lo << "  max " << hi << "  mean|x| " << sum_abs / double(finite);
    else
        std::cout << "(no finite values)";
    if (nan) std::cout << "  NaN " << nan;
    if (inf) std::cout << "  Inf " << inf;
    std::cout << "\n";
}

}  // namespace

int inspect(const std::string& file) {
    // read_golden reads every dataset in full, so a checksum mismatch surfaces here as FileError.
    const golden::GoldenCase c = golden::read_golden(file, /*require_output=*/false);
    const auto& a = c.problem.attributes;
    std::cout << file << "\n  case " << c.problem.name << "\n  expert_type " << expert_type_name(a.expert_type)
              << ", convention " << convention_name(a.convention) << ", expert_alpha " << a.expert_alpha
              << ", expert_beta " << a.expert_beta;
    if (a.gate_idx) std::cout << ", gate_idx " << *a.gate_idx;
    std::cout << "\n";
    try {
        const ResolvedParams r = resolve(a);
        std::cout << "  resolved: swish_beta " << r.swish_beta << ", clamp_limit " << r.clamp_limit << ", gate_lane "
                  << r.gate_lane << ", weight_layout " << weight_layout_name(r.weight_layout) << ", routing_layout "
                  << routing_layout_name(r.routing_layout) << "\n";
        const Dims d = validate(c.problem);
        std::cout << "  sizes: T " << d.T << " (B " << d.B << " x S " << d.S << "), H " << d.H << ", I " << d.I << ", E "
                  << d.E << ", K " << d.K << "\n";
    } catch (const InputError& e) {
        std::cout << "  INVALID PROBLEM: " << e.what() << "\n";
    }
    if (c.seed) std::cout << "  seed " << *c.seed;
    if (!c.generator.empty()) std::cout << "  generator " << c.generator;
    if (!c.tier.empty()) std::cout << "  tier " << c.tier;
    std::cout << (c.exact ? "  exact by construction" : "") << "\n";
    if (!c.description.empty()) std::cout << "  " << c.description << "\n";
    for (const auto& [n, t] : c.problem.inputs) print_tensor("/inputs/" + n, t);
    for (const auto& [n, t] : c.outputs) print_tensor("/outputs/" + n, t);
    for (const auto& [n, t] : c.stages) print_tensor("/stages/" + n, t);
    std::cout << "  checksums: every dataset read in full, Fletcher32 verified\n";
    if (!c.outputs.count("output")) std::cout << "  no /outputs/output: run `moe-golden complete` on this file\n";
    return 0;
}

}  // namespace moe::golden_cli
