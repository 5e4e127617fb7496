#pragma once
// A loaded plugin: the dlopen() handle and the plugin's table, released in the right order.
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

    const moe_conform_backend_v1_t& table() const { return *table_; }
    const std::string& path() const { return path_; }

private:
    std::string path_;
    void* handle_ = nullptr;
    const moe_conform_backend_v1_t* table_ = nullptr;
};

}  // namespace moe::backends::plugin
