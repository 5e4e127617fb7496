#include "moe/golden/case_diff.hpp"

namespace moe::golden {

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

}  // namespace

std::vector<std::string> case_differences(const GoldenCase& want, const GoldenCase& got) {
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


}  // namespace moe::golden
