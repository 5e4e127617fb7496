#include "modes.hpp"

#include <algorithm>
#include <vector>

#include "moe/spec/error.hpp"

namespace moe::bench_cli {

namespace {

struct Mode {
    std::string flag;                // "": timing the backend's rows
    std::string does;                // for the message: what it does instead
    std::vector<std::string> reads;  // the flags it reads
};

std::vector<std::string> with_shape(std::vector<std::string> flags) {
    for (const char* f : {"--shape", "--experts", "--topk", "--hidden", "--inter", "--expert-type"}) flags.push_back(f);
    return flags;
}

// Every flag of moe-bench is read by at least one mode: a flag missing here is refused in every
// mode, which the CLI tests of that flag show at once.
const std::vector<Mode>& modes() {
    static const std::vector<Mode> m = {
        {"", "times the backend's rows",
         with_shape({"--backend", "--backend-lib", "--device", "--tokens", "--dtype", "--weights", "--routing",
                     "--timeout", "--reps", "--threads", "--vs-reference", "--json"})},
        {"--worked-examples", "prints the Neuron guide's worked example, always the same", {}},
        {"--strategy-stats", "prints routing statistics (uniform and skewed routing) and times nothing",
         with_shape({"--tokens", "--dtype", "--alpha", "--block-size", "--devices"})},
        {"--engine-study",
         "times one expert's GEMMs of each shape for 1..64 rows on 1 thread, and prints a table of its own",
         with_shape({"--backend"})},
        {"--decode-study", "times the cpu decode kernels alone on one row, and prints a table of its own",
         with_shape({"--backend", "--weights", "--threads"})},
        {"--transfer-study", "times the opencl backend's host-device transfers alone, and prints a table of its own",
         with_shape({"--backend", "--device", "--tokens", "--dtype", "--reps"})},
    };
    return m;
}

bool reads(const Mode& m, const std::string& flag) {
    return std::find(m.reads.begin(), m.reads.end(), flag) != m.reads.end();
}

// "--strategy-stats": the modes that read `flag`, for the message of one given without them.
std::string readers(const std::string& flag) {
    std::string names;
    for (const auto& m : modes())
        if (!m.flag.empty() && reads(m, flag)) names += (names.empty() ? "" : " or ") + m.flag;
    return names;
}

}  // namespace

std::string check_mode_flags(const CLI::App& app) {
    const Mode* mode = &modes().front();
    for (const auto& m : modes())
        if (!m.flag.empty() && app.count(m.flag) > 0) {
            if (!mode->flag.empty())
                throw InputError(mode->flag + " and " + m.flag + " are two modes of moe-bench: give one of them");
            mode = &m;
        }
    for (const CLI::Option* o : app.get_options()) {
        const std::string flag = o->get_name();
        if (o->count() == 0 || flag == "--help" || reads(*mode, flag)) continue;
        if (std::any_of(modes().begin(), modes().end(), [&](const Mode& m) { return m.flag == flag; })) continue;
        if (mode->flag.empty())
            throw InputError(flag + " has no effect without " + readers(flag) + " (without a mode flag, moe-bench " +
                             mode->does + ")");
        throw InputError(flag + " has no effect with " + mode->flag + ", which " + mode->does);
    }
    return mode->flag;
}

}  // namespace moe::bench_cli
