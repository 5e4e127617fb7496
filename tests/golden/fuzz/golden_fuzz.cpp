// Fuzz target over the golden reader and the checks a run applies before comparing anything:
// read_golden (every storage, link, memory and global-heap check), validate, and
// check_stored_results; and over the result-file readers (read_result, read_npy_result). Any
// input may be refused with FileError or InputError; nothing may crash, hang, throw anything else,
// or need more than the memory budget.
//
// Two drivers over the same target:
//   - libFuzzer (clang, -fsanitize=fuzzer): LLVMFuzzerTestOneInput below; build with
//     -DMOE_FUZZ_LIBFUZZER.
//   - a deterministic mutation loop (the default, any compiler; what CTest runs): mutates the
//     corpus files (bit flips, interesting values, block copies and zeroing, insertions,
//     truncation; half the time next to an HDF5 metadata signature) for a bounded time or number
//     of executions, from a fixed seed, so a run is reproducible.
// A crash, a hang (10 s) or an unexpected exception saves the input under --findings as
// crash-*.h5, hang-*.h5 or exception-*.h5 and fails the run. Keep every such file in
// tests/golden/fuzz-regressions/ (after making the reader refuse it): CTest replays that folder
// here (--replay: golden_fuzz_regressions) and through moe-golden and moe-conform.
//
// Usage: golden_fuzz --corpus DIR [--corpus DIR...] [--seconds S] [--runs N] [--seed N]
//                    [--findings DIR] [--scratch DIR]
//        golden_fuzz --replay FILE...   (runs the target on each file, in this process)
#include <fcntl.h>
#include <hdf5.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

#include "moe/golden/golden_file.hpp"
#include "moe/golden/result_file.hpp"
#include "moe/golden/stored_results.hpp"
#include "moe/spec/error.hpp"
#include "moe/spec/problem.hpp"

namespace fs = std::filesystem;

namespace {

constexpr std::uint64_t kMemoryBudget = std::uint64_t{256} << 20;
constexpr unsigned kHangSeconds = 10;

fs::path g_scratch = fs::temp_directory_path() / ("golden_fuzz_" + std::to_string(::getpid()) + ".h5");
fs::path g_findings = ".";
std::string g_unexpected;  // what the last execution threw that it should not have

// The target. Returns normally for every input; an unexpected exception is recorded.
void run_target(const std::uint8_t* data, std::size_t size) {
    {
        std::ofstream out(g_scratch, std::ios::binary | std::ios::trunc);
        out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
    }
    g_unexpected.clear();
    // HDF5 may count its own predefined types as open datatypes: compare with before.
    const ssize_t open_before = H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL);
    // One reader over the bytes: a refusal (FileError, InputError) is an answer, any other
    // exception is recorded, naming the reader; after one, the others are not run.
    const auto attempt = [](const char* reader, const auto& read) {
        if (!g_unexpected.empty()) return;
        try {
            read();
        } catch (const moe::golden::FileError&) {
        } catch (const moe::InputError&) {
        } catch (const std::exception& e) {
            g_unexpected = std::string(reader) + ": " + typeid(e).name() + ": " + e.what();
        }
    };
    attempt("read_golden", [] {
        moe::golden::ReadOptions o;
        o.max_memory = kMemoryBudget;
        moe::golden::GoldenCase c = moe::golden::read_golden(g_scratch, o);
        moe::validate(c.problem);
        moe::golden::check_stored_results(g_scratch, c, {16, 1});
    });
    // The same bytes as a result file, HDF5 and .npy (`moe-conform check` reads both): untrusted
    // input too, through the same HDF5 layer, and a .npy parser of our own.
    attempt("read_result", [] { moe::golden::read_result(g_scratch, kMemoryBudget); });
    attempt("read_npy_result", [] { moe::golden::read_npy_result(g_scratch, kMemoryBudget); });
    // Every HDF5 object the reader opened is closed again, whatever went wrong: a worker reads
    // many files, and an open file would stay open (and locked) for the rest of the run.
    const ssize_t open_after = H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL);
    if (g_unexpected.empty() && open_after > open_before)
        g_unexpected = std::to_string(open_after - open_before) + " HDF5 object(s) left open";
}

// ------------------------------------------------------------------------------------------------
// Saving the input that crashed or hung: from a signal handler, so only async-signal-safe calls
// (the input is already on disk as g_scratch; it is linked under the findings folder).

char g_crash_path[4096];
char g_hang_path[4096];
char g_scratch_path[4096];

