// list: the built-in backends (availability, precision), the OpenCL devices and the mutants; as
// text, and with --json as a file a CI script reads (which backends this runner can run, and why
// not) without parsing the text.
#include <algorithm>
#include <iomanip>
#include <iostream>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "output_paths.hpp"
#include "moe/backends/registry.hpp"
#include "moe/conformance/text_file.hpp"

namespace moe::conform_cli {

namespace {

constexpr DType kDataTypes[] = {DType::f64, DType::f32, DType::f16, DType::bf16};

nlohmann::json backend_json(const Backend& b) {
    const std::string name = b.name();
    const auto a = b.availability();
    nlohmann::json declares = nlohmann::json::object();
    for (const DType data : kDataTypes) {
        const Precision p = b.precision(data);
        nlohmann::json d = {{"compute", dtype_name(p.compute)}, {"storage", dtype_name(p.storage)}};
        if (p.dequant) d["dequantisation"] = dtype_name(*p.dequant);
        declares[std::string(dtype_name(data))] = d;
    }
    const bool builtin = backends::builtin_or_mutant(name);
    return {{"name", name},
            {"family", builtin ? backends::backend_family(name) : "plugin"},
            {"available", a.available},
            {"reason", a.available ? "" : a.reason},
            {"description", b.description()},
            {"declares", declares},
            {"returns_stages", b.provides_stages()}};
}

void write_json(const std::string& file, const backends::BackendSet& set, const std::vector<Mutant>& mutants) {
    nlohmann::json j = {{"format", "moe-conform-list"}, {"format_version", 1}};
    j["backends"] = nlohmann::json::array();
    for (const Backend* b : set.list) j["backends"].push_back(backend_json(*b));
    j["opencl_devices"] = backends::device_list();
    j["mutants"] = nlohmann::json::array();
    for (const auto& m : mutants)
        j["mutants"].push_back({{"name", m.name}, {"family", m.family}, {"description", m.description}});
    // A plugin's texts are any bytes: invalid UTF-8 becomes U+FFFD rather than an exception.
    conformance::write_file_atomically(file, j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
}

}  // namespace

int list(const std::vector<std::string>& backend_libs, const std::string& json) {
    // --json onto a plugin it loads would replace the plugin with the list.
    if (!json.empty()) check_outputs_spare_inputs({backend_libs, {{"--json", json}}, {}});
    const auto set = backends::make_backends({"all"}, backend_libs);
    std::cout << "Backends (built-in, then plugins from --backend-lib):\n";
    for (const Backend* b : set.list) {
        const std::string name = b->name();
        const auto a = b->availability();
        std::cout << "  " << std::left << std::setw(18) << name << std::setw(12)
                  << (a.available ? "available" : "unavailable") << b->description() << "\n"
                  << "  " << std::setw(30) << "" << "declares (data: compute/storage[/dequantisation]):";
        // Every data type: a backend may declare each differently (cpu keeps bf16 intermediates
        // on bf16 data only).
        for (const DType data : kDataTypes) {
            const Precision p = b->precision(data);
            std::cout << " " << dtype_name(data) << " " << dtype_name(p.compute) << "/" << dtype_name(p.storage);
            if (p.dequant) std::cout << "/" << dtype_name(*p.dequant);
            std::cout << (data == DType::bf16 ? "" : ",");
        }
        std::cout << (b->provides_stages() ? "; returns stages" : "") << "\n";
        if (!a.available) std::cout << "  " << std::setw(30) << "" << "why: " << a.reason << "\n";
    }
    std::cout << "OpenCL devices (moe-conform run --backend opencl --device P:D|NAME):\n";
    for (const auto& line : backends::device_list()) std::cout << "  " << line << "\n";
    std::cout << "Selftest mutants (moe-conform selftest):\n";
    const auto mutants = backends::selftest_mutants();
    std::size_t width = 0;  // the longest name and two spaces: a name never runs into its description
    for (const auto& m : mutants) width = std::max(width, m.name.size() + 2);
    for (const auto& m : mutants)
        std::cout << "  " << std::setw(static_cast<int>(width)) << m.name << m.description << "\n";
    if (!json.empty()) write_json(json, set, mutants);
    return 0;
}

}  // namespace moe::conform_cli
