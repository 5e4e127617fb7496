// moe-conform --backend-lib with plugins that are wrong in one way each (bad_plugin.c): every one
// is refused (exit 2) or reported (ERROR, SKIP) with the fault named; none crashes the tool.
#include <doctest/doctest.h>

#include <chrono>
#include <sstream>
#include <string>

#include "bundled_suite.hpp"
#include "run_command.hpp"
#include "text_contains.hpp"

using moe::test::moe_conform;
using moe::test::run_command;
using moe::test::has;
using moe::test::kBundledSuite;
using moe::test::bundled_case;

namespace {

const std::string kCase = bundled_case("exact_gemm2_lane1.h5");

std::string plugin(const std::string& variant) { return std::string(MOE_PLUGIN_DIR) + "/bad_plugin_" + variant + ".so"; }

moe::test::CommandResult run_with(const std::string& lib) {
    return run_command(moe_conform() + " run --quiet --backend-lib " + lib + " --case " + kCase);
}

}  // namespace

TEST_CASE("plugins that cannot be used are refused with exit 2 and the fault named") {
    const struct {
        const char* variant;
        const char* message;
    } cases[] = {
        {"bad_version", "its moe_conform_backend_v1 table says ABI version 3, not 1"},
        {"v3_only", "built for moe-conform backend ABI version 3 (moe_conform_backend_v3); this moe-conform speaks versions 1 and 2"},
        {"v2_with_v1_table", "its moe_conform_backend_v2 table says ABI version 1, not 2"},
        {"v2_bad_dequant", "precision(f64): its dequant field declares u8, not one of f64, f32, f16, bf16"},
        {"no_symbol", "exports no moe_conform_backend_v2 or moe_conform_backend_v1 function"},
        {"small_struct", "built against another backend_abi.h"},
        {"no_run", "has no run function"},
        {"bad_name", "its name 'bad name; rm -rf' is refused: a name is not empty and not \"all\", starts with a letter or digit, and has only letters, digits"},
        // ".." would put --write-results files above their folder; "all" means every backend.
        {"dots_name", "its name '..' is refused"},
        {"all_name", "its name 'all' is refused"},
        {"bad_precision", "precision(f64): its compute field declares i32, not one of f64, f32, f16, bf16"},
        // Loaded in a child process first: the tool reports the crash instead of dying with it.
        {"crashes_on_load", "crashed with signal 11"},
        // exit(0) in the entry function ended the tool with status 0 and no report: a pass to CI.
        {"exits_on_load", "ended the process with exit status 0 before returning: a plugin must not call exit()"},
        {"null_table", "moe_conform_backend_v1() returned no table"},
    };
    for (const auto& c : cases) {
        CAPTURE(c.variant);
        const auto r = run_with(plugin(c.variant));
        CHECK(r.exit_code == 2);
        CHECK(has(r.output, plugin(c.variant)));
        CHECK(has(r.output, c.message));
    }
}

TEST_CASE("a version-1 plugin is SKIP on a case with compressed weights, with the reason") {
    // run_fails would report ERROR if the host called it: SKIP shows the host never did.
    const auto r = run_command(moe_conform() + " run --backend-lib " + plugin("run_fails") + " --case " +
                               bundled_case("exact_compressed_zp_u4_gemm2.h5"));
    CHECK(r.exit_code == 77);
    CHECK(has(r.output, "SKIP"));
    CHECK(has(r.output, "compressed weights are not in backend ABI version 1 (export moe_conform_backend_v2)"));
    CHECK_FALSE(has(r.output, "device lost"));
}

TEST_CASE("a file that is not a shared library is refused with the loader's reason") {
    const auto r = run_with(kCase);
    CHECK(r.exit_code == 2);
    CHECK(has(r.output, "cannot load it"));
}

TEST_CASE("a plugin whose run fails gives ERROR with its return code and message; the run continues and exits 1") {
    // In C's terms: the code the plugin returned, not "backend threw" (a C plugin throws nothing).
    const auto r = run_with(plugin("run_fails"));
    CAPTURE(r.output);
    CHECK(r.exit_code == 1);
    CHECK(has(r.output, "ERROR"));
    CHECK(has(r.output, "error: run() returned 7: device lost while running exact_gemm2_lane1"));
    CHECK_FALSE(has(r.output, "backend threw"));
}

