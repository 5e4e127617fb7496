#include "device_check.hpp"

#include "child_process.hpp"
#include "moe/backends/registry.hpp"
#include "moe/spec/error.hpp"

namespace moe::conform_cli {

void check_device_exists(const std::string& spec) {
    if (spec.empty()) return;
    // Enumerating devices takes a driver milliseconds; the limit only ends a driver that hangs, and
    // a child that fails or overruns leaves the question to the backend (its cases SKIP, named).
    const auto why = in_child_process([&] { return backends::device_problem(spec); }, 30000);
    if (why && !why->empty()) throw InputError("--device " + spec + ": " + *why);
}

void refuse_unused_device(const std::string& device, bool opencl_runs, const std::string& what_runs) {
    if (!device.empty() && !opencl_runs)
        throw InputError("--device " + device + " picks the OpenCL device of the opencl backend and its mutants; " +
                         what_runs + " runs none of them (leave --device out)");
}

void check_opencl_environment() {
    if (const std::string why = backends::environment_problem(); !why.empty()) throw InputError(why);
}

}  // namespace moe::conform_cli
