// shrink: wires a backend from the registry to the shrink library (tools/shrink) and writes the
// shrunk case as a golden file.
#include <unistd.h>

#include <atomic>
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

namespace {

// What a shrink that a backend run ended leaves: the file with the smallest failing case found
// before it and that file's repro line, or that nothing was written.
std::string what_is_left(const std::string& file, bool written, const std::string& repro) {
    if (!written) return "moe-conform: no smaller failing case was found before it: nothing was written\n";
    return "moe-conform: the smallest failing case found before it is in " + file + "\nrepro: " + repro + "\n";
}

// A backend run that crashed this process (crash_guard.hpp): made before each run, for each
// signal, as the handler can only write what is ready. The candidate that crashed is not
// written (that would take HDF5 in a signal handler); its description says how it was made.
std::string crash_message(const std::string& running, const std::string& signal, const std::string& file,
                          bool written, const std::string& repro) {
    return "moe-conform: error: a backend run on " + running + " crashed the process (" + signal +
           "); shrink stopped (exit " + std::to_string(shrink::kExitBackendCrashed) + ")\n" +
           what_is_left(file, written, repro);
}

// What a run that went past --candidate-seconds leaves: said on stderr, then the process ends at
// once (_exit: the hung run's thread cannot be joined, and destructors or atexit handlers could
// wait on what it holds). Called on the watchdog's thread, while the shrinking thread is inside
// the backend: no output file is being written then.
[[noreturn]] void end_overrun(const std::string& running, double limit, const std::string& file, bool written,
                              const std::string& repro) {
    std::ostringstream m;
    m << "moe-conform: error: a backend run on " << running << " has not returned after " << limit
      << " s (--candidate-seconds): it hangs, or is far slower at this shape than on the case as given; shrink "
         "stopped (exit "
      << shrink::kExitRunOverran << ")\n"
      << what_is_left(file, written, repro);
    const std::string text = m.str();
    for (std::size_t done = 0; done < text.size();) {
        const ssize_t n = ::write(2, text.data() + done, text.size() - done);
        if (n <= 0) break;
        done += static_cast<std::size_t>(n);
    }
    ::_exit(shrink::kExitRunOverran);
}

}  // namespace

int shrink(const ShrinkCommand& c) {
    // A missing file is named with its suite (and a close name in it); one that is there must
    // match its folder's manifest, as for run --case.
    if (!cases_exist({c.case_file}, "moe-conform")) return 2;
    if (!c.no_manifest && !manifest_agrees("", {c.case_file}, "moe-conform")) return 2;
    // -o onto the --case file replaced the failing case with the shrunk one (exit 0): checked
    // before the minutes of shrinking, and again below for the default name.
    check_outputs_spare_inputs({{c.case_file, c.backend_lib}, {{"--out", c.out}}, {}});
    std::unique_ptr<Backend> backend;
    std::string lib_flag, device_flag;  // what the repro line needs besides --backend and --case
    if (!c.backend_lib.empty()) {
        refuse_unused_device(c.device, false, "--backend-lib " + c.backend_lib);
        // A plugin that crashes or hangs while it loads is named (exit 2), not this process's end.
        backends::probe_plugin_backend(c.backend_lib);
        backend = backends::load_plugin_backend(c.backend_lib);
        if (!c.backend.empty() && c.backend != backend->name())
            throw InputError("--backend " + c.backend + ": shrink runs one backend, and --backend-lib " + c.backend_lib +
                             " is '" + backend->name() + "' (leave --backend out, or name the plugin)");
        lib_flag = " --backend-lib " + shell_word(c.backend_lib);
    } else {
        refuse_unused_device(c.device, backends::opencl_family(c.backend), "--backend " + c.backend);
        backend = backends::make_builtin_backend(c.backend, backends::BuiltinOptions{c.device});
        if (!c.device.empty()) device_flag = " --device " + shell_word(c.device);
    }
    const Availability a = backend->availability();
    if (!a.available) {
        std::cerr << "moe-conform: error: backend " << backend->name() << " is unavailable: " << a.reason << "\n";
        return 2;
    }
    // A damaged file (stored results not its inputs') is refused as run refuses it (exit 2).
    const golden::GoldenCase original = shrink::read_failing_case(c.case_file, c.threads);
    const std::string file = c.out.empty() ? shrink::default_output(original) : c.out;
    check_outputs_spare_inputs({{c.case_file}, {{"the default output (<case name>_shrunk.h5)", file}}, {}});

    const std::string repro = "moe-conform run" + lib_flag + " --backend " + shell_word(backend->name()) + device_flag +
                              " --case " + shell_word(file);
    shrink::Options o;
    o.threads = c.threads;
    o.max_seconds = c.max_seconds;
    o.candidate_seconds = c.candidate_seconds;
    if (!c.quiet) o.progress = [](const std::string& line) { std::cerr << "  " << line << "\n"; };
    // The backend runs in this process: one that crashes on a later candidate (or a kill) leaves
    // the smallest failing case found until then in the output file.
    std::atomic<bool> written{false};
    o.accepted = [&](const golden::GoldenCase& current) {
        shrink::write_partial(file, original, current, backend->name());
        written = true;
    };
    // One that hangs is ended by the watchdog (tools/shrink/include/moe/shrink/candidate_limit.hpp);
    // one that crashes (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT) says so and where the smallest
    // case is, exit 6, not 139 and silence (crash_guard.hpp).
    o.overrun = [&](const std::string& running, double limit) { end_overrun(running, limit, file, written, repro); };
    o.crashed = [&](const std::string& running, const std::string& signal) {
        return crash_message(running, signal, file, written, repro);
    };
    shrink::Result r;
    try {
        r = shrink::shrink_case(original, shrink::make_backend_oracle(*backend, c.threads), o);
    } catch (const InputError& e) {
        std::cerr << "moe-conform: " << e.what() << "\n";
        return 1;
    }

    shrink::write_shrunk(file, original, r, backend->name());
    std::cout << shrink::summary_lines(original, r, backend->name()) << "wrote " << file << "\n"
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
