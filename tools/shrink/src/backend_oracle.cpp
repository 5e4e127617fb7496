// The oracle for a backend: what `moe-conform run` does with one case (conformance/src/runner.cpp),
// without expectations, reports or files.
#include <exception>

#include "moe/conformance/compare.hpp"
#include "moe/shrink/shrink.hpp"

namespace moe::shrink {

Oracle make_backend_oracle(Backend& backend, int threads) {
    return [&backend, threads](const golden::GoldenCase& c) {
        Verdict v;
        const Support s = backend.supports(c.problem);
        if (!s.supported) {
            v.status = conformance::Status::skip;
            v.reason = s.reason;
            return v;
        }
        const Precision precision = backend.precision(c.problem.input(kHiddenStates).dtype());
        Output out;
        try {
            backend.prepare(c.problem);
            out = backend.run(c.problem, backend.provides_stages());
        } catch (const std::exception& e) {
            v.status = conformance::Status::error;
            v.reason = std::string("backend threw: ") + e.what();
            return v;
        }
        const conformance::Comparison cmp = conformance::compare_output(c, out.output, precision, threads);
        v.status = cmp.status;
        v.reason = cmp.reason;
        if (v.status == conformance::Status::fail && !out.stages.empty())
            if (const auto d = conformance::first_divergent_stage(c, out.stages, precision, threads)) v.stage = d->stage;
        return v;
    };
}

}  // namespace moe::shrink
