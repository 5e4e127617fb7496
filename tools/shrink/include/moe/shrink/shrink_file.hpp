#pragma once
// A failing golden file in, a shrunk golden file out: what `moe-conform shrink` and the Python
// door's moe_conform.shrink() share around shrink_case().
#include <string>

#include "moe/golden/golden_file.hpp"
#include "moe/shrink/shrink.hpp"

namespace moe::shrink {

// moe-conform shrink's exit codes beside 0 (shrunk and written), 1 (the case does not fail on the
// backend) and 2 (usage or input error); the Python door's ShrinkResult.exit_code says the same.
// The shrunk case was written, but two more runs on it did not both fail the same way: the
// backend is not deterministic and the repro line may pass, which exit 0 would hide from a script.
inline constexpr int kExitNotDeterministic = 4;
// The codes of a shrink whose backend runs in the shrinking process (shrink_case with
// Options::overrun and Options::crashed): a run went past the per-run limit (a hang), or crashed
// the process (a signal of crash_signals(): SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT; not 128 +
// the signal, which a shell reads as the process killed, with no message). The smallest failing
// case found before it is left in the output file. moe-conform shrink runs the backend in a
// worker process (shrink_isolated), where a hang or a crash is a verdict, and no longer ends so.
inline constexpr int kExitRunOverran = 5;
inline constexpr int kExitBackendCrashed = 6;

// Reads `file` as `moe-conform run` reads it: the problem validated, and the stored output and
// bounds checked against the reference recomputed from its inputs. A damaged file fails every
// backend, the reference too, and no smaller case (its results recomputed) fails with it: it is
// an error here (golden::FileError, InputError), not a case to shrink.
golden::GoldenCase read_failing_case(const std::string& file, int threads);

// Where the shrunk case goes by default: <case name>_shrunk.h5 in the current folder, the case
// name (untrusted) made a plain file name.
std::string default_output(const golden::GoldenCase& original);

// r.shrunk named <case>_shrunk, described (the backend, the edits and runs), written atomically
// as a golden file to `file`.
void write_shrunk(const std::string& file, const golden::GoldenCase& original, Result& r, const std::string& backend);

// The smallest failing case found so far (Options::accepted), written to `file` as write_shrunk
// writes the result, its description saying that the search had not finished: what is left on
// disk when the backend crashes on a later candidate or the process is killed.
void write_partial(const std::string& file, const golden::GoldenCase& original, const golden::GoldenCase& current,
                   const std::string& backend);

// The lines `moe-conform shrink` prints after the search (before its repro line): sizes before
// and after, the verdict, and whether the search was cut short or the backend is not deterministic.
std::string summary_lines(const golden::GoldenCase& original, const Result& r, const std::string& backend);

}  // namespace moe::shrink
