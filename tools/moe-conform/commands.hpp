#pragma once
// The subcommands of moe-conform. Each returns the process exit code (spec/report-format.md):
// 0 every case has its expected status, 1 a FAIL/ERROR/XPASS (selftest: a mutant escaped or a
// correct backend failed), 2 usage or input error, 77 nothing compared (all skipped).
#include <string>
#include <vector>

namespace moe::conform_cli {

struct RunCommand {
    std::vector<std::string> backends;
    std::vector<std::string> backend_libs;  // --backend-lib: plugins (moe_conform/backend_abi.h)
    std::string suite;
    std::vector<std::string> cases;
    std::vector<std::string> filters;
    std::string tier = "full";
    std::string json, junit, expect, html;
    std::string device;  // --device: the OpenCL device ("P:D" or a name substring)
    int threads = 1;
    bool quiet = false;
    std::string command_line;
};
int run(const RunCommand& c);

int list(const std::vector<std::string>& backend_libs);

struct SelftestCommand {
    std::string suite;
    int threads = 1;
    std::string json;  // --json: the score and the catch matrix (spec/report-format.md)
    std::string html;  // --html: the same as one page
    std::string command_line;
};
int selftest(const SelftestCommand& c);

struct ShrinkCommand {
    std::string backend;      // a built-in backend or a selftest mutant (mutant:NAME or NAME)
    std::string case_file;    // the failing golden case
    std::string out;          // the shrunk golden case (default: <case>_shrunk.h5 here)
    std::string device;       // --device, as for run
    int threads = 1;
    double max_seconds = 120;
    bool quiet = false;
};
// 0 shrunk and written, 1 the case does not fail on the backend, 2 usage or input error.
int shrink(const ShrinkCommand& c);

}  // namespace moe::conform_cli
