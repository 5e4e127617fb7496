// The oracle for a backend: what `moe-conform run` does with one case (conformance/src/runner.cpp),
// without expectations, reports or files. It judges with the runner's own judge_output and the
// backend's precision_for, so that a candidate the shrinker keeps is one run would fail the same
// way: comparing the output alone missed what run adds (a misshapen stage is a FAIL there, a
// backend that writes into its inputs an ERROR).
#include <exception>
#include <memory>

#include "moe/conformance/judge.hpp"
#include "moe/shrink/shrink.hpp"
#include "moe/spec/error.hpp"
#include "moe/spec/stdout_to_stderr.hpp"

namespace moe::shrink {

Oracle make_backend_oracle(Backend& backend, int threads) {
    return [&backend, threads](const golden::GoldenCase& c) {
        // What the backend prints to stdout goes to stderr: shrink's summary and repro line are
        // stdout's (stdout_to_stderr.hpp). Nothing else writes to stdout while a candidate runs.
        const StdoutToStderr backend_prints_to_stderr;
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
        bool told = false;  // BackendFailed: the reason in the backend's own words, as run reports it
        try {
            backend.prepare(c.problem);
            out = backend.run(c.problem, backend.provides_stages());
        } catch (const BackendFailed& e) {
            threw = e.what();
            told = true;
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
            v.reason = told ? threw : "backend threw: " + threw;
            return v;
        }
        const conformance::CaseResult r = conformance::judge_output(c, out, {"", backend.name(), precision, "", threads});
        v.status = r.status;
        v.reason = r.reason;
        if (v.status == conformance::Status::fail && r.first_divergent_stage) v.stage = r.first_divergent_stage->stage;
        return v;
    };
}

OracleMaker backend_oracle_maker(BackendMaker maker, int threads) {
    return [maker = std::move(maker), threads]() -> Oracle {
        // Made (and asked whether it can run) in the worker process: availability() may open a
        // device context, which must not be opened in the process that forks the workers.
        std::shared_ptr<Backend> backend = maker.make();
        const Availability a = backend->availability();
        if (!a.available) throw InputError("backend " + backend->name() + " is unavailable: " + a.reason);
        Oracle run = make_backend_oracle(*backend, threads);
        return [backend, run = std::move(run)](const golden::GoldenCase& c) { return run(c); };
    };
}

}  // namespace moe::shrink
