#include "moe/backends/registry.hpp"

#include <algorithm>
#include <optional>

#include "moe/backends/blockwise_backend.hpp"
#include "moe/backends/cpu_backend.hpp"
#include "moe/backends/expert_parallel_backend.hpp"
#include "moe/backends/loop_backend.hpp"
#include "moe/backends/opencl_backend.hpp"
#include "moe/backends/plugin_backend.hpp"
#include "moe/backends/reference_backend.hpp"
#include "moe/spec/error.hpp"

namespace moe::backends {

std::vector<std::string> builtin_backend_names() {
    return {"reference", "reference_dense", "loop_f32", "loop_lowp", "cpu", "opencl", "blockwise", "expert_parallel"};
}

namespace {

// The selftest mutant `name` names, spelt NAME or mutant:NAME (its backend's own name), if any.
std::optional<Mutant> mutant_named(const std::string& name, const BuiltinOptions& options = {}) {
    const std::string bare = name.rfind("mutant:", 0) == 0 ? name.substr(7) : name;
    for (auto& m : selftest_mutants(options))
        if (m.name == bare) return m;
    return std::nullopt;
}

}  // namespace

std::unique_ptr<Backend> make_builtin_backend(const std::string& name, const BuiltinOptions& options) {
    if (name == "reference") return std::make_unique<ReferenceBackend>(false);
    if (name == "reference_dense") return std::make_unique<ReferenceBackend>(true);
    if (name == "loop_f32") return std::make_unique<LoopBackend>(LoopOptions{false, LoopMutation::none});
    if (name == "loop_lowp") return std::make_unique<LoopBackend>(LoopOptions{true, LoopMutation::none});
    if (name == "cpu") return std::make_unique<CpuBackend>();
    if (name == "blockwise") return std::make_unique<BlockwiseBackend>();
    if (name == "expert_parallel") return std::make_unique<ExpertParallelBackend>();
    if (name == "opencl") return std::make_unique<OpenclBackend>(OpenclOptions{options.device});
    // A selftest mutant, so that the repro lines of selftest and shrink work.
    if (const auto m = mutant_named(name, options)) return m->make();
    std::string known;
    for (const auto& n : builtin_backend_names()) known += (known.empty() ? "" : ", ") + n;
    throw InputError("unknown backend '" + name + "' (built-in backends: " + known +
                     "; or a selftest mutant, mutant:NAME, listed by moe-conform list)");
}

namespace {

// The plugins of `libraries`, loaded to check them (ABI, table, precision) and their names.
std::vector<std::unique_ptr<Backend>> load_plugins(const std::vector<std::string>& libraries) {
    std::vector<std::unique_ptr<Backend>> plugins;
    const auto builtins = builtin_backend_names();
    for (const auto& path : libraries) {
        probe_plugin_backend(path);
        auto b = load_plugin_backend(path);
        for (const auto& other : plugins)
            if (other->name() == b->name())
                throw InputError("backend library " + path + ": a loaded plugin is already called '" + b->name() + "'");
        if (std::find(builtins.begin(), builtins.end(), b->name()) != builtins.end())
            throw InputError("backend library " + path + ": its name '" + b->name() + "' is a built-in backend's");
        plugins.push_back(std::move(b));
    }
    return plugins;
}

// The names a command asked for, "all" and the default expanded; each known and given once.
// Returns, per name, the index of its plugin or -1 for a built-in backend.
std::vector<std::pair<std::string, int>> resolve_names(const std::vector<std::string>& names,
                                                       const std::vector<std::unique_ptr<Backend>>& plugins) {
    std::vector<std::string> wanted;
    for (const auto& n : names) {
        if (n != "all") {
            wanted.push_back(n);
            continue;
        }
        for (const auto& b : builtin_backend_names()) wanted.push_back(b);
        for (const auto& p : plugins) wanted.push_back(p->name());
    }
    if (names.empty())
        for (const auto& p : plugins) wanted.push_back(p->name());
    const auto builtins = builtin_backend_names();
    std::vector<std::pair<std::string, int>> out;
    // A mutant's two spellings (NAME, mutant:NAME) are one backend.
    const auto mutant_name = [&](const std::string& n) {
        const auto m = mutant_named(n);
        return m ? "mutant:" + m->name : std::string();
    };
    const auto canonical = [&](const std::string& n) {
        const std::string m = mutant_name(n);
        return m.empty() ? n : m;
    };
    for (const auto& n : wanted) {
        for (const auto& seen : out)
            if (canonical(seen.first) == canonical(n)) throw InputError("backend '" + n + "' is named twice");
        int plugin = -1;
        for (std::size_t i = 0; i < plugins.size(); ++i)
            if (plugins[i]->name() == n) plugin = static_cast<int>(i);
        // Known by name only: making one here (an opencl mutant opens a device context) before the
        // workers fork left them an OpenCL runtime whose threads did not survive the fork, and every
        // case hung until --case-timeout.
        if (plugin < 0 && std::find(builtins.begin(), builtins.end(), n) == builtins.end() && mutant_name(n).empty()) {
            std::string loaded;  // the plugins' names too: a typo in one should show the right spelling
            for (const auto& p : plugins) loaded += (loaded.empty() ? "" : ", ") + p->name();
            try {
                make_builtin_backend(n);  // throws InputError naming the known backends
            } catch (const InputError& e) {
                if (loaded.empty()) throw;
                throw InputError(std::string(e.what()) + "; plugins loaded: " + loaded);
            }
        }
        // A mutant under the name it reports (mutant:NAME), however it was spelt: the reports'
        // list of backends, their results and the result folders then agree.
        out.emplace_back(plugin >= 0 ? n : canonical(n), plugin);
    }
    return out;
}

}  // namespace

BackendSet make_backends(const std::vector<std::string>& names, const std::vector<std::string>& libraries,
                         const BuiltinOptions& options) {
    auto plugins = load_plugins(libraries);
    BackendSet set;
    for (const auto& [name, plugin] : resolve_names(names, plugins)) {
        set.owned.push_back(plugin >= 0 ? std::move(plugins[static_cast<std::size_t>(plugin)])
                                        : make_builtin_backend(name, options));
        set.list.push_back(set.owned.back().get());
    }
    return set;
}

std::vector<BackendMaker> make_backend_makers(const std::vector<std::string>& names,
                                              const std::vector<std::string>& libraries,
                                              const BuiltinOptions& options, UnnamedPlugins unnamed) {
    // Plugins are loaded here only to check them, and released; built-in backends are not made
    // here at all (the opencl backend would open a device context before the workers fork).
    const auto plugins = load_plugins(libraries);
    const auto resolved = resolve_names(names, plugins);
    for (std::size_t i = 0; unnamed == UnnamedPlugins::refused && i < plugins.size(); ++i) {
        const bool named = std::any_of(resolved.begin(), resolved.end(),
                                       [&](const auto& r) { return r.second == static_cast<int>(i); });
        if (!named)
            throw InputError("backend library " + libraries[i] + ": its plugin '" + plugins[i]->name() +
                             "' would not run: --backend names only other backends; add " + plugins[i]->name() +
                             " to --backend (or use --backend all)");
    }
    std::vector<BackendMaker> makers;
    for (const auto& [name, plugin] : resolved) {
        if (plugin >= 0) {
            const std::string path = libraries[static_cast<std::size_t>(plugin)];
            makers.push_back({name, [path] { return load_plugin_backend(path); }, path});
        } else {
            makers.push_back({name, [name = name, options] { return make_builtin_backend(name, options); }, ""});
        }
    }
    return makers;
}

std::vector<Mutant> selftest_mutants(const BuiltinOptions& options) {
    std::vector<Mutant> list;
    for (auto& family : {loop_mutants(), cpu_mutants(), opencl_mutants(options.device), blockwise_mutants(),
                         expert_parallel_mutants()})
        list.insert(list.end(), family.begin(), family.end());
    return list;
}

std::vector<std::string> backend_families() {
    return {"reference", "loop", "cpu", "opencl", "blockwise", "expert_parallel"};
}

bool builtin_or_mutant(const std::string& name) {
    const auto builtins = builtin_backend_names();
    return std::find(builtins.begin(), builtins.end(), name) != builtins.end() || mutant_named(name);
}

bool opencl_family(const std::string& name) {
    if (name == "opencl") return true;
    const auto m = mutant_named(name);
    return m && m->family == "opencl";
}

std::string backend_family(const std::string& builtin_name) {
    if (builtin_name == "reference_dense") return "reference";
    if (builtin_name == "loop_f32" || builtin_name == "loop_lowp") return "loop";
    return builtin_name;
}

std::vector<std::string> device_list() { return opencl_device_list(); }

std::string device_problem(const std::string& spec) { return opencl_device_problem(spec); }

std::string environment_problem() { return opencl_environment_problem(); }

}  // namespace moe::backends
