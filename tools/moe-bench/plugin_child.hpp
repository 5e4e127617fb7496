#pragma once
// A backend plugin is someone's kernel under development: it may crash, or end the process from
// inside run(). moe-bench times it in a forked child process that writes to the same stdout and
// stderr, so such an end is reported (and the rows printed before it stay) instead of killing
// moe-bench, or, for a plugin that calls exit(0), passing for a finished benchmark.
#include <functional>
#include <string>

namespace moe::bench_cli {

// work()'s exit status, computed in a child process; when the child ends any other way (a
// signal, or exiting before work() returned), or has not finished after timeout_seconds (0: no
// limit; it is then killed: a plugin that hangs), says so on stderr, naming `backend`, and
// returns 1.
int run_plugin_in_child(const std::string& backend, const std::function<int()>& work, double timeout_seconds);

}  // namespace moe::bench_cli