void save_and_die(int sig) {
    const char* target = sig == SIGALRM ? g_hang_path : g_crash_path;
    ::unlink(target);
    if (::link(g_scratch_path, target) != 0) {
        // Another file system: copy it.
        const int in = ::open(g_scratch_path, O_RDONLY), out = ::open(target, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        char buf[65536];
        ssize_t n;
        while (in >= 0 && out >= 0 && (n = ::read(in, buf, sizeof buf)) > 0)
            if (::write(out, buf, static_cast<std::size_t>(n)) != n) break;
    }
    static const char msg[] = "golden_fuzz: the target crashed or hung; input saved under the findings folder\n";
    if (::write(2, msg, sizeof msg - 1) < 0) {
    }
    ::signal(sig == SIGALRM ? SIGABRT : sig, SIG_DFL);
    ::raise(sig == SIGALRM ? SIGABRT : sig);
}

void install_handlers(std::uint64_t seed) {
    const std::string tag = std::to_string(::getpid()) + "-" + std::to_string(seed);
    std::snprintf(g_crash_path, sizeof g_crash_path, "%s", (g_findings / ("crash-" + tag + ".h5")).c_str());
    std::snprintf(g_hang_path, sizeof g_hang_path, "%s", (g_findings / ("hang-" + tag + ".h5")).c_str());
    std::snprintf(g_scratch_path, sizeof g_scratch_path, "%s", g_scratch.c_str());
    for (int sig : {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL, SIGALRM}) ::signal(sig, save_and_die);
}

// ------------------------------------------------------------------------------------------------
// The deterministic mutation loop

struct Rng {
    std::uint64_t s;
    std::uint64_t next() {  // splitmix64
        std::uint64_t z = (s += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
    }
    std::size_t below(std::size_t n) { return n ? static_cast<std::size_t>(next() % n) : 0; }
};

const char* const kSignatures[] = {"\x89HDF", "OHDR", "OCHK", "GCOL", "BTHD", "BTLF", "BTIN", "FRHP",
                                   "FHDB", "FHIB", "FAHD", "FADB", "EAHD", "SNOD", "TREE", "HEAP"};

// An offset near a metadata structure, half the time; anywhere otherwise.
std::size_t pick_offset(const std::vector<std::uint8_t>& b, Rng& rng) {
    if (b.empty()) return 0;
    if (rng.below(2) == 0) {
        const std::string sig = kSignatures[rng.below(std::size(kSignatures))];
        std::vector<std::size_t> hits;
        for (std::size_t i = 0; i + sig.size() <= b.size(); ++i)
            if (std::memcmp(b.data() + i, sig.data(), sig.size()) == 0) hits.push_back(i);
        if (!hits.empty()) return std::min(b.size() - 1, hits[rng.below(hits.size())] + rng.below(96));
    }
    return rng.below(b.size());
}

void mutate(std::vector<std::uint8_t>& b, Rng& rng) {
    static const std::uint64_t interesting[] = {0,          1,           2,          7,          8,
                                                16,         255,         4095,       4096,       65535,
                                                0x7fffffff, 0x80000000u, 0xffffffffu, 1ull << 40, ~0ull,
                                                ~0ull >> 1, 1ull << 63};
    const int rounds = 1 + static_cast<int>(rng.below(8) == 0 ? rng.below(6) : 0);
    for (int r = 0; r < rounds && !b.empty(); ++r) {
        const std::size_t at = pick_offset(b, rng);
        switch (rng.below(7)) {
            case 0: b[at] ^= static_cast<std::uint8_t>(1u << rng.below(8)); break;
            case 1: {
                static const std::uint8_t bytes[] = {0, 1, 0x7f, 0x80, 0xff};
                b[at] = bytes[rng.below(std::size(bytes))];
                break;
            }
            case 2: {
                const std::size_t width = std::size_t{1} << (1 + rng.below(3));  // 2, 4 or 8 bytes
                const std::uint64_t v = interesting[rng.below(std::size(interesting))];
                for (std::size_t i = 0; i < width && at + i < b.size(); ++i) b[at + i] = static_cast<std::uint8_t>(v >> (8 * i));
                break;
            }
            case 3: b.resize(rng.below(b.size())); break;
            case 4: {
                const std::size_t from = rng.below(b.size()), n = 1 + rng.below(64);
                for (std::size_t i = 0; i < n && from + i < b.size() && at + i < b.size(); ++i) b[at + i] = b[from + i];
                break;
            }
            case 5: {
                const std::size_t n = 1 + rng.below(16);
                std::vector<std::uint8_t> extra(n);
                for (auto& x : extra) x = static_cast<std::uint8_t>(rng.next());
                b.insert(b.begin() + static_cast<std::ptrdiff_t>(at), extra.begin(), extra.end());
                break;
            }
            default: {
                const std::size_t n = 1 + rng.below(32);
                for (std::size_t i = 0; i < n && at + i < b.size(); ++i) b[at + i] = 0;
            }
        }
    }
}

std::vector<std::uint8_t> read_file(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::vector<std::uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

struct Args {
    std::vector<fs::path> corpus, replay;
    double seconds = 0;
    std::uint64_t runs = 0, seed = 1;
};

int fuzz(const Args& a) {
    // In name order within each folder: the seed then picks the same files on any file system.
    std::vector<std::vector<std::uint8_t>> corpus;
    for (const auto& dir : a.corpus) {
        std::vector<fs::path> files;
        for (const auto& e : fs::directory_iterator(dir))
            if (e.is_regular_file() && (e.path().extension() == ".h5" || e.path().extension() == ".npy"))
                files.push_back(e.path());
        std::sort(files.begin(), files.end());
        for (const auto& f : files) corpus.push_back(read_file(f));
    }
    if (corpus.empty()) {
        std::cerr << "golden_fuzz: no *.h5 or *.npy file in the corpus folders\n";
        return 2;
    }
    install_handlers(a.seed);
    Rng rng{a.seed};
    const auto start = std::chrono::steady_clock::now();
    std::uint64_t n = 0, refused_or_ok = 0, unexpected = 0;
    for (;; ++n) {
        const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if ((a.runs && n >= a.runs) || (a.seconds > 0 && elapsed >= a.seconds) || (!a.runs && a.seconds <= 0)) break;
        std::vector<std::uint8_t> input = corpus[rng.below(corpus.size())];
        mutate(input, rng);
        ::alarm(kHangSeconds);
        run_target(input.data(), input.size());
        ::alarm(0);
        if (g_unexpected.empty()) {
            ++refused_or_ok;
            continue;
        }
        ++unexpected;
        const fs::path saved = g_findings / ("exception-" + std::to_string(a.seed) + "-" + std::to_string(n) + ".h5");
        fs::copy_file(g_scratch, saved, fs::copy_options::overwrite_existing);
        std::cerr << "golden_fuzz: unexpected exception (" << g_unexpected << "); input saved as " << saved << "\n";
    }
    rusage ru{};
    ::getrusage(RUSAGE_SELF, &ru);
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::cout << "golden_fuzz: " << n << " executions in " << secs << " s over " << corpus.size()
              << " corpus files (seed " << a.seed << "): 0 crashes, 0 hangs, " << unexpected
              << " unexpected exceptions; peak memory " << (ru.ru_maxrss >> 10) << " MiB\n";
    fs::remove(g_scratch);
    if (static_cast<std::uint64_t>(ru.ru_maxrss) > (std::uint64_t{1} << 20)) {
        std::cerr << "golden_fuzz: peak memory over 1 GiB\n";
        return 1;
    }
    return unexpected ? 1 : 0;
}

int replay(const Args& a) {
    install_handlers(0);
    int bad = 0;
    for (const auto& p : a.replay) {
        const std::vector<std::uint8_t> input = read_file(p);
        ::alarm(kHangSeconds);
        run_target(input.data(), input.size());
        ::alarm(0);
        std::cout << (g_unexpected.empty() ? "ok   " : "FAIL ") << p.string()
                  << (g_unexpected.empty() ? "" : ": " + g_unexpected) << "\n";
        bad += !g_unexpected.empty();
    }
    fs::remove(g_scratch);
    return bad ? 1 : 0;
}

}  // namespace

#ifdef MOE_FUZZ_LIBFUZZER
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    run_target(data, size);
    if (!g_unexpected.empty()) {
        std::cerr << "unexpected exception: " << g_unexpected << "\n";
        std::abort();
    }
    return 0;
}
#else
int main(int argc, char** argv) {
    Args a;
    for (int i = 1; i < argc; ++i) {
        const std::string opt = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) {
                std::cerr << "golden_fuzz: " << opt << " needs a value\n";
                std::exit(2);
            }
            return argv[++i];
        };
        if (opt == "--corpus") a.corpus.push_back(value());
        else if (opt == "--seconds") a.seconds = std::stod(value());
        else if (opt == "--runs") a.runs = std::stoull(value());
        else if (opt == "--seed") a.seed = std::stoull(value());
        else if (opt == "--findings") g_findings = value();
        else if (opt == "--scratch") g_scratch = fs::path(value()) / ("golden_fuzz_" + std::to_string(::getpid()) + ".h5");
        else if (opt == "--replay") {
            while (i + 1 < argc) a.replay.push_back(argv[++i]);
        } else {
            std::cerr << "golden_fuzz: unknown option " << opt << "\n";
            return 2;
        }
    }
    fs::create_directories(g_findings);
    return a.replay.empty() ? fuzz(a) : replay(a);
}
#endif