TEST_CASE("an ERROR for a crash or a timeout names the case's data type and the plugin's declared types") {
    // They were "types: data -, compute -, storage -", though the worker had read the case.
    const std::string isolated = moe_conform() + " run --backend-lib ";
    for (const std::string& command : {isolated + plugin("crashes_when_small") + " --case " +
                                           bundled_case("gemm3_single_token.h5"),
                                       isolated + plugin("hangs_in_run") + " --case-timeout 1 --case " + kCase}) {
        const auto r = run_command(command);
        CAPTURE(r.output);
        CHECK(r.exit_code == 1);
        CHECK(has(r.output, "types: data f32, compute f32, storage f32"));
        CHECK_FALSE(has(r.output, "types: data -"));
    }
}

TEST_CASE("a step past --case-timeout is an ERROR even where its end is read late") {
    // run() takes 1 s against a limit of 0.5 s. moe-conform itself is stopped while its worker
    // runs the case and resumed after the worker has ended: the step's begin, its result and the
    // worker's end then wait in the pipe together, and the result must still be refused as late
    // (it was reported, "device lost", when the limit was looked at only while the pipe was idle).
    const std::string run = moe_conform() + " run --quiet --backend-lib " + plugin("slow_in_run") +
                            " --case-timeout 0.5 --case " + kCase;
    const auto r = run_command("timeout 60 sh -c '" + run + " & p=$!; "
                               "while kill -0 $p 2> /dev/null && ! pgrep -P $p > /dev/null; do sleep 0.01; done; "
                               "kill -STOP $p; sleep 2.5; kill -CONT $p; wait $p'");
    CAPTURE(r.output);
    CHECK(r.exit_code == 1);
    CHECK(has(r.output, "timed out after 0.5 s (--case-timeout)"));
    CHECK_FALSE(has(r.output, "device lost"));
}

TEST_CASE("an output element the plugin never wrote is an ERROR that names it, even where the golden value is NaN") {
    // The runner fills the output with a NaN of its own payload: in the dense reading of a NaN
    // weight every golden element is NaN, so a plain NaN fill would pass an unwritten row there.
    for (const std::string& c : {kCase, bundled_case("nonfinite_linear_lane_nan_f32.h5")}) {
        const auto r = moe::test::run_command(moe::test::moe_conform() + " run --backend-lib " +
                                              plugin("leaves_row_unwritten") + " --case " + c);
        CAPTURE(r.output);
        CHECK(r.exit_code == 1);
        CHECK(has(r.output, "ERROR"));
        CHECK(has(r.output, "run() left output element ["));
        CHECK(has(r.output, ", 0] unwritten (it still holds the fill the runner put there)"));
    }
}

TEST_CASE("an unavailable plugin is SKIP with its reason, exit 77") {
    const auto r = run_with(plugin("unavailable"));
    CHECK(r.exit_code == 77);
    CHECK(has(r.output, "backend unavailable: no accelerator in this machine"));
}

TEST_CASE("a loaded plugin that --backend leaves out is refused, not a pass without it") {
    const std::string lib = plugin("run_fails");
    const auto left_out = run_command(moe_conform() + " run --backend-lib " + lib + " --backend reference --case " + kCase);
    CAPTURE(left_out.output);
    CHECK(left_out.exit_code == 2);
    CHECK(left_out.output.find("backend library " + lib + ": its plugin 'bad_plugin' would not run: --backend names "
                               "only other backends; add bad_plugin to --backend (or use --backend all)") !=
          std::string::npos);
    CHECK(left_out.output.find("passed") == std::string::npos);
    // A misspelt plugin name: the message lists the plugins loaded beside the built-in backends.
    const auto typo = run_command(moe_conform() + " run --backend-lib " + lib + " --backend bad_plugn --case " + kCase);
    CHECK(typo.exit_code == 2);
    CHECK(has(typo.output, "unknown backend 'bad_plugn' (built-in backends: "));
    CHECK(has(typo.output, "; plugins loaded: bad_plugin"));
    // Named, or by all, it runs (and fails, as this plugin does).
    for (const std::string names : {"reference,bad_plugin", "all"}) {
        const auto r = run_command(moe_conform() + " run --backend-lib " + lib + " --backend " + names + " --case " + kCase);
        CAPTURE(r.output);
        CHECK(r.exit_code == 1);
        CHECK(r.output.find("device lost") != std::string::npos);
    }
}

