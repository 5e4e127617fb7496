// list: the built-in backends (availability, precision), the OpenCL devices and the mutants.
#include <algorithm>
#include <iomanip>
#include <iostream>

#include "commands.hpp"
#include "moe/backends/registry.hpp"

namespace moe::conform_cli {

int list(const std::vector<std::string>& backend_libs) {
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
        for (const DType data : {DType::f64, DType::f32, DType::f16, DType::bf16}) {
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
    return 0;
}

}  // namespace moe::conform_cli
