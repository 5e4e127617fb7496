// list: the built-in backends (availability, precision), the OpenCL devices and the mutants.
#include <iomanip>
#include <iostream>

#include "commands.hpp"
#include "moe/backends/registry.hpp"

namespace moe::conform_cli {

std::vector<std::string> expand_backend_names(const std::vector<std::string>& names) {
    std::vector<std::string> out;
    for (const auto& n : names) {
        if (n == "all") {
            for (const auto& b : backends::builtin_backend_names()) out.push_back(b);
        } else {
            out.push_back(n);
        }
    }
    return out;
}

int list() {
    std::cout << "Built-in backends:\n";
    for (const auto& name : backends::builtin_backend_names()) {
        const auto b = backends::make_builtin_backend(name);
        const auto a = b->availability();
        const auto f32 = b->precision(DType::f32), f16 = b->precision(DType::f16);
        std::cout << "  " << std::left << std::setw(18) << name << std::setw(12)
                  << (a.available ? "available" : "unavailable") << b->description() << "\n"
                  << "  " << std::setw(30) << "" << "f32 inputs: compute " << dtype_name(f32.compute) << ", storage "
                  << dtype_name(f32.storage) << "; f16 inputs: compute " << dtype_name(f16.compute) << ", storage "
                  << dtype_name(f16.storage) << (b->provides_stages() ? "; returns stages" : "") << "\n";
        if (!a.available) std::cout << "  " << std::setw(30) << "" << "why: " << a.reason << "\n";
    }
    std::cout << "OpenCL devices (moe-conform run --backend opencl --device P:D|NAME):\n";
    for (const auto& line : backends::device_list()) std::cout << "  " << line << "\n";
    std::cout << "Selftest mutants (moe-conform selftest):\n";
    for (const auto& m : backends::selftest_mutants())
        std::cout << "  " << std::setw(28) << m.name << m.description << "\n";
    return 0;
}

}  // namespace moe::conform_cli