TEST_CASE("a plugin's messages and description reach the terminal escaped; its name is the one checked at load") {
    // The plugin renames itself after the check, and writes terminal controls into its error
    // message and description: clear screen, a C1 CSI, a right-to-left override, a forged line.
    const auto has_raw_controls = [](const std::string& s) {
        return s.find('\x1b') != std::string::npos || s.find("\xc2\x9b") != std::string::npos ||
               s.find("\xe2\x80\xae") != std::string::npos || s.find("\nFAKE LINE") != std::string::npos;
    };
    const auto r = run_command(moe_conform() + " run --backend-lib " + plugin("hostile_texts") + " --case " + kCase);
    CAPTURE(r.output);
    CHECK(r.exit_code == 1);
    CHECK_FALSE(has_raw_controls(r.output));
    CHECK(has(r.output, "run() returned 7: lost\\x1b[2J \\xc2\\x9b31m \\xe2\\x80\\xae \\xff\\x0aFAKE LINE"));
    CHECK(has(r.output, "--backend bad_plugin --case"));
    CHECK_FALSE(has(r.output, "renamed"));
    const auto list = run_command(moe_conform() + " list --backend-lib " + plugin("hostile_texts"));
    CAPTURE(list.output);
    CHECK(list.exit_code == 0);
    CHECK_FALSE(has_raw_controls(list.output));
    CHECK(has(list.output, "desc\\x1b]0;owned\\x07\\x0afake line (plugin "));
}

TEST_CASE("each backend's repro line loads only its own plugin, and runs as printed") {
    // Every repro line carried every --backend-lib of the run; run refuses a plugin that --backend
    // leaves out, so the line of one failing backend beside another plugin (or a mutant) was exit 2.
    const std::string other = std::string(MOE_PLUGIN_DIR) + "/plugin_v1_loops.so", failing = plugin("run_fails");
    const auto r = run_command(moe_conform() + " run --backend-lib " + other + " --backend-lib " + failing +
                               " --backend example_loops_v1,bad_plugin,mutant:lanes_swapped --case " + kCase);
    CAPTURE(r.output);
    CHECK(r.exit_code == 1);
    std::istringstream lines(r.output);
    std::size_t repros = 0;
    for (std::string line; std::getline(lines, line);) {
        const auto at = line.find("repro: ");
        if (at == std::string::npos) continue;
        const std::string repro = line.substr(at + 7);
        CAPTURE(repro);
        ++repros;
        CHECK(repro.find(other) == std::string::npos);  // the passing plugin's library is not needed
        CHECK((repro.find(failing) != std::string::npos) == (repro.find("--backend bad_plugin") != std::string::npos));
        CHECK(repro.rfind(moe_conform() + " run ", 0) == 0);  // the tool as this test invoked it
        const auto again = run_command(repro);
        CAPTURE(again.output);
        CHECK(again.exit_code == 1);  // the failure again, not a refused command line
    }
    CHECK(repros == 2);  // bad_plugin's ERROR and the mutant's FAIL
}

TEST_CASE("moe-conform list shows a loaded plugin beside the built-in backends") {
    const auto r = run_command(moe_conform() + " list --backend-lib " + plugin("run_fails"));
    CHECK(r.exit_code == 0);
    CHECK(has(r.output, "bad_plugin"));
    CHECK(has(r.output, "a plugin wrong in one way (plugin "));
    // Each data type's declaration, bf16 included (cpu keeps bf16 intermediates there only).
    CHECK(has(r.output, "declares (data: compute/storage[/dequantisation]): f64 f64/f64, f32 f32/f32/f32, f16 "
                        "f32/f32/f32, bf16 f32/bf16/f32; returns stages"));
}

TEST_CASE("moe-conform list survives a plugin that crashes while it loads") {
    const auto r = run_command(moe_conform() + " list --backend-lib " + plugin("crashes_on_load"));
    CHECK(r.exit_code == 2);
    CHECK(has(r.output, "crashed with signal 11"));
}

TEST_CASE("a plugin that writes into its inputs is an ERROR; the backends after it meet the inputs as stored") {
    // The plugin doubles hidden_states[0] in place. Without the check the plugin would FAIL and the
    // reference after it would FAIL too (it would compute from the doubled value).
    const auto r = run_command(moe_conform() + " run --backend-lib " + plugin("writes_inputs") +
                               " --backend bad_plugin,reference,loop_f32 --case " + kCase);
    CHECK(r.exit_code == 1);
    CHECK(has(r.output, "the backend wrote into its inputs (hidden_states)"));
    CHECK(has(r.output, "2 passed, 0 failed, 0 skipped, 1 errors"));
    // The same in one process (the case is read again from its file).
    const auto one = run_command(moe_conform() + " run --no-isolation --backend-lib " + plugin("writes_inputs") +
                                 " --backend bad_plugin,reference --case " + kCase);
    CHECK(one.exit_code == 1);
    CHECK(has(one.output, "1 passed, 0 failed, 0 skipped, 1 errors"));
}

