// The oracle for a backend: what `moe-conform run` does with one case (conformance/src/runner.cpp),
// without expectations, reports or files. It judges with the runner's own judge_output and the
// backend's precision_for, so that a candidate the shrinker keeps is one run would fail the same
// way: comparing the output alone missed what run adds (a misshapen stage is a FAIL there, a
// backend that writes into its inputs an ERROR).
#include <exception>

#include "moe/conformance/judge.hpp"
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
        const Precision precision = backend.precision_for(c.problem);
        const auto before = c.problem.inputs;  // run compares digests; a copy is as good here
        Output out;
        std::string threw;
        try {
            backend.prepare(c.problem);
            out = backend.run(c.problem, backend.provides_stages());
        } catch (const std::exception& e) {
            threw = e.what();
        }
        if (!(c.problem.inputs == before)) {
            v.status = conformance::Status::error;
            v.reason = "the backend wrote into its inputs, which it may only read";
            return v;
        }
        if (!threw.empty()) {
            v.status = conformance::Status::error;
            v.reason = "backend threw: " + threw;
            return v;
        }
        const conformance::CaseResult r = conformance::judge_output(c, out, {"", backend.name(), precision, "", threads});
        v.status = r.status;
        v.reason = r.reason;
        if (v.status == conformance::Status::fail && r.first_divergent_stage) v.stage = r.first_divergent_stage->stage;
        return v;
    };
}

}  // namespace moe::shrink
