// shrink: wires a backend from the registry to the shrink library (tools/shrink) and writes the
// shrunk case as a golden file.
#include <iostream>

#include "commands.hpp"
#include "device_check.hpp"
#include "output_paths.hpp"
#include "moe/backends/plugin_backend.hpp"
#include "moe/backends/registry.hpp"
#include "moe/conformance/case_file_name.hpp"
#include "moe/conformance/shell_word.hpp"
#include "moe/golden/golden_file.hpp"
#include "moe/golden/stored_results.hpp"
#include "moe/shrink/shrink.hpp"
#include "moe/spec/error.hpp"

namespace moe::conform_cli {

using conformance::shell_word;  // the repro line quoted as run's are (a path with ; or & is one word)

namespace {

std::string verdict_text(const shrink::Verdict& v) {
    std::string t(conformance::status_name(v.status));
    if (!v.stage.empty()) t += " (first divergent stage " + v.stage + ")";
    return t + ": " + v.reason;
}

}  // namespace

int shrink(const ShrinkCommand& c) {
    // -o onto the --case file replaced the failing case with the shrunk one (exit 0): checked
    // before the minutes of shrinking, and again below for the default name.
    check_outputs_spare_inputs({{c.case_file, c.backend_lib}, {{"--out", c.out}}, {}});
    std::unique_ptr<Backend> backend;
    std::string repro_flags;  // what the repro line needs besides --backend and --case
    if (!c.backend_lib.empty()) {
        refuse_unused_device(c.device, false, "--backend-lib " + c.backend_lib);
        // A plugin that crashes or hangs while it loads is named (exit 2), not this process's end.
        backends::probe_plugin_backend(c.backend_lib);
        backend = backends::load_plugin_backend(c.backend_lib);
        if (!c.backend.empty() && c.backend != backend->name())
            throw InputError("--backend " + c.backend + ": shrink runs one backend, and --backend-lib " + c.backend_lib +
                             " is '" + backend->name() + "' (leave --backend out, or name the plugin)");
        repro_flags = " --backend-lib " + shell_word(c.backend_lib);
    } else {
        refuse_unused_device(c.device, backends::opencl_family(c.backend), "--backend " + c.backend);
        backend = backends::make_builtin_backend(c.backend, backends::BuiltinOptions{c.device});
        if (!c.device.empty()) repro_flags = " --device " + shell_word(c.device);
    }
    const Availability a = backend->availability();
    if (!a.available) {
        std::cerr << "moe-conform: error: backend " << backend->name() << " is unavailable: " << a.reason << "\n";
        return 2;
    }
    golden::GoldenCase original = golden::read_golden(c.case_file);
    validate(original.problem);
    // As run does (exit 2): a file whose stored output or bounds are not its inputs' fails every
    // backend, the reference too, and no candidate (its results recomputed) fails with it, so
    // the damaged file itself was written as the "shrunk" case, after the whole budget of runs.
    golden::check_stored_results(c.case_file, original, {golden::StoredResultsOptions{}.max_tokens, c.threads});
    // The default name comes from the golden file's case name: untrusted, so made a plain file name.
    const std::string file =
        c.out.empty() ? conformance::case_file_stem(original.problem.name + "_shrunk") + ".h5" : c.out;
    check_outputs_spare_inputs({{c.case_file}, {{"the default output (<case name>_shrunk.h5)", file}}, {}});

    shrink::Options o;
    o.threads = c.threads;
    o.max_seconds = c.max_seconds;
    if (!c.quiet) o.progress = [](const std::string& line) { std::cerr << "  " << line << "\n"; };
    shrink::Result r;
    try {
        r = shrink::shrink_case(original, shrink::make_backend_oracle(*backend, c.threads), o);
    } catch (const InputError& e) {
        std::cerr << "moe-conform: " << e.what() << "\n";
        return 1;
    }

    golden::GoldenCase& out = r.shrunk;
    out.problem.name = original.problem.name + "_shrunk";
    out.generator = "moe-conform shrink";
    out.description = "Shrunk from case " + original.problem.name + " for backend " + backend->name() + " (" +
                      std::to_string(r.edits.size()) + " edits, " + std::to_string(r.runs) + " runs). " +
                      original.description;
    golden::write_golden(file, out);

    std::cout << "shrunk " << golden::printable(original.problem.name) << " for " << backend->name() << " in " << r.runs << " runs ("
              << r.edits.size() << " edits)\n"
              << "  before: " << r.before.to_string() << "\n"
              << "  after:  " << r.after.to_string() << (out.exact ? " (exact by construction)" : "") << "\n"
              << "  still:  " << verdict_text(r.verdict) << "\n"
              << (r.limit.empty() ? "" : "  stopped early: the search reached " + r.limit +
                                             " before it tried every edit, so the case may shrink further\n")
              << (r.stable ? "" : "  warning: two more runs did not both fail the same way: the backend is not deterministic\n")
              << "wrote " << file << "\n"
              << "repro: moe-conform run" << repro_flags << " --backend " << shell_word(backend->name()) << " --case "
              << shell_word(file) << "\n";
    return 0;
}

}  // namespace moe::conform_cli
