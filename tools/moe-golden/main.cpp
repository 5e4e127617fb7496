// moe-golden: makes and checks golden files (spec/golden-format.md) from the catalogue.
#include <CLI/CLI.hpp>
#include <filesystem>
#include <iostream>
#include <thread>

#include "cli_checks.hpp"
#include "installed_path.hpp"
#include "cli_errors.hpp"
#include "commands.hpp"

using namespace moe::golden_cli;

namespace {
constexpr const char* kMaxMemoryHelp =
    "Largest memory the file may need once read (e.g. 512M, 8G; default: the smaller of 8 GiB and 3/4 of "
    "physical memory); checked before anything is read";

// The bundled catalogue, verify's default: <prefix>/share/moe_conform/catalog/bundled.json
// beside an installed moe-golden, else the source tree's. Looked up only when verify runs
// without --catalog.
std::string default_catalog() {
    return moe::cli::installed_or(MOE_INSTALLED_CATALOG_FROM_BIN, moe::cli::InstalledKind::file, MOE_DEFAULT_CATALOG);
}

// --threads: a decimal count up to moe::cli::max_threads() (CLI11 alone read "010" as octal 8 and
// "0x10" as 16, and said only "Could not convert" for "1.5").
std::string threads_help(const std::string& what) {
    return what + " (default: this machine's hardware threads; at most " + std::to_string(moe::cli::max_threads()) +
           ")";
}
}  // namespace

