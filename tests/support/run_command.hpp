#pragma once
// Runs a shell command for CLI tests: its exit status and everything it printed (stdout+stderr).
#include <array>
#include <cstdio>
#include <string>
#include <sys/wait.h>

namespace moe::test {

struct CommandResult {
    int exit_code = -1;  // -1: did not exit normally (a crash shows here)
    std::string output;
};

inline CommandResult run_command(const std::string& command) {
    CommandResult r;
    FILE* pipe = popen((command + " 2>&1").c_str(), "r");
    if (!pipe) return r;
    std::array<char, 4096> buf;
    std::size_t n;
    while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) r.output.append(buf.data(), n);
    const int status = pclose(pipe);
    if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
    return r;
}

inline std::string moe_golden() { return std::string(MOE_BINARY_DIR) + "/bin/moe-golden"; }

}  // namespace moe::test

namespace moe::test {

inline std::string moe_conform() { return std::string(MOE_BINARY_DIR) + "/bin/moe-conform"; }
inline std::string moe_bench() { return std::string(MOE_BINARY_DIR) + "/bin/moe-bench"; }

// Runs a Python snippet with Debian's interpreter (which has h5py and numpy).
inline CommandResult run_python(const std::string& code) {
    std::string quoted = "'";
    for (char c : code) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return run_command("/usr/bin/python3 -c " + quoted + "'");
}

}  // namespace moe::test
