#pragma once
// The built-in backends and the selftest's mutants, by name. Only the command-line tools (and a
// future plugin loader) link this: it brings in every backend family and their libraries.
#include <memory>
#include <string>
#include <vector>

#include "moe/spec/backend.hpp"
#include "moe/spec/mutant.hpp"

namespace moe::backends {

std::vector<std::string> builtin_backend_names();

// Options some built-in backends take; the others ignore them.
struct BuiltinOptions {
    std::string device;  // opencl: "" (first GPU, else first device), "P:D", or a name substring
};
// Throws InputError naming the known backends when `name` is not one of them.
std::unique_ptr<Backend> make_builtin_backend(const std::string& name, const BuiltinOptions& options = {});

// The backends a command names: built-in names, "all" (every built-in backend and every loaded
// plugin), or the names of plugins loaded from `libraries` (moe_conform/backend_abi.h). No names:
// every loaded plugin. Throws InputError for an unknown name, a name given twice, or a library
// that is not a valid plugin (load_plugin_backend's messages).
struct BackendSet {
    std::vector<std::unique_ptr<Backend>> owned;
    std::vector<Backend*> list;  // in the order named
};
BackendSet make_backends(const std::vector<std::string>& names, const std::vector<std::string>& libraries,
                         const BuiltinOptions& options = {});

// The same selection as makers, for a run that makes its backends where the cases run (worker
// processes). Names and plugins are checked here, in this process: an unknown name or a bad
// plugin throws InputError before anything runs; a plugin is loaded (and released) to check it,
// then loaded again inside each worker. UnnamedPlugins::refused: names that leave out a loaded
// plugin throw InputError too (`run --backend-lib mine.so --backend loop_f32` would otherwise pass
// without running the plugin); moe-bench, which times one backend, picks one of several plugins.
enum class UnnamedPlugins { allowed, refused };
std::vector<BackendMaker> make_backend_makers(const std::vector<std::string>& names,
                                              const std::vector<std::string>& libraries,
                                              const BuiltinOptions& options = {},
                                              UnnamedPlugins unnamed = UnnamedPlugins::allowed);

// Every family's deliberately broken backends, the ones `moe-conform selftest` must catch (the
// opencl ones on options.device).
std::vector<Mutant> selftest_mutants(const BuiltinOptions& options = {});

// The backend families (Mutant::family, and "reference", which has no mutants), and the family of
// a built-in backend (loop_f32 and loop_lowp: loop; reference_dense: reference): what
// `moe-conform selftest --family` selects by.
std::vector<std::string> backend_families();
std::string backend_family(const std::string& builtin_name);

// Whether `name` is a built-in backend or a selftest mutant (NAME or mutant:NAME), by name alone
// (making one would open an OpenCL device for nothing).
bool builtin_or_mutant(const std::string& name);

// Whether `name` is the opencl backend or one of its mutants (NAME or mutant:NAME): what --device
// and the MOE_OPENCL_* variables concern.
bool opencl_family(const std::string& name);

// One line per OpenCL device found, or one line saying why none (moe-conform list).
std::vector<std::string> device_list();

// Why --device `spec` names no OpenCL device where there are some (the devices named), else "".
std::string device_problem(const std::string& spec);

// What is wrong with the built-in backends' environment variables (the opencl backend's
// MOE_OPENCL_STAGING, MOE_OPENCL_GEMM and MOE_OPENCL_KERNEL_DIR), "" when nothing.
std::string environment_problem();

}  // namespace moe::backends
