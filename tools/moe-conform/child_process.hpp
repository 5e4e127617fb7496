#pragma once
// Work that reads what may hang or crash this process (untrusted golden files before the workers
// read them, an OpenCL driver the parent must not load before it forks the workers), done in a
// forked child instead.
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace moe::conform_cli {

// `work`'s text, computed in a child process; nullopt when the child could not start, threw,
// crashed, or ran past `limit_ms` (then killed).
std::optional<std::string> in_child_process(const std::function<std::string()>& work, long limit_ms);

// How long reading `files` may take in a child before it counts as hung: about a second per
// 100 MB read or hashed, and a minute besides; the limit only ends a hang.
long read_limit_ms(const std::vector<std::string>& files);

// A tool that reads untrusted files in its own process before its workers (check's golden and
// result files, run --write-results' case identities) reads them in a child first: `read_one` on
// each of `files` in one child, then, only when that child crashes or hangs, in a child per file.
// One line per file whose reading crashed or hung ("<kind> <file>: reading it crashed or hung the
// HDF5 library (a damaged file)"), or one line when only the whole did; none when the reading
// came back (what read_one threw is for the call in this process to say).
std::vector<std::string> files_that_crash(const std::vector<std::string>& files,
                                          const std::function<void(const std::string&)>& read_one,
                                          const std::string& kind);

}  // namespace moe::conform_cli
