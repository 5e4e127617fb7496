// moe-conform: runs MoE implementations against golden data and gives a verdict a person and a
// CI can act on.
#include <CLI/CLI.hpp>
#include <iostream>
#include <thread>

#include "commands.hpp"
#include "cli_errors.hpp"

using namespace moe::conform_cli;

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
        "  moe-conform selftest\n\n"
        "Golden files are untrusted input (spec/golden-format.md, \"Untrusted files\"): nothing outside a\n"
        "file is read (external storage, external links and virtual datasets are refused), memory is\n"
        "bounded (--max-memory), stored results must agree with a recomputation from the inputs, and a\n"
        "suite folder's MANIFEST.sha256 must match (--no-manifest skips it). Files are read and run in\n"
        "worker processes: a file or backend that crashes or hangs (--case-timeout) is an ERROR of its\n"
        "own, the run goes on and its reports are written (--no-isolation for debugging).\n\n"
        "Exit codes: 0 every case has its expected status (PASS, XFAIL, SKIP, MISTRUSTED), 1 a FAIL,\n"
        "ERROR or XPASS, 2 usage or input error (bad, corrupt, malformed or refused golden file, a\n"
        "manifest mismatch: named), 77 every case was skipped (nothing compared), 3 internal error."};
    app.require_subcommand(1);
    const int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));

    app.add_subcommand("list", "List the backends, whether each is available, and why not.");

    RunCommand rc;
    rc.threads = threads;
    auto* r = app.add_subcommand("run", "Run backends over golden cases and report.");
    r->add_option("--backend", rc.backends, "Backend name(s), comma-separated; 'all' = every built-in backend")
        ->required()
        ->delimiter(',');
    auto* suite = r->add_option("--suite", rc.suite, "Folder of golden files (*.h5)")->check(CLI::ExistingDirectory);
    auto* cases = r->add_option("--case", rc.cases, "Golden file(s) to run")->check(CLI::ExistingFile);
    suite->excludes(cases);
    r->add_option("--filter", rc.filters, "Only cases whose name matches this glob (* and ?); repeatable");
    r->add_option("--tier", rc.tier, "Largest tier to run: quick < ci < full (default full: every file given)")
        ->check(CLI::IsMember({"quick", "ci", "full"}));
    r->add_option("--json", rc.json, "Also write the JSON report here (schema: spec/report.schema.json)");
    r->add_option("--junit", rc.junit, "Also write a JUnit XML report here");
    r->add_option("--expect", rc.expect, "Expectation file: known failures (XFAIL) and skips, with reasons")
        ->check(CLI::ExistingFile);
    r->add_option("--threads", rc.threads, "Threads for the reference computations")->check(CLI::PositiveNumber);
    r->add_option("--device", rc.device,
                  "OpenCL device for the opencl backend: P:D (platform, device index) or a name substring "
                  "(default: the first GPU, else the first device; see moe-conform list)");
    r->add_flag("--quiet", rc.quiet, "No progress lines on stderr");
    r->add_flag("--no-manifest", rc.no_manifest,
                "Do not check the suite folder's MANIFEST.sha256 (by default, where the folder has one, every "
                "*.h5 file must be listed with its SHA-256, else nothing runs and the exit code is 2; a --case "
                "file is checked against its folder's manifest where it lists the file)");
    r->add_flag("--no-isolation", rc.no_isolation,
                "Read and run every file in this process (for debugging: a crash in HDF5 or a backend then ends "
                "the run). By default each file is read and run in a worker process: a crash or a hang there "
                "is reported as ERROR for that file (naming the signal or the timeout) and the run goes on");
    r->add_option("--case-timeout", rc.case_timeout,
                  "Seconds one file may take to read and check, and each backend to run on it, before its worker "
                  "is killed and the case reported as ERROR (default 600; 0 = no limit)")
        ->check(CLI::NonNegativeNumber);
    r->add_flag("--trust-stored-results", rc.trust_stored_results,
                "Do not check that each file's stored output and error bounds agree with the reference recomputed "
                "from its inputs (on up to 256 tokens; by default a file where they disagree, or with a negative "
                "bound, is refused: exit 2). For runner tests that edit outputs on purpose");
    r->add_option("--max-memory", rc.max_memory,
                  "Largest memory one golden file may need once read (e.g. 512M, 8G; default: the smaller of 8 GiB "
                  "and 3/4 of physical memory); a file needing more is refused before anything is read")
        ->transform(CLI::AsSizeValue(false));

    SelftestCommand sc;
    sc.threads = threads;
    sc.suite = MOE_DEFAULT_SUITE;
    auto* s = app.add_subcommand("selftest",
                                 "Run the suite against deliberately broken backends (mutants) and the correct ones: "
                                 "exit 0 only if every mutant is caught and every correct backend passes.");
    s->add_option("--suite", sc.suite, "Folder of golden files (default: the bundled suite)")->check(CLI::ExistingDirectory);
    s->add_option("--threads", sc.threads, "Threads for the reference computations")->check(CLI::PositiveNumber);
    s->add_flag("--no-manifest", sc.no_manifest, "Do not check the suite folder's MANIFEST.sha256");

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        const int code = app.exit(e);
        return code == 0 ? 0 : 2;
    }
    for (int i = 0; i < argc; ++i) rc.command_line += (i ? " " : "") + std::string(argv[i]);
    return moe::cli::run_with_exit_codes("moe-conform", [&] {
        if (*s) return selftest(sc);
        if (*r) {
            if (rc.suite.empty() && rc.cases.empty()) {
                std::cerr << "moe-conform: error: give --suite DIR or --case FILE...\n";
                return 2;
            }
            return run(rc);
        }
        return list();
    });
}
