#pragma once
// The subcommands of moe-conform. Each returns the process exit code (spec/report-format.md):
// 0 every case has its expected status, 1 a FAIL/ERROR/XPASS (selftest: a mutant escaped or a
// correct backend failed), 2 usage or input error, 77 nothing compared (all skipped).
#include <cstdint>
#include <string>
#include <vector>

namespace moe::conform_cli {

struct RunCommand {
    std::vector<std::string> backends;
    std::string suite;
    std::vector<std::string> cases;
    std::vector<std::string> filters;
    std::string tier = "full";
    std::string json, junit, expect;
    std::string device;  // --device: the OpenCL device ("P:D" or a name substring)
    int threads = 1;
    bool quiet = false;
    bool no_manifest = false;        // --no-manifest: do not check the suite's MANIFEST.sha256
    bool trust_stored_results = false;  // --trust-stored-results: no recomputation of stored results
    bool no_isolation = false;       // --no-isolation: read and run in this process (debugging)
    double case_timeout = 600;       // --case-timeout: seconds per file read, or per backend on a file
    std::uint64_t max_memory = 0;    // --max-memory: bytes one golden file may need once read; 0 = default
    std::string command_line;
};
int run(const RunCommand& c);

// The suite folder's MANIFEST.sha256, where there is one, must name every *.h5 file with its
// digest; for --case files, their folder's manifest where it lists them. Prints each problem and
// returns false on any.
bool manifest_agrees(const std::string& suite, const std::vector<std::string>& cases, const char* tool);

int list();

struct SelftestCommand {
    std::string suite;
    int threads = 1;
    bool no_manifest = false;
};
int selftest(const SelftestCommand& c);

// "all" expands to every built-in backend.
std::vector<std::string> expand_backend_names(const std::vector<std::string>& names);

}  // namespace moe::conform_cli
