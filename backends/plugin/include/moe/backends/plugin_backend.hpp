#pragma once
// Backends built outside the project: shared libraries speaking the C ABI of
// moe_conform/backend_abi.h, loaded at run time (`moe-conform run --backend-lib PATH.so`).
#include <memory>
#include <string>

#include "moe/spec/backend.hpp"

namespace moe::backends {

// dlopen()s `path`, checks the ABI version and the table, and returns the backend under the
// plugin's own name. Throws InputError naming the file and the fault (not a shared library, no
// moe_conform_backend_v2 or _v1 symbol, another ABI version, a missing function, a bad precision).
// The library stays loaded while the backend lives.
std::unique_ptr<Backend> load_plugin_backend(const std::string& path);

// load_plugin_backend in a child process first: throws InputError naming `path` where that load
// crashes (a signal) or takes more than `seconds`; returns otherwise (a fault with a message is
// left to load_plugin_backend to report). Call it before any thread is started.
void probe_plugin_backend(const std::string& path, double seconds = 60);

}  // namespace moe::backends