TEST_CASE("a plugin that calls exit(0) never makes a run pass") {
    const auto isolated =
        run_command(moe_conform() + " run --backend-lib " + plugin("exits_in_run") + " --case " + kCase);
    CHECK(isolated.exit_code == 1);
    CHECK(has(isolated.output, "ended the worker process unexpectedly (exit status 0)"));
    const auto in_process =
        run_command(moe_conform() + " run --no-isolation --backend-lib " + plugin("exits_in_run") + " --case " + kCase);
    CHECK(in_process.exit_code == 1);
    CHECK(has(in_process.output, "backend 'bad_plugin' called exit() while running case 'exact_gemm2_lane1'"));
}

TEST_CASE("a crash is reported as a crash at once, though a process the plugin started holds the pipes") {
    // The plugin's child sleeps 30 s with the worker's pipe open; the crash must not wait for it
    // (nor be taken for a --case-timeout). Output goes to a file: the child holds that, not ours.
    const std::string out = std::string(MOE_PLUGIN_DIR) + "/crashes_with_child.out";
    const auto start = std::chrono::steady_clock::now();
    const auto r = run_command(moe_conform() + " run --case-timeout 25 --backend-lib " + plugin("crashes_with_child") +
                               " --case " + kCase + " > " + out + " 2>&1; echo exit=$?; cat " + out);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    CHECK(has(r.output, "exit=1"));
    CHECK(has(r.output, "killed by signal 11 (SIGSEGV"));
    CHECK_FALSE(has(r.output, "timed out"));
    CHECK(seconds < 20.0);
}

TEST_CASE("a plugin that writes one element past its output is an ERROR that says so, not a pass") {
    // Its output is all zeros: FAIL at worst without the guard, but on a case whose reference is
    // zero it passed; the guard names the write wherever it happens.
    const auto r = run_command(moe_conform() + " run --backend-lib " + plugin("writes_past_output") + " --case " + kCase);
    CAPTURE(r.output);
    CHECK(r.exit_code == 1);
    CHECK(has(r.output, "error: run() wrote past the end of the output [" ));
    CHECK_FALSE(has(r.output, "backend threw"));
    CHECK(has(r.output, "]: element 0 after its last"));
}

TEST_CASE("a thread a plugin left running that crashes the worker later is not blamed on a golden file alone") {
    // The plugin's run() starts a thread that raises SIGSEGV 200 ms later, during whatever step
    // the worker is in then: reading a later golden file, or running a backend on it.
    const auto r = run_command(moe_conform() + " run --backend-lib " + plugin("crashes_later") + " --backend bad_plugin,reference --suite " +
                               kBundledSuite);
    CAPTURE(r.output);
    CHECK(r.exit_code == 1);
    CHECK(has(r.output, "killed by signal 11 (SIGSEGV"));
    CHECK(has(r.output, "a thread or process that a backend started earlier in the same worker process and left running"));
    CHECK_FALSE(has(r.output, "(the file is damaged or hostile; the backends did not run)"));
}

TEST_CASE("what a plugin prints to stdout reaches stderr, not the report on stdout") {
    // A CI that parses or archives the text report got the plugin's lines at its top. The worker
    // process ends with _exit: stdio's buffers are flushed first, so the line is not lost either.
    const std::string out = std::string(MOE_PLUGIN_DIR) + "/prints.out", err = std::string(MOE_PLUGIN_DIR) + "/prints.err";
    for (const std::string isolation : {"", " --no-isolation"}) {
        CAPTURE(isolation);
        const auto r = run_command(moe_conform() + " run --quiet" + isolation + " --backend-lib " + plugin("prints") +
                                   " --case " + kCase + " > " + out + " 2>" + err + "; echo exit=$?; echo STDOUT; cat " +
                                   out + "; echo STDERR; cat " + err);
        CAPTURE(r.output);
        const auto stdout_at = r.output.find("STDOUT"), stderr_at = r.output.find("STDERR");
        REQUIRE(stderr_at != std::string::npos);
        const std::string report = r.output.substr(stdout_at, stderr_at - stdout_at), errors = r.output.substr(stderr_at);
        CHECK(has(r.output, "exit=1"));  // the plugin fails its run too
        CHECK(report.rfind("STDOUT\nmoe-conform ", 0) == 0);  // the report's first line is the report's
        CHECK_FALSE(has(report, "the plugin printed this line to stdout"));
        CHECK(has(errors, "the plugin printed this line to stdout"));
    }
}
