#include "generation_memory.hpp"

#include <cmath>
#include <cstdio>

#include "moe/golden/golden_file.hpp"
#include "moe/spec/error.hpp"

namespace moe::golden_cli {

void require_generation_memory(const std::string& catalog, const generator::CaseSpec& c, bool stages,
                               std::uint64_t max_memory) {
    const std::uint64_t budget = max_memory ? max_memory : golden::default_max_memory();
    const double need = generator::generation_bytes(c, stages);
    if (need <= static_cast<double>(budget)) return;
    const std::string tokens = c.rank3 ? "B=" + std::to_string(c.batch) + " S=" + std::to_string(c.seq)
                                       : "T=" + std::to_string(c.seq);
    const std::string shape = tokens + " H=" + std::to_string(c.hidden) + " I=" + std::to_string(c.inter) +
                              " E=" + std::to_string(c.experts) + " K=" + std::to_string(c.topk) + ", " +
                              std::string(dtype_name(c.dtype)) + (stages ? ", with stages" : "");
    std::string advice = "; no --max-memory admits it";
    if (need < 0x1p63) {
        char gib[32];
        std::snprintf(gib, sizeof gib, "%.0fG", std::ceil(need / 0x1p30));
        advice = std::string("; on a machine with the memory, give --max-memory ") + gib + " or more";
    }
    throw InputError("catalog " + catalog + ", case " + c.name + " (" + shape + "): generating it needs about " +
                     golden::readable_bytes(need) + ", more than the memory budget of " +
                     golden::readable_bytes(static_cast<double>(budget)) + advice);
}

}  // namespace moe::golden_cli
