#pragma once
// The time limit on each backend run of a shrink: a run still going past it is taken for a hang
// (a kernel that deadlocks or spins at some small shape). In a worker process (shrink_isolated,
// what moe-conform shrink uses) the worker is killed and the hang is that run's verdict, so a case
// that hangs shrinks like one that fails. In the shrinking process itself (shrink_case) a run that
// never returns cannot be stopped: the limit (a conformance::StepTimer) only gets a chance to say
// what was running and to end the process.

namespace moe::shrink {

// The floor of the per-candidate limit: a first run at a new shape may compile a kernel or warm
// a cache, which the original case's time does not show.
inline constexpr double kMinCandidateSeconds = 10.0;
// How much longer than the case as given a candidate may run: a candidate is never larger, so a
// run this much slower is taken for a hang.
inline constexpr double kCandidateSlowdown = 10.0;

// The default limit on one backend run, once the case as given ran in `original_seconds`:
// kCandidateSlowdown times that, at least kMinCandidateSeconds, and no more than the whole
// search's budget `max_seconds` (a candidate running longer has overrun the search; the floor
// still applies, so that a tiny --max-seconds does not turn every run into a "hang").
double default_candidate_seconds(double original_seconds, double max_seconds);

}  // namespace moe::shrink
