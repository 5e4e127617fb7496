// shrink: wires a backend from the registry to the shrink library (tools/shrink) and writes the
// shrunk case as a golden file. The backend runs in the library's worker process
// (shrink_isolated), so a backend that crashes or hangs is shrunk like one that fails.
#include <iostream>
#include <sstream>

#include "commands.hpp"
#include "device_check.hpp"
#include "output_paths.hpp"
#include "moe/backends/plugin_backend.hpp"
#include "moe/backends/registry.hpp"
#include "moe/conformance/shell_word.hpp"
#include "moe/golden/golden_file.hpp"
#include "moe/shrink/shrink.hpp"
#include "moe/shrink/shrink_file.hpp"
#include "moe/spec/error.hpp"

namespace moe::conform_cli {

using conformance::shell_word;  // the repro line quoted as run's are (a path with ; or & is one word)

int shrink(const ShrinkCommand& c) {
    // A missing file is named with its suite (and a close name in it); one that is there must
    // match its folder's manifest, as for run --case.
    if (!cases_exist({c.case_file}, "moe-conform")) return 2;
    if (!c.no_manifest && !manifest_agrees("", {c.case_file}, "moe-conform")) return 2;
    // -o onto the --case file replaced the failing case with the shrunk one (exit 0): checked
    // before the minutes of shrinking, and again below for the default name.
    check_outputs_spare_inputs({{c.case_file, c.backend_lib}, {{"--out", c.out}}, {}});
    // The backend is made in the worker process, never here (a device context or a thread pool
    // must not cross its fork): here it is named and checked only, as run's makers are.
    BackendMaker maker;
    std::string lib_flag, device_flag;  // what the repro line needs besides --backend and --case
    if (!c.backend_lib.empty()) {
        refuse_unused_device(c.device, false, "--backend-lib " + c.backend_lib);
        // A plugin that crashes or hangs while it loads is named (exit 2), not this process's end.
        backends::probe_plugin_backend(c.backend_lib);
        maker = backends::make_backend_makers({}, {c.backend_lib}).front();
        if (!c.backend.empty() && c.backend != maker.name)
            throw InputError("--backend " + c.backend + ": shrink runs one backend, and --backend-lib " + c.backend_lib +
                             " is '" + maker.name + "' (leave --backend out, or name the plugin)");
        lib_flag = " --backend-lib " + shell_word(c.backend_lib);
    } else {
        refuse_unused_device(c.device, backends::opencl_family(c.backend), "--backend " + c.backend);
        maker = backends::make_backend_makers({c.backend}, {}, backends::BuiltinOptions{c.device}).front();
        if (!c.device.empty()) device_flag = " --device " + shell_word(c.device);
    }
    // A damaged file (stored results not its inputs') is refused as run refuses it (exit 2).
    const golden::GoldenCase original = shrink::read_failing_case(c.case_file, c.threads);
    const std::string file = c.out.empty() ? shrink::default_output(original) : c.out;
    check_outputs_spare_inputs({{c.case_file}, {{"the default output (<case name>_shrunk.h5)", file}}, {}});

    shrink::Options o;
    o.threads = c.threads;
    o.max_seconds = c.max_seconds;
    o.candidate_seconds = c.candidate_seconds;
    if (!c.quiet) o.progress = [](const std::string& line) { std::cerr << "  " << line << "\n"; };
    // A kill (Ctrl-C, a CI's time limit) leaves the smallest failing case found until then.
    o.accepted = [&](const golden::GoldenCase& current) { shrink::write_partial(file, original, current, maker.name); };
    shrink::Result r;
    try {
        r = shrink::shrink_isolated(original, shrink::backend_oracle_maker(maker, c.threads), o);
    } catch (const shrink::WorkerFailed& e) {  // unavailable, or it cannot be made: no verdict at all
        std::cerr << "moe-conform: error: " << e.what() << "\n";
        return 2;
    } catch (const InputError& e) {
        std::cerr << "moe-conform: " << e.what() << "\n";
        return 1;
    }

    shrink::write_shrunk(file, original, r, maker.name);
    std::string repro = c.tool + " run" + lib_flag + " --backend " + shell_word(maker.name) + device_flag +
                        " --case " + shell_word(file);
    // A hang: run's own limit (600 s) would make the repro wait ten minutes for what shrink saw
    // after this many seconds.
    if (r.verdict.hung_after > 0) {
        std::ostringstream seconds;
        seconds << r.verdict.hung_after;
        repro += " --case-timeout " + seconds.str();
    }
    std::cout << shrink::summary_lines(original, r, maker.name) << "wrote " << file << "\n"
              << "repro: " << repro << "\n";
    // Not deterministic: the shrunk case is kept (the failure is real), but its repro line may
    // pass, so a script must not read this as a clean shrink.
    if (!r.stable) {
        std::cout.flush();
        std::cerr << "moe-conform: error: the shrunk case did not fail the same way on every run (the backend is not "
                     "deterministic: a race or uninitialised memory), so its repro line may pass; "
                  << file << " is kept (exit " << shrink::kExitNotDeterministic << ")\n";
        return shrink::kExitNotDeterministic;
    }
    return 0;
}

}  // namespace moe::conform_cli
