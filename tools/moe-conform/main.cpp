// moe-conform: runs MoE implementations against golden data and gives a verdict a person and a
// CI can act on.
#include <CLI/CLI.hpp>
#include <filesystem>
#include <iostream>
#include <thread>

#include "commands.hpp"
#include "moe/backends/registry.hpp"
#include "cli_checks.hpp"
#include "installed_path.hpp"
#include "rerun_tool.hpp"
#include "cli_errors.hpp"
#include "moe/conformance/shell_word.hpp"
#include "moe/golden/suite.hpp"

using namespace moe::conform_cli;

namespace {

// The bundled suite, selftest's default: <prefix>/share/moe_conform/golden beside an installed
// moe-conform, else the source tree's data/golden.
std::string default_suite() {
    return moe::cli::installed_or(MOE_INSTALLED_SUITE_FROM_BIN, moe::cli::InstalledKind::folder, MOE_DEFAULT_SUITE);
}

// I/N, checked when the flag is read: an empty value would otherwise mean "no shard" and run
// everything. CLI11 puts "--shard: " before the message, so parse_shard's own "--shard " goes
// ("--shard: --shard : expected I/N" for an empty value).
const CLI::Validator kShard(
    [](std::string& text) -> std::string {
        if (text.empty()) return "an empty value: expected I/N, e.g. 2/4";
        try {
            moe::golden::parse_shard(text);
            return {};
        } catch (const std::exception& e) {
            const std::string m = e.what(), prefix = "--shard ";
            return m.rfind(prefix, 0) == 0 ? m.substr(prefix.size()) : m;
        }
    },
    "I/N");

// --expert-type: gemm2, gemm3 or the spec's names, any case; held as the spec's name, which the
// golden files' root attribute and the repro line use. CLI11 puts "--expert-type: " before the message.
const CLI::Validator kExpertType(
    [](std::string& text) -> std::string {
        try {
            text = std::string(moe::expert_type_name(moe::conformance::expert_type_option(text, "value")));
            return {};
        } catch (const std::exception& e) {
            return e.what();
        }
    },
    "gemm2|gemm3");

// --threads: a decimal count up to moe::cli::max_threads() (CLI11 alone read "010" as octal 8).
std::string threads_help() {
    return "Threads for the reference computations (default: this machine's hardware threads; at most " +
           std::to_string(moe::cli::max_threads()) + ")";
}

// --expect, one definition for run and check (run_options loads the file for both): the same
// file gates a backend's run and the result files of a framework that cannot load as a plugin.
void add_expect_option(CLI::App* cmd, SuiteRunFlags& flags) {
    cmd->add_option("--expect", flags.expect,
                    "Expectation file: known failures (XFAIL) and skips, with reasons (docs/moe-conform.md); "
                    "for check, an entry's backend is the implementation's name (--name, else the files' "
                    "`implementation`)")
        ->check(CLI::ExistingFile);
}

// --fail-on-mistrusted, one definition for run and check (report_outcome gates both on it).
void add_fail_on_mistrusted_flag(CLI::App* cmd, SuiteRunFlags& flags) {
    cmd->add_flag("--fail-on-mistrusted", flags.fail_on_mistrusted,
                  "Exit 1 on any MISTRUSTED result, as on a FAIL (by default MISTRUSTED exits 0): for a CI that must "
                  "not accept a pass whose bound cannot tell a right answer from a wrong one (spec/tolerance.md). "
                  "The count line, the JSON (fail_on_mistrusted) and JUnit (a <failure>) say why")
        ->disable_flag_override();  // `--fail-on-mistrusted=false` would read as given
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{
        "moe-conform: checks MOE implementations (backends) against golden HDF5 cases.\n"
        "Every output element is compared with the f64 reference within a bound derived from the\n"
        "backend's declared precision (spec/tolerance.md); each failure prints a repro line.\n\n"
        "Examples:\n"
        "  moe-conform list\n"
        "  moe-conform run --backend all --suite data/golden\n"
        "  moe-conform run --backend loop_f32 --suite data/golden --filter 'gemm2_*' --json r.json --junit r.xml\n"
        "  moe-conform run --backend reference --case data/golden/exact_gemm3_openvino_f32.h5\n"
        "  moe-conform run --backend-lib ./libmy_moe.so --suite data/golden   # your kernel as a C plugin\n"
        "  moe-conform check --suite data/golden --results my_results/          # result files from any framework\n"
        "  moe-conform check --case data/golden/gemm3_qwen_spec_f32.h5 --results out.npy --precision f32\n"
        "  moe-conform selftest\n\n"
        "Golden files are untrusted input (spec/golden-format.md, \"Untrusted files\"): nothing outside a\n"
        "file is read (external storage, external links and virtual datasets are refused), memory is\n"
        "bounded (--max-memory), stored results must agree with a recomputation from the inputs, and a\n"
        "suite folder's MANIFEST.sha256 must match (--no-manifest skips it). Files are read and run in\n"
        "worker processes: a file or backend that crashes or hangs (--case-timeout) is an ERROR of its\n"
        "own, the run goes on and its reports are written (--no-isolation for debugging).\n\n"
        "Exit codes: 0 every case has its expected status (PASS, XFAIL, SKIP, MISTRUSTED), 1 a FAIL,\n"
        "ERROR or XPASS (or a MISTRUSTED, with --fail-on-mistrusted), 2 usage or input error (bad,\n"
        "corrupt, malformed or refused golden file, a manifest mismatch: named), 77 every case was\n"
        "skipped (nothing compared), 3 internal error."};
    app.require_subcommand(1);
    const int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));

    std::vector<std::string> list_libs;
    std::string list_json;
    auto* l = app.add_subcommand("list", "List the backends, whether each is available, and why not.");
    l->add_option("--backend-lib", list_libs, "Also load this backend plugin (shared library; repeatable)")
        ->check(CLI::ExistingFile);
    l->add_option("--json", list_json,
                  "Also write the list as JSON here: each backend's family, availability and reason, declared "
                  "precisions; the OpenCL devices; the mutants (docs/moe-conform.md)")
        ->check(moe::cli::kOutputFile);
    l->footer("\nExamples:\n  moe-conform list\n  moe-conform list --backend-lib ./libmy_moe.so\n"
              "  moe-conform list --json backends.json   # for a CI script: which backends this machine runs\n\n"
              "Exit codes: 0 listed, 2 a plugin that cannot be loaded, or a --json that cannot be written (named).");

    RunCommand rc;
    rc.threads = threads;
    auto* r = app.add_subcommand("run", "Run backends over golden cases and report.");
    r->footer("\nExamples:\n"
              "  moe-conform run --backend all --suite data/golden\n"
              "  moe-conform run --backend cpu --suite data/golden --filter 'compressed_*' --json r.json --junit r.xml\n"
              "  moe-conform run --backend-lib ./libmy_moe.so --suite data/golden --expect known_failures.json\n"
              "  moe-conform run --backend reference --case data/golden/exact_gemm3_openvino_f32.h5\n"
              "  moe-conform run --backend all --suite data/golden --fail-on-mistrusted   # a CI that accepts no vacuous pass\n\n"
              "Exit codes: 0 every case has its expected status (PASS, XFAIL, SKIP, MISTRUSTED), 1 a FAIL, ERROR or "
              "XPASS\n(or a MISTRUSTED, with --fail-on-mistrusted), 2 usage or input error (named), 77 every case was "
              "skipped,\n3 internal error. docs/moe-conform.md has the guide.");
    // Each value whole, split by run (moe::cli::list_items): CLI11's ->delimiter(',') dropped the
    // empty item of "cpu,,loop_f32", "loop_f32," or ",loop_f32" before any check saw it.
    r->add_option("--backend", rc.backends,
                  "Backend name(s), comma-separated, each once, no empty item: built-in names (moe-conform list), "
                  "the names of plugins loaded with --backend-lib, or 'all' (every built-in backend and plugin); "
                  "default with --backend-lib: the plugins (names given must include every plugin loaded)")
        ->check(moe::cli::list_check(CLI::Validator()))
        ->type_name("NAME,...");
    r->add_option("--backend-lib", rc.backend_libs,
                  "Load a backend plugin: a shared library exporting moe_conform_backend_v2 (compressed weights "
                  "included) or moe_conform_backend_v1 (spec/include/moe_conform/backend_abi.h); repeatable")
        ->check(CLI::ExistingFile);
    auto* suite = r->add_option("--suite", rc.suite, "Folder of golden files (*.h5)")->check(CLI::ExistingDirectory);
    // Not CLI::ExistingFile: run names a missing file's suite, and a close name in it (cases_exist).
    auto* cases = r->add_option("--case", rc.cases, "Golden file(s) to run");
    suite->excludes(cases);
    r->add_option("--filter", rc.filters,
                  "Only cases whose name matches this glob (* and ?; a comma is part of the glob); repeatable")
        ->check(moe::cli::kNonEmpty);
    r->add_option("--expert-type", rc.expert_type,
                  "Only cases of this expert type: gemm2 (GEMM2_BIAS_SWIGLU_CLAMP) or gemm3 (GEMM3_SWIGLU), any case; "
                  "case names do not say it. With --filter, a case must match both")
        ->transform(kExpertType);
    r->add_option("--tier", rc.tier, "Largest tier to run: quick < ci < full (default full: every file given)")
        ->check(CLI::IsMember({"quick", "ci", "full"}));
    r->add_option("--json", rc.json, "Also write the JSON report here (schema: spec/report.schema.json)")
        ->check(moe::cli::kOutputFile);
    r->add_option("--junit", rc.junit, "Also write a JUnit XML report here")
        ->check(moe::cli::kOutputFile);
    r->add_option("--html", rc.html, "Also write a self-contained HTML report here (heatmaps of the failures)")
        ->check(moe::cli::kOutputFile);
    add_expect_option(r, rc);
    add_fail_on_mistrusted_flag(r, rc);
    r->add_option("--threads", rc.threads, threads_help())->transform(moe::cli::threads_check());
    r->add_option("--device", rc.device,
                  "OpenCL device for the opencl backend and its mutants: P:D (platform, device index) or a name "
                  "substring (default: the first GPU, else the first device; see moe-conform list); refused when "
                  "--backend runs none of them")
        ->check(moe::cli::kNonEmpty);
    r->add_flag("--quiet", rc.quiet, "No progress lines on stderr");
    r->add_flag("--no-manifest", rc.no_manifest,
                "Do not check the suite folder's MANIFEST.sha256 (by default, where the folder has one, every "
                "*.h5 file must be listed with its SHA-256, else nothing runs and the exit code is 2; a --case "
                "file is checked against its folder's manifest where it lists the file)");
    // A switch: `--no-isolation=false` still counted as given, and excluded --case-timeout.
    auto* r_no_isolation = r->add_flag("--no-isolation", rc.no_isolation,
                "Read and run every file in this process (for debugging: a crash in HDF5 or a backend then ends "
                "the run). By default each file is read and run in a worker process: a crash or a hang there "
                "is reported as ERROR for that file (naming the signal or the timeout) and the run goes on; a backend "
                "calling exit() ends the run with status 1, one calling _exit() with its own status and no report "
                "(not for CI gates)")
        ->disable_flag_override();
    auto* r_case_timeout = r->add_option("--case-timeout", rc.case_timeout,
                  "Seconds one file may take to read and check, and each backend to run on it, before its worker "
                  "is killed and the case reported as ERROR (default 600; 0 = no limit; not with --no-isolation)")
        ->check(moe::cli::kNonNegative);
    r_case_timeout->excludes(r_no_isolation);  // only a worker process can be stopped
    r->add_flag("--trust-stored-results", rc.trust_stored_results,
                "Do not check that each file's stored output and error bounds agree with the reference recomputed "
                "from its inputs (on up to 256 tokens; by default a file where they disagree, or with a negative "
                "bound, is refused: exit 2). For runner tests that edit outputs on purpose");
    r->add_option("--max-memory", rc.max_memory,
                  "Largest memory one golden file may need once read (e.g. 512M, 8G; default: the smaller of 8 GiB "
                  "and 3/4 of physical memory); a file needing more is refused before anything is read")
        ->transform(CLI::AsSizeValue(false))
        ->transform(moe::cli::kSizeInRange)  // runs first
        ->check(moe::cli::kPositive);
    r->add_option("--shard", rc.shard,
                  "Run share I of N (e.g. 2/4): the golden files sorted by name, every N-th from the I-th; spreads "
                  "a large suite over CI runners (moe_conform_add_suite(... SHARDS N))")
        ->check(kShard);
    r->add_option("--write-results", rc.write_results,
                  "Also write every output as a result file (spec/results-format.md) into this folder (a subfolder "
                  "per backend when several run), to judge again later with `moe-conform check`")
        ->check(moe::cli::kOutputFolder);

    CheckCommand cc;
    cc.threads = threads;
    auto* k = app.add_subcommand("check",
                                 "Judge result files written by your own framework (HDF5 per spec/results-format.md, "
                                 "or one .npy with --case) against the golden cases they answer: same comparison, "
                                 "statuses, reports and exit codes as run.");
    k->footer("\nExamples:\n"
              "  moe-conform check --suite data/golden --results my_results/\n"
              "  moe-conform check --case data/golden/gemm3_qwen_spec_f32.h5 --results out.npy --precision f32\n"
              "  moe-conform check --suite data/golden --results my_results/ --json r.json --junit r.xml\n"
              "  moe-conform check --suite data/golden --results my_results/ --expect known_failures.json\n"
              "  moe-conform check --suite data/golden --results my_results/ --fail-on-mistrusted\n\n"
              "Exit codes as run: 0 expected statuses, 1 a FAIL, ERROR (a case with no result file) or XPASS\n"
              "(or a MISTRUSTED, with --fail-on-mistrusted), 2 usage or input error (a bad result or golden file, "
              "named),\n77 every case skipped. spec/results-format.md has the file format.");
    auto* ksuite = k->add_option("--suite", cc.suite, "Folder of golden files (*.h5)")->check(CLI::ExistingDirectory);
    auto* kcases = k->add_option("--case", cc.cases, "Golden file(s)");  // checked by check (cases_exist)
    ksuite->excludes(kcases);
    k->add_option("--results", cc.results, "Result files (.h5, or one .npy with one --case), or one folder of them")
        ->required()
        ->check(CLI::ExistingPath);
    k->add_option("--precision", cc.precision,
                  "The implementation's precision COMPUTE[/STORAGE[/DEQUANT]] (f64, f32, f16, bf16, or data: each "
                  "case's data type; DEQUANT: the type compressed weights are dequantised to), e.g. f32, f32/bf16, "
                  "f32/data or f32/f32/bf16: required for .npy and for result files without compute_type; overrides "
                  "the files' own")
        ->check(moe::cli::kNonEmpty);
    k->add_option("--name", cc.name, "The implementation's name in reports (default: the files' `implementation`)")
        ->check(moe::cli::kNonEmpty);
    k->add_option("--filter", cc.filters,
                  "Only cases whose name matches this glob (* and ?; a comma is part of the glob); repeatable")
        ->check(moe::cli::kNonEmpty);
    k->add_option("--expert-type", cc.expert_type, "Only cases of this expert type: gemm2 or gemm3 (see run)")
        ->transform(kExpertType);
    k->add_option("--tier", cc.tier, "Largest tier to run: quick < ci < full")->check(CLI::IsMember({"quick", "ci", "full"}));
    k->add_option("--json", cc.json, "Also write the JSON report here")
        ->check(moe::cli::kOutputFile);
    k->add_option("--junit", cc.junit, "Also write a JUnit XML report here")
        ->check(moe::cli::kOutputFile);
    k->add_option("--html", cc.html, "Also write a self-contained HTML report here (heatmaps of the failures)")
        ->check(moe::cli::kOutputFile);
    add_expect_option(k, cc);
    add_fail_on_mistrusted_flag(k, cc);
    k->add_option("--threads", cc.threads, threads_help())->transform(moe::cli::threads_check());
    k->add_flag("--quiet", cc.quiet, "No progress lines on stderr");
    k->add_flag("--no-manifest", cc.no_manifest, "Do not check the suite folder's MANIFEST.sha256");
    k->add_flag("--trust-stored-results", cc.trust_stored_results,
                "Do not recompute the golden files' stored outputs and bounds on a sample of tokens");
    auto* k_no_isolation =
        k->add_flag("--no-isolation", cc.no_isolation, "Read and judge every file in this process (see run)")
            ->disable_flag_override();
    k->add_option("--case-timeout", cc.case_timeout, "Seconds one file may take (see run)")
        ->check(moe::cli::kNonNegative)
        ->excludes(k_no_isolation);
    k->add_option("--shard", cc.shard, "Check share I of N of the golden files (see run --shard)")->check(kShard);
    k->add_option("--max-memory", cc.max_memory, "Largest memory one golden or result file may need once read")
        ->transform(CLI::AsSizeValue(false))
        ->transform(moe::cli::kSizeInRange)  // runs first
        ->check(moe::cli::kPositive);

    SelftestCommand sc;
    sc.threads = threads;
    auto* s = app.add_subcommand("selftest",
                                 "Run the suite against deliberately broken backends (mutants) and the correct ones: "
                                 "exit 0 only if every mutant is caught and every correct backend passes.");
    s->footer("\nExamples:\n"
              "  moe-conform selftest\n"
              "  moe-conform selftest --suite my_suite/ --json selftest.json --html selftest.html\n"
              "  moe-conform selftest --family opencl --device NVIDIA   # the opencl backend and its mutants on one device\n\n"
              "Exit codes: 0 every runnable mutant caught and every correct backend passing (mutants of an "
              "unavailable backend\nare SKIPPED), 1 a mutant missed or a correct backend failing, 2 usage or input "
              "error, 77 an empty --shard.");
    s->add_option("--suite", sc.suite, "Folder of golden files (default: the bundled suite)")->check(CLI::ExistingDirectory);
    s->add_option("--threads", sc.threads, threads_help())->transform(moe::cli::threads_check());
    s->add_flag("--no-manifest", sc.no_manifest, "Do not check the suite folder's MANIFEST.sha256");
    s->add_option("--shard", sc.shard,
                  "Run share I of N of the work: the correct backends and the mutants in order, every N-th from "
                  "the I-th (each still meets every case, so each verdict stands alone)")
        ->check(kShard);
    std::string families;
    for (const auto& f : moe::backends::backend_families()) families += (families.empty() ? "" : ", ") + f;
    // Each value whole, split by selftest (moe::cli::list_items), as run's --backend.
    s->add_option("--family", sc.families,
                  "Only these backend families, comma-separated, each once: their correct backends and their "
                  "mutants (" + families + "; loop_f32 and loop_lowp are loop, reference_dense reference)")
        ->check(moe::cli::list_check(CLI::IsMember(moe::backends::backend_families())))
        ->type_name("FAMILY,...");
    s->add_option("--device", sc.device,
                  "OpenCL device for the opencl backend and its mutants: P:D or a name substring (as run --device; "
                  "refused when --family leaves out opencl)")
        ->check(moe::cli::kNonEmpty);
    s->add_option("--json", sc.json, "Also write the score and the catch matrix (mutants x cases) as JSON here")
        ->check(moe::cli::kOutputFile);
    s->add_option("--html", sc.html, "Also write the score and the catch matrix as a self-contained HTML page here")
        ->check(moe::cli::kOutputFile);
    s->add_flag("--quiet", sc.quiet, "No progress on stderr (by default a line as each backend and mutant finishes)");

    ShrinkCommand kc;
    kc.threads = threads;
    auto* sh = app.add_subcommand("shrink",
                                 "Reduce a failing case to a small one that fails the same way (fewer tokens, slots, "
                                 "experts, features; simpler values), write it as a golden file and print its repro line.");
    sh->footer("\nExamples:\n"
               "  moe-conform shrink --backend mutant:cpu_scatter_race --case data/golden/gemm2_medium.h5 -o small.h5\n"
               "  moe-conform shrink --backend-lib ./libmy_moe.so --case data/golden/gemm2_medium.h5   # your plugin\n\n"
               "Exit codes: 0 shrunk and written, 1 the case does not fail on that backend, 2 usage or input error,\n"
               "4 shrunk and written, but two more runs did not both fail the same way (not deterministic: the\n"
               "repro may pass). The backend runs in a worker process: a case that crashes it (the same signal)\n"
               "or hangs it (past --candidate-seconds) shrinks like a failing one, and the written case reproduces it.");
    sh->add_option("--backend", kc.backend, "The backend: a built-in name, or a selftest mutant (mutant:NAME or NAME)")
        ->check(moe::cli::kNonEmpty);
    sh->add_option("--backend-lib", kc.backend_lib,
                   "Or your backend plugin (shared library, as for run; --backend then optional). Runs in a worker "
                   "process: a case that crashes or hangs the plugin is shrunk like a failing one")
        ->check(CLI::ExistingFile);
    // Not CLI::ExistingFile: shrink names a missing file's suite, and a close name in it.
    sh->add_option("--case", kc.case_file, "The failing golden case")->required();
    sh->add_option("-o,--out", kc.out,
                   "Where to write the shrunk case (default: <case name>_shrunk.h5 here; never the --case file)")
        ->check(moe::cli::kOutputFile);
    sh->add_option("--threads", kc.threads, threads_help())->transform(moe::cli::threads_check());
    sh->add_option("--device", kc.device,
                   "OpenCL device for the opencl backend or an opencl mutant, as for run (refused for another backend)")
        ->check(moe::cli::kNonEmpty);
    sh->add_option("--max-seconds", kc.max_seconds,
                   "Stop shrinking after this long (default 120); the smallest failing case found by then is "
                   "written, with a 'stopped early:' line")
        ->check(moe::cli::kPositive);
    sh->add_option("--candidate-seconds", kc.candidate_seconds,
                   "A backend run still going after this long is a hang: its worker is killed, and a case that "
                   "hangs shrinks to one that hangs; give a short value to shrink a hang (default: 10 times the "
                   "case as given took, at least 10 s, at most --max-seconds)")
        ->check(moe::cli::kPositive);
    sh->add_flag("--no-manifest", kc.no_manifest, "Do not check --case against its folder's MANIFEST.sha256");
    sh->add_flag("--quiet", kc.quiet, "No progress lines on stderr");

    // CLI11 says only "A subcommand is required" for a mistyped one.
    if (argc > 1 && argv[1][0] != '-') {
        bool known = false;
        for (const auto* sub : app.get_subcommands({})) known = known || sub->get_name() == argv[1];
        if (!known) {
            std::cerr << "moe-conform: unknown command '" << argv[1] << "' (commands: list, run, check, selftest, shrink; "
                      << "moe-conform --help)\n";
            return 2;
        }
    }
    if (const int code = moe::cli::parse_flags(app, argc, argv); code >= 0) return code;
    // Quoted as a shell reads it, so that the line in the reports can be pasted back.
    for (int i = 0; i < argc; ++i) rc.command_line += (i ? " " : "") + moe::conformance::shell_word(argv[i]);
    cc.command_line = rc.command_line;
    sc.command_line = rc.command_line;
    // Every repro line names the tool as this command did, so that it runs when pasted.
    rc.tool = cc.tool = sc.tool = kc.tool = moe::cli::rerun_tool(argv[0], "moe-conform");
    return moe::cli::run_with_exit_codes("moe-conform", [&] {
        if (*s) {
            if (sc.suite.empty()) sc.suite = default_suite();  // looked up only for selftest
            return selftest(sc);
        }
        if (*sh) {
            if (kc.backend.empty() && kc.backend_lib.empty()) {
                std::cerr << "moe-conform: error: give --backend NAME or --backend-lib PATH.so\n";
                return 2;
            }
            return shrink(kc);
        }
        if (*k) {
            if (cc.suite.empty() && cc.cases.empty()) {
                std::cerr << "moe-conform: error: give --suite DIR or --case FILE...\n";
                return 2;
            }
            return check(cc);
        }
        if (*r) {
            if (rc.backends.empty() && rc.backend_libs.empty()) {
                std::cerr << "moe-conform: error: give --backend NAME[,NAME...] or --backend-lib PATH.so\n";
                return 2;
            }
            if (rc.suite.empty() && rc.cases.empty()) {
                std::cerr << "moe-conform: error: give --suite DIR or --case FILE...\n";
                return 2;
            }
            return run(rc);
        }
        return list(list_libs, list_json);
    });
}
