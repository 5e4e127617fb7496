// verify: the bundled suite is what the catalogue and the reference make, bit for bit, and every
// file is the one its manifest names.
#include <filesystem>
#include <iostream>
#include <set>

#include "commands.hpp"
#include "moe/conformance/runner.hpp"
#include "moe/generator/case_spec.hpp"
#include "moe/generator/golden_builder.hpp"
#include "moe/generator/manifest.hpp"

namespace moe::golden_cli {

namespace fs = std::filesystem;

namespace {

void compare_tensors(const std::string& group, const std::map<std::string, Tensor>& want,
                     const std::map<std::string, Tensor>& got, std::vector<std::string>& diffs) {
    for (const auto& [name, t] : want) {
        auto it = got.find(name);
        if (it == got.end()) diffs.push_back(group + "/" + name + " is missing from the file");
        else if (!(it->second == t)) diffs.push_back(group + "/" + name + " differs from the regenerated data");
    }
    for (const auto& [name, t] : got) {
        (void)t;
        if (!want.count(name)) diffs.push_back(group + "/" + name + " is in the file but not regenerated");
    }
}

std::vector<std::string> differences(const golden::GoldenCase& want, const golden::GoldenCase& got) {
    std::vector<std::string> d;
    const auto& a = want.problem.attributes;
    const auto& b = got.problem.attributes;
    if (a.expert_type != b.expert_type || a.convention != b.convention || a.expert_alpha != b.expert_alpha ||
        a.expert_beta != b.expert_beta || a.gate_idx != b.gate_idx)
        d.push_back("op attributes differ");
    if (want.seed != got.seed || want.tier != got.tier || want.exact != got.exact || want.problem.name != got.problem.name)
        d.push_back("case attributes (case, seed, tier, exact) differ");
    compare_tensors("/inputs", want.problem.inputs, got.problem.inputs, d);
    compare_tensors("/outputs", want.outputs, got.outputs, d);
    compare_tensors("/stages", want.stages, got.stages, d);
    return d;
}

}  // namespace

int verify(const VerifyOptions& o) {
    const fs::path dir(o.dir);
    int failures = 0;

    const auto manifest = generator::read_manifest(dir);
    std::set<std::string> on_disk;
    for (const auto& entry : fs::directory_iterator(dir))
        if (entry.path().extension() == ".h5") on_disk.insert(entry.path().filename().string());
    for (const auto& name : on_disk) {
        auto it = manifest.find(name);
        if (it == manifest.end()) {
            std::cout << "FAIL " << name << ": not listed in " << generator::kManifestName << "\n";
            ++failures;
        } else if (generator::sha256_file(dir / name) != it->second) {
            std::cout << "FAIL " << name << ": SHA-256 differs from " << generator::kManifestName << "\n";
            ++failures;
        }
    }
    for (const auto& [name, sum] : manifest) {
        (void)sum;
        if (!on_disk.count(name)) {
            std::cout << "FAIL " << name << ": listed in " << generator::kManifestName << " but missing\n";
            ++failures;
        }
    }

    std::size_t checked = 0;
    const auto cases = generator::load_catalog(o.catalog);
    for (const auto& spec : cases) {
        if (!conformance::tier_includes(o.tier, spec.tier)) continue;
        ++checked;
        const fs::path file = dir / (spec.name + ".h5");
        std::cerr << "[" << checked << "] " << spec.name << "\n";
        if (!fs::exists(file)) {
            std::cout << "FAIL " << spec.name << ": " << file.string() << " does not exist\n";
            ++failures;
            continue;
        }
        const golden::GoldenCase stored = golden::read_golden(file);
        const golden::GoldenCase fresh = generator::build_golden(spec, {!stored.stages.empty(), o.threads});
        const auto diffs = differences(fresh, stored);
        for (const auto& d : diffs) std::cout << "FAIL " << spec.name << ": " << d << "\n";
        if (!diffs.empty()) ++failures;
        on_disk.erase(spec.name + ".h5");
    }
    for (const auto& extra : on_disk)
        std::cout << "note: " << extra << " is not a case of the catalogue at tier " << o.tier << "\n";
    std::cout << "verify: " << checked << " case(s) regenerated, " << manifest.size() << " manifest entries; "
              << (failures ? std::to_string(failures) + " problem(s)" : std::string("all identical")) << "\n";
    return failures ? 1 : 0;
}

}  // namespace moe::golden_cli