int main(int argc, char** argv) {
    CLI::App app{
        "moe-golden: makes golden HDF5 files for MOE conformance testing, and checks them.\n"
        "A golden file holds one case: the op's attributes, its inputs in their element type, and the\n"
        "double-precision reference output (spec/golden-format.md).\n\n"
        "Examples:\n"
        "  moe-golden generate --catalog conformance/catalog/bundled.json --out data/golden --stages --manifest\n"
        "  moe-golden verify --catalog conformance/catalog/bundled.json --dir data/golden\n"
        "  moe-golden verify --dir /usr/share/moe_conform/golden --filter topk_one   # an installed file\n"
        "  moe-golden complete captured_inputs.h5 -o captured_case.h5\n"
        "  moe-golden inspect data/golden/gemm2_gptoss_openvino_f32.h5\n\n"
        "Golden files are untrusted input: a file is refused (exit 2, naming the dataset and the feature)\n"
        "when its data lies outside it (external storage, external links, virtual datasets), uses a filter\n"
        "other than deflate, shuffle and fletcher32, is not a regular file, or needs more memory than\n"
        "--max-memory; see spec/golden-format.md, \"Untrusted files\".\n\n"
        "Exit codes: 0 success, 1 a regenerated file differs, 2 bad input (usage, file, catalogue, an output\n"
        "that cannot be written), 3 internal error (a bug: please report it)."};
    app.require_subcommand(1);
    const int default_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));

    GenerateOptions gen;
    gen.threads = default_threads;
    auto* g = app.add_subcommand("generate",
                                 "Generate golden files for the catalogue's cases (progress on stderr). Each file is "
                                 "written to a temporary file and renamed, so a generator killed half-way leaves no "
                                 "partial .h5; the temporary files of killed generators are removed first.");
    g->add_option("--catalog", gen.catalog, "Catalogue file (JSON, spec/catalog-format.md)")->required()->check(CLI::ExistingFile);
    g->add_option("--out", gen.out_dir, "Output folder (created if missing)")
        ->required()
        ->check(moe::cli::kOutputFolder);
    g->add_option("--filter", gen.filters,
                  "Only cases whose name matches this glob (* and ?; a comma is part of the glob); repeatable")
        ->check(moe::cli::kNonEmpty);
    g->add_option("--tier", gen.tier, "Largest tier to include: quick < ci < full (default ci: the bundled suite)")
        ->check(CLI::IsMember({"quick", "ci", "full"}));
    g->add_flag("--stages", gen.stages, "Also store the intermediate stages (/stages)");
    g->add_flag("--manifest", gen.manifest, "Rewrite MANIFEST.sha256 of the output folder afterwards");
    g->add_option("--threads", gen.threads, threads_help("Threads for the reference (results do not depend on it)"))
        ->transform(moe::cli::threads_check());
    g->add_option("--max-memory", gen.max_memory,
                  "Largest memory generating one case may need (e.g. 512M, 8G; default: the smaller of 8 GiB and "
                  "3/4 of physical memory); every selected case is checked before any is generated")
        ->transform(CLI::AsSizeValue(false))
        ->transform(moe::cli::kSizeInRange)  // runs first
        ->check(moe::cli::kPositive);

    VerifyOptions ver;
    ver.threads = default_threads;
    auto* v = app.add_subcommand("verify",
                                 "Check a golden folder: every file matches MANIFEST.sha256 and regenerating each catalogue "
                                 "case reproduces the file's data bit for bit.");
    v->add_option("--catalog", ver.catalog,
                  "Catalogue file (default: the bundled suite's; an installed moe-golden's is "
                  "<prefix>/share/moe_conform/catalog/bundled.json)")
        ->check(CLI::ExistingFile);
    v->add_option("--dir", ver.dir, "Golden folder")->required()->check(CLI::ExistingDirectory);
    v->add_option("--tier", ver.tier, "Largest tier to check (default ci)")->check(CLI::IsMember({"quick", "ci", "full"}));
    v->add_option("--filter", ver.filters,
                  "Only regenerate the cases whose name matches this glob (* and ?; a comma is part of the glob); "
                  "repeatable. The manifest check still covers the whole folder")
        ->check(moe::cli::kNonEmpty);
    v->add_option("--threads", ver.threads, threads_help("Threads for the reference"))
        ->transform(moe::cli::threads_check());
    v->add_option("--max-memory", ver.max_memory,
                  "Largest memory reading one file or regenerating its case may need (e.g. 512M, 8G; default: the "
                  "smaller of 8 GiB and 3/4 of physical memory); every selected case is checked before any is read")
        ->transform(CLI::AsSizeValue(false))
        ->transform(moe::cli::kSizeInRange)  // runs first
        ->check(moe::cli::kPositive);

    CompleteOptions com;
    com.threads = default_threads;
    auto* c = app.add_subcommand("complete",
                                 "Compute /outputs (and /stages) of a file that holds root attributes and /inputs only: "
                                 "how inputs captured from a real model join the suite.");
    c->add_option("file", com.input, "Input HDF5 file")->required()->check(CLI::ExistingFile);
    c->add_option("-o,--output", com.output, "Write here instead of replacing the input file (atomically)")
        ->check(moe::cli::kOutputFile);
    c->add_flag("--stages", com.stages, "Also store the intermediate stages");
    c->add_option("--threads", com.threads, threads_help("Threads for the reference"))
        ->transform(moe::cli::threads_check());
    c->add_option("--max-memory", com.max_memory, kMaxMemoryHelp)
        ->transform(CLI::AsSizeValue(false))
        ->transform(moe::cli::kSizeInRange)  // runs first
        ->check(moe::cli::kPositive);

    InspectOptions ins;
    ins.threads = default_threads;
    auto* i = app.add_subcommand("inspect",
                                 "Print a golden file's attributes, datasets, value ranges and integrity (format "
                                 "version, which datasets carry checksums), and check that its stored output and "
                                 "error bounds belong to its inputs. Exit 2 when the file is refused, damaged, or "
                                 "holds a problem the op rejects.");
    i->add_option("file", ins.file, "HDF5 file")->required()->check(CLI::ExistingFile);
    i->add_option("--max-memory", ins.max_memory, kMaxMemoryHelp)
        ->transform(CLI::AsSizeValue(false))
        ->transform(moe::cli::kSizeInRange)  // runs first
        ->check(moe::cli::kPositive);

    // CLI11 says only "A subcommand is required" for a mistyped one (as moe-conform does).
    if (argc > 1 && argv[1][0] != '-') {
        bool known = false;
        for (const auto* sub : app.get_subcommands({})) known = known || sub->get_name() == argv[1];
        if (!known) {
            std::cerr << "moe-golden: unknown command '" << argv[1]
                      << "' (commands: generate, verify, complete, inspect; moe-golden --help)\n";
            return 2;
        }
    }
    if (const int code = moe::cli::parse_flags(app, argc, argv); code >= 0) return code;
    return moe::cli::run_with_exit_codes("moe-golden", [&] {
        if (*g) return generate(gen);
        if (*v) {
            if (ver.catalog.empty()) ver.catalog = default_catalog();
            return verify(ver);
        }
        if (*c) return complete(com);
        return inspect(ins);
    });
}
