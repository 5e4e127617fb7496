#pragma once
// Helper threads for the staged transfers (host_transfer.cpp), kept for the life of the process
// so that a transfer does not pay for starting and joining threads (about 10 us each on Linux,
// several per transfer). Between transfers they sleep on a condition variable and never spin:
// with an OpenMP pool, some runs on the H100 host stalled for tens of ms, idle pool threads
// competing with the driver's own for the CPUs being the likely cause.
#include <functional>

namespace moe::backends::ocl {

// job(t) for every t in [0, n): t = 0 on the calling thread, the others on helper threads
// (started at the first call that needs them). Returns when every job(t) has returned and then
// rethrows the first exception one of them threw. Calls from several threads take turns.
void run_on_helpers(unsigned n, const std::function<void(unsigned)>& job);

}  // namespace moe::backends::ocl
