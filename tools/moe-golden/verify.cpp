// verify: the bundled suite is what the catalogue and the reference make, bit for bit, and every
// file is the one its manifest names.
#include <filesystem>
#include <iostream>
#include <set>
#include <vector>

#include "commands.hpp"
#include "generation_memory.hpp"
#include "moe/golden/isolated_read.hpp"
#include "moe/golden/case_diff.hpp"
#include "moe/golden/suite.hpp"
#include "moe/generator/case_spec.hpp"
#include "moe/generator/golden_builder.hpp"
#include "moe/golden/manifest.hpp"
#include "moe/spec/printable.hpp"

namespace moe::golden_cli {

namespace fs = std::filesystem;

int verify(const VerifyOptions& o) {
    const fs::path dir(o.dir);
    int failures = 0;

    const auto manifest = golden::read_manifest(dir);
    for (const auto& problem : golden::manifest_problems(dir)) {
        std::cout << "FAIL " << problem << "\n";
        ++failures;
    }
    std::set<std::string> on_disk;
    for (const auto& entry : fs::directory_iterator(dir))
        if (entry.path().extension() == ".h5") on_disk.insert(entry.path().filename().string());

    std::vector<generator::CaseSpec> cases;
    std::set<std::string> at_tier;  // file names of the catalogue's cases at the tier, filtered or not
    for (auto& spec : generator::load_catalog(o.catalog)) {
        if (!golden::tier_includes(o.tier, spec.tier)) continue;
        at_tier.insert(spec.name + ".h5");
        bool keep = o.filters.empty();
        for (const auto& f : o.filters) keep = keep || golden::glob_match(f, spec.name);
        if (keep) cases.push_back(std::move(spec));
    }
    // Nothing to regenerate (an empty catalogue, the wrong one, every case above --tier, a
    // --filter matching none) is bad input, as for generate: verify printed "0 case(s)
    // regenerated ... all identical", exit 0, and a CI gate with a wrong catalogue path or tier
    // passed without checking a file.
    if (cases.empty()) {
        std::cerr << "moe-golden: error: no case of " << o.catalog << " is at tier " << o.tier << " or below"
                  << (o.filters.empty() || at_tier.empty() ? "" : " and matches --filter")
                  << ": nothing to verify (a wrong --catalog, --tier or --filter?)\n";
        return 2;
    }
    // The catalogue is untrusted too: every case must fit the budget before any is regenerated
    // (without stages here; a file that holds them is checked again once read).
    for (const auto& spec : cases) require_generation_memory(o.catalog, spec, false, o.max_memory);

    std::size_t checked = 0;
    golden::ReadOptions read;
    read.max_memory = o.max_memory;
    for (const auto& spec : cases) {
        ++checked;
        const fs::path file = dir / (spec.name + ".h5");
        std::cerr << "[" << checked << "] " << spec.name << "\n";
        if (!fs::exists(file)) {
            std::cout << "FAIL " << spec.name << ": " << file.string() << " does not exist\n";
            ++failures;
            continue;
        }
        const golden::GoldenCase stored = golden::read_golden_isolated(file, read);
        if (!stored.stages.empty()) require_generation_memory(o.catalog, spec, true, o.max_memory);
        const golden::GoldenCase fresh = generator::build_golden(spec, {!stored.stages.empty(), o.threads});
        const auto diffs = golden::case_differences(fresh, stored);
        for (const auto& d : diffs) std::cout << "FAIL " << spec.name << ": " << d << "\n";
        if (!diffs.empty()) ++failures;
        on_disk.erase(spec.name + ".h5");
    }
    // A file --filter left out is a case all the same: only the others are noted.
    for (const auto& extra : on_disk)
        if (!at_tier.count(extra))
            std::cout << "note: " << extra << " is not a case of the catalogue at tier " << o.tier << "\n";
    // The catalogue named: without --catalog it is looked up (an installed one, or the source tree's).
    std::cout << "verify: " << checked << " case(s) of " << printable(o.catalog) << " regenerated, " << manifest.size()
              << " manifest entries; "
              << (failures ? std::to_string(failures) + " problem(s)" : std::string("all identical")) << "\n";
    return failures ? 1 : 0;
}

}  // namespace moe::golden_cli
