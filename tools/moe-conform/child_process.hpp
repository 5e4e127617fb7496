#pragma once
// Work that reads what may hang or crash this process (untrusted golden files before the workers
// read them, an OpenCL driver the parent must not load before it forks the workers), done in a
// forked child instead.
#include <functional>
#include <optional>
#include <string>

namespace moe::conform_cli {

// `work`'s text, computed in a child process; nullopt when the child could not start, threw,
// crashed, or ran past `limit_ms` (then killed).
std::optional<std::string> in_child_process(const std::function<std::string()>& work, long limit_ms);

}  // namespace moe::conform_cli
