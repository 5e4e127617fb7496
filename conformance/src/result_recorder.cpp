#include "moe/conformance/result_recorder.hpp"

#include <filesystem>
#include <map>
#include <stdexcept>

#include "moe/conformance/case_file_name.hpp"
#include "moe/conformance/text_file.hpp"
#include "moe/golden/golden_file.hpp"
#include "moe/golden/result_file.hpp"
#include "moe/spec/error.hpp"

namespace moe::conformance {

namespace {

class ResultRecorder : public Backend {
public:
    ResultRecorder(std::unique_ptr<Backend> inner, std::string dir, std::vector<golden::CaseIdentity> cases)
        : owned_(std::move(inner)), inner_(*owned_), dir_(std::move(dir)) {
        for (auto& c : cases) by_case_.emplace(c.case_name, std::move(c));
        create_output_folder(dir_);
    }
    std::string name() const override { return inner_.name(); }
    std::string description() const override { return inner_.description(); }
    Availability availability() const override { return inner_.availability(); }
    Support supports(const Problem& p) const override { return inner_.supports(p); }
    Precision precision(DType data_type) const override { return inner_.precision(data_type); }
    Precision precision_for(const Problem& p) const override { return inner_.precision_for(p); }
    bool provides_stages() const override { return inner_.provides_stages(); }
    void prepare(const Problem& p) override { inner_.prepare(p); }
    std::map<std::string, double> last_kernel_times() const override { return inner_.last_kernel_times(); }

    Output run(const Problem& p, bool want_stages) override {
        Output out = inner_.run(p, want_stages);
        const auto it = by_case_.find(p.name);
        if (it == by_case_.end()) throw InputError("--write-results: case '" + golden::printable(p.name) + "' has no golden file identity");
        golden::ResultFile r;
        r.case_name = p.name;
        r.golden_sha256 = it->second.sha256;
        r.implementation = inner_.name();
        r.precision = inner_.precision_for(p);
        r.output = out.output;
        r.stages = out.stages;
        try {
            golden::write_result(std::filesystem::path(dir_) / (case_file_stem(p.name) + ".h5"), r);
        } catch (const golden::FileError& e) {
            // Not the backend's fault: its output was computed, the run's own folder failed it.
            throw std::runtime_error("not the backend: --write-results could not store its output: " +
                                     std::string(e.what()));
        }
        return out;
    }

private:
    std::unique_ptr<Backend> owned_;
    Backend& inner_;
    std::string dir_;
    std::map<std::string, golden::CaseIdentity> by_case_;
};

}  // namespace

std::unique_ptr<Backend> record_results(std::unique_ptr<Backend> inner, std::string dir,
                                        std::vector<golden::CaseIdentity> cases) {
    return std::make_unique<ResultRecorder>(std::move(inner), std::move(dir), std::move(cases));
}

}  // namespace moe::conformance
