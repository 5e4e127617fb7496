#include "plugin_library.hpp"

#include <dlfcn.h>

#include <cctype>
#include <filesystem>

#include "moe/spec/error.hpp"

namespace moe::backends::plugin {

namespace {

// The name a report and a repro line carry: refuse anything a shell or a file name would mangle.
bool plain_name(const char* name) {
    if (!name || !*name) return false;
    for (const char* c = name; *c; ++c)
        if (!std::isalnum(static_cast<unsigned char>(*c)) && *c != '_' && *c != '-' && *c != '.') return false;
    return true;
}

}  // namespace

PluginLibrary::PluginLibrary(const std::string& path) : path_(path) {
    const std::string where = "backend library " + path;
    if (!std::filesystem::is_regular_file(path)) throw InputError(where + ": no such file");
    // RTLD_LOCAL: two plugins may define the same symbols without seeing each other's.
    handle_ = dlopen(std::filesystem::absolute(path).c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle_) {
        const char* e = dlerror();
        throw InputError(where + ": cannot load it: " + (e ? e : "dlopen failed"));
    }
    auto fail = [&](const std::string& what) {
        dlclose(handle_);
        handle_ = nullptr;
        throw InputError(where + ": " + what);
    };
    void* symbol = dlsym(handle_, MOE_CONFORM_BACKEND_V1_SYMBOL);
    if (!symbol) {
        for (int v = 2; v <= 9; ++v)
            if (dlsym(handle_, ("moe_conform_backend_v" + std::to_string(v)).c_str()))
                fail("built for moe-conform backend ABI version " + std::to_string(v) +
                     " (moe_conform_backend_v" + std::to_string(v) + "); this moe-conform speaks version " +
                     std::to_string(MOE_CONFORM_ABI_VERSION));
        fail("exports no moe_conform_backend_v1 function: not a moe-conform backend plugin");
    }
    table_ = reinterpret_cast<moe_conform_backend_v1_fn>(symbol)();
    if (!table_) fail("moe_conform_backend_v1() returned no table");
    if (table_->abi_version != MOE_CONFORM_ABI_VERSION)
        fail("its table says ABI version " + std::to_string(table_->abi_version) + "; this moe-conform speaks version " +
             std::to_string(MOE_CONFORM_ABI_VERSION));
    if (table_->struct_size < sizeof(moe_conform_backend_v1_t))
        fail("its table is " + std::to_string(table_->struct_size) + " bytes, version 1 has " +
             std::to_string(sizeof(moe_conform_backend_v1_t)) + ": built against another backend_abi.h");
    if (!plain_name(table_->name)) fail("its name is empty or has characters other than letters, digits, '_', '-', '.'");
    if (!table_->precision) fail("its table has no precision function");
    if (!table_->run) fail("its table has no run function");
}

PluginLibrary::~PluginLibrary() {
    if (table_ && table_->release) table_->release(table_->state);
    if (handle_) dlclose(handle_);
}

}  // namespace moe::backends::plugin
