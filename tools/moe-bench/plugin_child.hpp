#pragma once
// A backend plugin is someone's kernel under development: it may crash, or end the process from
// inside run(). moe-bench times it in a forked child process that writes to the same stdout and
// stderr, so such an end is reported (and the rows printed before it stay) instead of killing
// moe-bench, or, for a plugin that calls exit(0), passing for a finished benchmark. The child
// sends each row back as it is measured: the parent writes --json with the rows measured before
// the end, whichever it was.
#include <functional>
#include <string>
#include <vector>

namespace moe::bench_cli {

// Sends a line of text (no '\n' in it) to the parent; what work() is given in the child.
using SendLine = std::function<void(const std::string&)>;

// work(send)'s exit status, computed in a child process; when the child ends any other way (a
// signal, or exiting before work() returned), or has not finished after timeout_seconds (0: no
// limit; it is then killed: a plugin that hangs), says so on stderr, naming `backend`, and
// returns 1. The lines work() sent are appended to `received`, however the child ended.
int run_plugin_in_child(const std::string& backend, const std::function<int(const SendLine&)>& work,
                        double timeout_seconds, std::vector<std::string>& received);

}  // namespace moe::bench_cli
