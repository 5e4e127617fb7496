#include "plugin_library.hpp"

#include <dlfcn.h>

#include <cctype>
#include <cstring>
#include <filesystem>

#include "moe/spec/error.hpp"
#include "moe/spec/printable.hpp"

namespace moe::backends::plugin {

namespace {

// The name a report and a repro line carry: refuse anything a shell or a file name would mangle.
// A name is a word in reports, a repro line's --backend value and a folder of --write-results:
// it starts with a letter or digit (never "." or ".."), and "all" already means every backend.
bool plain_name(const char* name) {
    if (!name || !std::isalnum(static_cast<unsigned char>(*name)) || std::string(name) == "all") return false;
    for (const char* c = name; *c; ++c)
        if (!std::isalnum(static_cast<unsigned char>(*c)) && *c != '_' && *c != '-' && *c != '.') return false;
    return true;
}

// A plugin's text as a terminal may show it: its first `limit` bytes, escaped (moe/spec/printable.hpp).
constexpr std::size_t kTextLimit = 2048;
std::string shown_text(const char* text, std::size_t limit) { return printable(std::string_view(text, strnlen(text, limit))); }

// A refused name as the message shows it: its first 80 bytes.
std::string shown_name(const char* name) { return shown_text(name, 80); }

std::string symbol_of(int version) { return "moe_conform_backend_v" + std::to_string(version); }

// What both versions' tables must hold; `fail` throws.
template <class Table, class Fail>
void check_table(const Table* t, int version, Fail fail) {
    const std::string symbol = symbol_of(version);
    if (!t) fail(symbol + "() returned no table");
    if (t->abi_version != static_cast<uint32_t>(version))
        fail("its " + symbol + " table says ABI version " + std::to_string(t->abi_version) + ", not " +
             std::to_string(version));
    if (t->struct_size < sizeof(Table))
        fail("its table is " + std::to_string(t->struct_size) + " bytes, version " + std::to_string(version) + " has " +
             std::to_string(sizeof(Table)) + ": built against another backend_abi.h");
    if (!plain_name(t->name))
        fail(std::string("its name ") + (t->name ? "'" + shown_name(t->name) + "'" : "(NULL)") +
             " is refused: a name is not empty and not \"all\", starts with a letter or digit, and has only "
             "letters, digits, '_', '-', '.'");
    if (!t->precision) fail("its table has no precision function");
    if (!t->run) fail("its table has no run function");
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
    // The newest version the library exports (version 2 adds compressed weights to version 1).
    if (void* v2 = dlsym(handle_, MOE_CONFORM_BACKEND_V2_SYMBOL)) {
        v2_ = reinterpret_cast<moe_conform_backend_v2_fn>(v2)();
        check_table(v2_, 2, fail);
        keep_texts(v2_->name, v2_->description);
        return;
    }
    if (void* v1 = dlsym(handle_, MOE_CONFORM_BACKEND_V1_SYMBOL)) {
        v1_ = reinterpret_cast<moe_conform_backend_v1_fn>(v1)();
        check_table(v1_, 1, fail);
        keep_texts(v1_->name, v1_->description);
        return;
    }
    for (int v = 3; v <= 9; ++v)
        if (dlsym(handle_, symbol_of(v).c_str()))
            fail("built for moe-conform backend ABI version " + std::to_string(v) + " (" + symbol_of(v) +
                 "); this moe-conform speaks versions 1 and 2");
    fail("exports no moe_conform_backend_v2 or moe_conform_backend_v1 function: not a moe-conform backend plugin");
}

PluginLibrary::~PluginLibrary() {
    if (v2_ && v2_->release) v2_->release(v2_->state);
    if (v1_ && v1_->release) v1_->release(v1_->state);
    if (handle_) dlclose(handle_);
}

void PluginLibrary::keep_texts(const char* name, const char* description) {
    name_ = name;
    // The description is the plugin's own text: at most kTextLimit bytes of it, printable.
    description_ = description ? shown_text(description, kTextLimit) : "";
}
bool PluginLibrary::provides_stages() const { return (v2_ ? v2_->provides_stages : v1_->provides_stages) != 0; }

int PluginLibrary::availability(char* reason, std::size_t size) const {
    if (v2_) return v2_->availability ? v2_->availability(v2_->state, reason, size) : MOE_OK;
    return v1_->availability ? v1_->availability(v1_->state, reason, size) : MOE_OK;
}

int PluginLibrary::supports(const moe_problem_v2* p, char* reason, std::size_t size) const {
    if (v2_) return v2_->supports ? v2_->supports(v2_->state, p, reason, size) : 1;
    return v1_->supports ? v1_->supports(v1_->state, &p->base, reason, size) : 1;
}

int PluginLibrary::precision(int32_t data_type, moe_precision_v2* out) const {
    if (v2_) return v2_->precision(v2_->state, data_type, out);
    moe_precision_v1 p{out->compute, out->storage, out->output};
    const int rc = v1_->precision(v1_->state, data_type, &p);
    *out = moe_precision_v2{p.compute, p.storage, p.output, -1};
    return rc;
}

int PluginLibrary::prepare(const moe_problem_v2* p, char* err, std::size_t size) const {
    if (v2_) return v2_->prepare ? v2_->prepare(v2_->state, p, err, size) : MOE_OK;
    return v1_->prepare ? v1_->prepare(v1_->state, &p->base, err, size) : MOE_OK;
}

int PluginLibrary::run(const moe_problem_v2* p, moe_outputs_v1* outputs, char* err, std::size_t size) const {
    if (v2_) return v2_->run(v2_->state, p, outputs, err, size);
    return v1_->run(v1_->state, &p->base, outputs, err, size);
}

}  // namespace moe::backends::plugin
