#pragma once
// A loaded plugin: the dlopen() handle and the plugin's table (ABI version 1 or 2), released in
// the right order. Callers speak version 2 only: a version-1 table is called with the version-1
// prefix of the problem (moe_problem_v2 starts with it) and its precision widened (dequant -1).
#include <cstddef>
#include <string>

#include "moe_conform/backend_abi.h"

namespace moe::backends::plugin {

class PluginLibrary {
public:
    // Throws InputError naming `path` and what is wrong with it.
    explicit PluginLibrary(const std::string& path);
    ~PluginLibrary();
    PluginLibrary(const PluginLibrary&) = delete;
    PluginLibrary& operator=(const PluginLibrary&) = delete;

    const std::string& path() const { return path_; }
    int abi_version() const { return v2_ ? 2 : 1; }  // a version-1 plugin gets no compressed weights
    // Copied from the table when it was checked: a plugin that rewrote its name afterwards (a
    // pointer into a reused buffer) would otherwise put an unchecked name into reports, repro
    // lines and --write-results folder names.
    const std::string& name() const { return name_; }
    const std::string& description() const { return description_; }
    bool provides_stages() const;

    // The table's functions; the absent optional ones as the header says (always available,
    // everything supported, nothing to prepare).
    int availability(char* reason, std::size_t size) const;
    int supports(const moe_problem_v2* p, char* reason, std::size_t size) const;  // 1: supported
    int precision(int32_t data_type, moe_precision_v2* out) const;
    int prepare(const moe_problem_v2* p, char* err, std::size_t size) const;
    int run(const moe_problem_v2* p, moe_outputs_v1* outputs, char* err, std::size_t size) const;

private:
    void keep_texts(const char* name, const char* description);

    std::string path_, name_, description_;
    void* handle_ = nullptr;
    const moe_conform_backend_v1_t* v1_ = nullptr;
    const moe_conform_backend_v2_t* v2_ = nullptr;
};

}  // namespace moe::backends::plugin
