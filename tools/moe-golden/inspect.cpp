#include <cmath>
#include <cstdio>
#include <optional>
#include <iomanip>
#include <iostream>

#include "commands.hpp"
#include "moe/golden/isolated_read.hpp"
#include "moe/golden/golden_file.hpp"
#include "moe/golden/stored_results.hpp"
#include "moe/spec/error.hpp"

namespace moe::golden_cli {

namespace {

// Case names, descriptions and paths come from the file: control characters (newlines,
// terminal escapes) are shown escaped, never sent to the terminal.
using golden::printable;

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
    std::cout << "  " << std::left << std::setw(40) << printable(path) << std::setw(5) << dtype_name(t.dtype()) << std::setw(22)
              << shape_to_string(t.shape());
    if (finite)
        std::cout << std::setprecision(6) << "min " << lo << "  max " << hi << "  mean|x| " << sum_abs / double(finite);
    else
        std::cout << "(no finite values)";
    if (nan) std::cout << "  NaN " << nan;
    if (inf) std::cout << "  Inf " << inf;
    std::cout << "\n";
}

void print_integrity(const golden::FileStorage& s) {
    std::cout << "  integrity: superblock version " << s.superblock_version
              << (s.metadata_checksums ? ", metadata checksummed"
                                       : ", metadata NOT checksummed (an old-format file, e.g. from h5py's defaults)")
              << "\n";
    std::size_t with = 0;
    std::string without;
    for (const auto& d : s.datasets) {
        if (d.fletcher32 || d.memory_bytes == 0) ++with;
        else without += (without.empty() ? "" : ", ") + printable(d.path);
    }
    std::cout << "  checksums: every dataset read in full; Fletcher32 verified on " << with << " of "
              << s.datasets.size() << " datasets (empty ones count as verified)";
    if (!without.empty()) std::cout << "; WITHOUT a checksum: " << without;
    std::cout << "\n";
}

}  // namespace

int inspect(const InspectOptions& o) {
    const std::string& file = o.file;
    // read_golden checks how every dataset is stored and reads it in full, so a checksum mismatch
    // or a refused feature surfaces here as FileError (exit 2).
    golden::FileStorage storage;
    golden::ReadOptions ro;
    ro.require_output = false;
    ro.max_memory = o.max_memory;
    ro.storage = &storage;
    golden::GoldenCase c = golden::read_golden_isolated(file, ro);
    const auto& a = c.problem.attributes;
    std::cout << printable(file) << "\n  case " << printable(c.problem.name) << "\n  expert_type "
              << expert_type_name(a.expert_type) << ", convention " << convention_name(a.convention)
              << ", expert_alpha " << a.expert_alpha << ", expert_beta " << a.expert_beta;
    if (a.gate_idx) std::cout << ", gate_idx " << *a.gate_idx;
    std::cout << "\n";
    std::optional<std::string> invalid;
    try {
        const ResolvedParams r = resolve(a);
        std::cout << "  resolved: swish_beta " << r.swish_beta << ", clamp_limit " << r.clamp_limit << ", gate_lane "
                  << r.gate_lane << ", weight_layout " << weight_layout_name(r.weight_layout) << ", routing_layout "
                  << routing_layout_name(r.routing_layout) << "\n";
        const Dims d = validate(c.problem);
        std::cout << "  sizes: T " << d.T << " (B " << d.B << " x S " << d.S << "), H " << d.H << ", I " << d.I << ", E "
                  << d.E << ", K " << d.K << "\n";
    } catch (const InputError& e) {
        invalid = e.what();
        std::cout << "  INVALID PROBLEM: " << printable(e.what()) << "\n";
    }
    if (c.seed) std::cout << "  seed " << *c.seed;
    if (!c.generator.empty()) std::cout << "  generator " << printable(c.generator);
    if (!c.tier.empty()) std::cout << "  tier " << printable(c.tier);
    std::cout << (c.exact ? "  exact by construction" : "") << "\n";
    if (!c.description.empty()) std::cout << "  " << printable(c.description) << "\n";
    for (const auto& [n, t] : c.problem.inputs) print_tensor("/inputs/" + n, t);
    for (const auto& [n, t] : c.outputs) print_tensor("/outputs/" + n, t);
    for (const auto& [n, t] : c.stages) print_tensor("/stages/" + n, t);
    print_integrity(storage);
    if (!c.outputs.count("output")) std::cout << "  no /outputs/output: run `moe-golden complete` on this file\n";
    if (invalid) {
        std::cerr << "moe-golden: error: golden file '" << printable(file) << "': the problem is rejected: "
                  << printable(*invalid) << "\n";
        return 2;
    }
    // Damaged or foreign results (negative, scaled or zeroed bounds or output): FileError, exit 2.
    const std::size_t tokens = golden::check_stored_results(file, c, {golden::StoredResultsOptions{}.max_tokens, o.threads});
    if (c.outputs.count("output"))
        std::cout << "  stored results: /outputs/output and its error bounds agree with the reference on " << tokens
                  << " recomputed token(s)\n";
    return 0;
}

}  // namespace moe::golden_cli
