#include <chrono>
#include <filesystem>
#include <iomanip>
#include <iostream>

#include "cli_outputs.hpp"
#include "commands.hpp"
#include "generation_memory.hpp"
#include "moe/golden/suite.hpp"
#include "moe/generator/case_spec.hpp"
#include "moe/generator/golden_builder.hpp"
#include "moe/golden/golden_file.hpp"
#include "moe/golden/manifest.hpp"
#include "moe/spec/error.hpp"

namespace moe::golden_cli {

namespace fs = std::filesystem;

int generate(const GenerateOptions& o) {
    std::vector<generator::CaseSpec> cases;
    for (auto& c : generator::load_catalog(o.catalog)) {
        if (!golden::tier_includes(o.tier, c.tier)) continue;
        bool keep = o.filters.empty();
        for (const auto& f : o.filters) keep = keep || golden::glob_match(f, c.name);
        if (keep) cases.push_back(std::move(c));
    }
    if (cases.empty()) {
        std::cerr << "moe-golden: error: no case of " << o.catalog << " matches the tier and filters\n";
        return 2;
    }
    // Every selected case is checked before any is generated.
    for (const auto& c : cases) require_generation_memory(o.catalog, c, o.stages, o.max_memory);
    // No case's file may be the catalogue (one kept in --out under a case's file name was replaced).
    moe::cli::RunPaths paths{{o.catalog}, {}, {}};
    for (const auto& c : cases)
        paths.reports.emplace_back("--out (case " + c.name + ")", (fs::path(o.out_dir) / (c.name + ".h5")).string());
    moe::cli::check_outputs_spare_inputs(paths);
    std::error_code made;
    fs::create_directories(o.out_dir, made);
    if (made || !fs::is_directory(o.out_dir))
        throw OutputError("cannot make folder '" + o.out_dir + "': " +
                          (made ? made.message() : "a file is in the way"));
    // A generator killed half-way (kill -9) leaves its temporary file; never a partial .h5.
    const auto stale = golden::remove_stale_temp_files(o.out_dir);
    if (!stale.empty())
        std::cerr << "moe-golden: removed " << stale.size() << " temporary file(s) of killed writers from " << o.out_dir
                  << "\n";
    const auto start = std::chrono::steady_clock::now();
    std::size_t n = 0;
    for (const auto& spec : cases) {
        ++n;
        std::cerr << "[" << n << "/" << cases.size() << "] " << spec.name << " ... " << std::flush;
        const auto t0 = std::chrono::steady_clock::now();
        generator::BuildReport report;
        const auto golden = generator::build_golden(spec, {o.stages, o.threads}, &report);
        golden::write_golden(fs::path(o.out_dir) / (spec.name + ".h5"), golden);
        const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        std::cerr << std::fixed << std::setprecision(2) << secs << " s (reference " << report.reference_seconds << " s)";
        if (report.kinks.redraws) std::cerr << ", " << report.kinks.redraws << " token rows redrawn off clamp edges";
        if (report.kinks.near_lanes) std::cerr << ", " << report.kinks.near_lanes << " lanes still near an edge";
        if (spec.routing.capacity_factor > 0.0) std::cerr << ", " << report.dropped_pairs << " pairs dropped (capacity)";
        if (spec.exact) std::cerr << ", exact (" << std::setprecision(1) << report.exact_bits << " bits at most"
                                  << (spec.exact_storage != DType::f32
                                          ? ", intermediates in " + std::string(dtype_name(spec.exact_storage))
                                          : std::string())
                                  << (spec.rounded_storage != DType::f32
                                          ? ", " + std::to_string(report.values_rounded) + " intermediates not " +
                                                std::string(dtype_name(spec.rounded_storage)) + " values"
                                          : std::string())
                                  << ")";
        if (report.dense_differs) std::cerr << ", dense reading differs (output_dense stored)";
        std::cerr << "\n";
    }
    if (o.manifest) golden::write_manifest(o.out_dir);
    const double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::cerr << "moe-golden: wrote " << cases.size() << " case(s) to " << o.out_dir << " in " << std::fixed
              << std::setprecision(1) << total << " s" << (o.manifest ? " and its manifest" : "") << "\n";
    return 0;
}

}  // namespace moe::golden_cli
