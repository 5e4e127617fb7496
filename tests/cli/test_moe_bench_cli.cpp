// moe-bench's flags: a value that cannot describe a layer or a timing (zero tokens, zero
// repetitions, half a custom shape, more top-k than experts) ends in exit 2 with a message naming
// the flag, before anything is timed; never a crash (zero tokens and a custom shape without its
// experts once died of SIGFPE).
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <algorithm>
#include <iterator>
#include <string>
#include <thread>
#include <utility>

#include "run_command.hpp"
#include "temp_dir.hpp"

using moe::test::moe_bench;
using moe::test::run_command;
using moe::test::TempDir;

namespace {

void expect_refused(const std::string& args, const std::string& message) {
    const auto r = run_command(moe_bench() + " " + args);
    CAPTURE(args);
    CAPTURE(r.output);
    CHECK(r.exit_code == 2);
    CHECK(r.output.find(message) != std::string::npos);
    // Refused before the table: no row, no header.
    CHECK(r.output.find("median_ms") == std::string::npos);
}

const std::string kCustom = "--experts 4 --topk 2 --hidden 64 --inter 64";

std::string file_text(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace

TEST_CASE("moe-bench: flags that describe no layer or no timing exit 2, named") {
    expect_refused("--tokens 0 --reps 1 " + kCustom, "--tokens: 0: expected more than 0");
    expect_refused("--tokens 1,0 --reps 1 " + kCustom, "--tokens: 0: expected more than 0");
    expect_refused("--strategy-stats --shape mixtral --tokens 0", "--tokens: 0: expected more than 0");
    expect_refused("--tokens 1 --reps 0 " + kCustom, "--reps");
    expect_refused("--tokens 1 --reps -3 " + kCustom, "--reps");
    expect_refused("--tokens 1 --reps 1 --threads 0 " + kCustom, "--threads");
    expect_refused("--tokens 1 --reps 1 --experts 0 --topk 2 --hidden 64 --inter 64", "--experts");
    expect_refused("--tokens 1 --reps 1 --hidden 64", "missing: --experts --topk --inter");
    expect_refused("--tokens 1 --reps 1 --experts 4 --topk 2 --hidden 64", "missing: --inter");
    expect_refused("--tokens 1 --reps 1 --experts 4 --topk 8 --hidden 64 --inter 64", "--topk 8 exceeds --experts 4");
    expect_refused("--tokens 1 --reps 1 --shape nosuch", "unknown shape 'nosuch'");
    expect_refused("--tokens , --reps 1 " + kCustom, "--tokens: ',' is only commas");
    expect_refused("--tokens 1 --dtype , --reps 1 " + kCustom, "--dtype: ',' is only commas");
    expect_refused("--tokens 1 --reps 1 " + kCustom + " --weights u5", "unknown --weights 'u5'");
    expect_refused("--tokens 1 --reps 1 " + kCustom + " --dtype f64", "--dtype f64");
    expect_refused("--decode-study --backend opencl " + kCustom, "--decode-study times the cpu backend's own kernels");
    expect_refused("--tokens 1 --reps 1 --device 0:0 " + kCustom, "--device 0:0 picks the OpenCL device of the opencl backend and its mutants; --backend cpu is none of them");
    expect_refused("--transfer-study " + kCustom, "--transfer-study times host-device transfers of the opencl backend");
    expect_refused("--transfer-study --backend opencl " + kCustom + " --json /tmp/x.json",
                   "--json has no effect with --transfer-study");
    expect_refused("--transfer-study --backend opencl --dtype f64 " + kCustom, "--dtype f64: expected f32, f16 or bf16");
    expect_refused("--transfer-study --backend opencl --tokens 4294967297 " + kCustom,
                   "--transfer-study: custom at T = 4294967297 moves");
    expect_refused("--decode-study " + kCustom + " --weights u5", "unknown --weights 'u5'");
    // --json writes timed rows: the other modes have none, and a silently missing file misleads.
    expect_refused("--strategy-stats --shape mixtral --tokens 1 --json /tmp/x.json",
                   "--json has no effect with --strategy-stats");
    expect_refused("--decode-study " + kCustom + " --json /tmp/x.json", "--json has no effect with --decode-study");
    expect_refused("--tokens 1 --reps 1 " + kCustom + " --json /no/such/folder/b.json",
                   "--json: /no/such/folder/b.json: folder /no/such/folder does not exist");
    // Layers past the machine's memory, products past 2^64 included: the size named, not bad_alloc.
    expect_refused("--tokens 1 --reps 1 --experts 65536 --topk 2 --hidden 65536 --inter 65536",
                   "more than this machine's");
    expect_refused("--tokens 1 --reps 1 --experts 4294967296 --topk 2 --hidden 4294967296 --inter 4294967296",
                   "more than this machine's");
    expect_refused("--tokens 4294967297 --reps 1 " + kCustom, "at T = 4294967297");
}

TEST_CASE("moe-bench: a malformed MOE_OPENCL_STAGING is named, exit 2") {
    const auto r =
        run_command("MOE_OPENCL_STAGING=8x " + moe_bench() + " --backend opencl --transfer-study --tokens 2 " + kCustom);
    CAPTURE(r.output);
    CHECK(r.exit_code == 2);
    CHECK(r.output.find("MOE_OPENCL_STAGING: '8x' is not THREADSxKIB") != std::string::npos);
}

TEST_CASE("moe-bench --transfer-study: a row per way of moving the hidden states, each plan named") {
    const auto r = run_command("MOE_OPENCL_STAGING=3x8 " + moe_bench() +
                               " --backend opencl --transfer-study --reps 2 --tokens 3,700,5000 --dtype f32,bf16 " + kCustom);
    CAPTURE(r.output);
    REQUIRE(r.exit_code == 0);
    for (const char* want : {"(the backend runs 3x8;", "custom T=3 f32", "custom T=700 f32", "custom T=700 bf16",
                             "pageable, one DMA", "pinned, one DMA", "staged 1x2048", "staged 16x256", "175.0 KiB",
                             "87.5 KiB", "1.2 MiB", "staged 3x8 (backend: output)"})
        CHECK(r.output.find(want) != std::string::npos);
    // Hidden states over 1 MiB (T = 5000 f32) are staged both ways; smaller ones go in the packed
    // upload, so only their output takes the staged path.
    const auto big = r.output.find("custom T=5000 f32");
    REQUIRE(big != std::string::npos);
    CHECK(r.output.find("staged 3x8 (backend) ") > big);  // first under T = 5000 f32
    CHECK(r.output.find("staged 3x8 (backend) ") != std::string::npos);
}

TEST_CASE("moe-bench --backend-lib: a plugin timed on a layer; its failures exit 1, named, with the rows before them") {
    const std::string plugin = MOE_EXAMPLE_PLUGIN;
    const auto ok = run_command(moe_bench() + " --backend-lib " + plugin + " --tokens 2,3 --reps 1 " + kCustom);
    CAPTURE(ok.output);
    CHECK(ok.exit_code == 0);
    CHECK(ok.output.find("backend example_loops") != std::string::npos);
    CHECK(ok.output.find("custom             2 f32") != std::string::npos);
    CHECK(ok.output.find("custom             3 f32") != std::string::npos);
    // The same plugin named runs. A built-in backend beside a loaded plugin is refused: it timed
    // loop_f32 and left the plugin untimed, with exit 0 (moe-bench times one backend).
    CHECK(run_command(moe_bench() + " --backend-lib " + plugin + " --backend example_loops --tokens 2 --reps 1 " +
                      kCustom).exit_code == 0);
    expect_refused("--backend-lib " + plugin + " --backend loop_f32 --tokens 2 --reps 1 " + kCustom,
                   "--backend loop_f32 is a built-in backend, but --backend-lib loaded example_loops, which would not be "
                   "timed: moe-bench times one backend; drop --backend to time the plugin, or drop --backend-lib");
    expect_refused("--backend-lib " + plugin + " --backend mutant:lanes_swapped --tokens 2 --reps 1 " + kCustom,
                   "--backend mutant:lanes_swapped is a built-in backend");
    const std::string bad = std::string(MOE_BAD_PLUGIN_DIR) + "/bad_plugin_";
    const std::pair<std::string, std::string> failing[] = {
        {"crashes_with_child", "backend bad_plugin crashed while being timed (signal 11"},
        {"exits_in_run", "backend bad_plugin ended the process (exit status 0) while being timed"},
        {"run_fails", "backend bad_plugin failed: run() returned 7: device lost"},
    };
    // --json holds the rows measured before the failure (none here: each fails in its first run),
    // as the text says; it once wrote no file at all.
    const TempDir dir;
    const std::string json = (dir / "rows.json").string();
    for (const auto& [which, message] : failing) {
        std::filesystem::remove(json);
        const auto r = run_command(moe_bench() + " --backend-lib " + bad + which + ".so --tokens 2 --reps 1 " + kCustom +
                                   " --json " + json);
        CAPTURE(r.output);
        CHECK(r.exit_code == 1);
        CHECK(r.output.find(message) != std::string::npos);
        CHECK(r.output.find("making the problems") != std::string::npos);  // the timing had begun
        CHECK(file_text(json) == "[]\n");
        CHECK(r.output.find(json + " holds the 0 rows measured before the failure") != std::string::npos);
    }
    // A plugin that never returns: killed at --timeout, exit 1, named.
    std::filesystem::remove(json);
    const auto hung = run_command("timeout 60 " + moe_bench() + " --backend-lib " + bad +
                                  "hangs_in_run.so --timeout 2 --tokens 2 --reps 1 " + kCustom + " --json " + json);
    CAPTURE(hung.output);
    CHECK(hung.exit_code == 1);
    CHECK(hung.output.find("backend bad_plugin did not finish within --timeout 2 s and was killed") != std::string::npos);
    CHECK(file_text(json) == "[]\n");
    expect_refused("--backend-lib " + plugin + " --backend-lib " + bad + "run_fails.so --tokens 2 --reps 1 " + kCustom,
                   "--backend-lib loaded 2 plugins (example_loops, bad_plugin): pick one with --backend NAME");
    // The plugins loaded are named (the list once held the built-in backends alone).
    expect_refused("--backend-lib " + plugin + " --backend nosuch --tokens 2 --reps 1 " + kCustom,
                   "unknown backend 'nosuch': with --backend-lib, --backend names one of the plugins loaded (example_loops)");
    // Several plugins: --backend picks one of them.
    const auto picked = run_command(moe_bench() + " --backend-lib " + plugin + " --backend-lib " + bad +
                                    "run_fails.so --backend example_loops --tokens 2 --reps 1 " + kCustom);
    CAPTURE(picked.output);
    CHECK(picked.exit_code == 0);
    CHECK(picked.output.find("backend example_loops") != std::string::npos);
    expect_refused("--backend-lib " + plugin + " --decode-study " + kCustom, "--backend-lib has no effect with --decode-study");
    expect_refused("--backend-lib /no/such.so --tokens 2 " + kCustom, "--backend-lib");
}

// The command's stdout alone (its stderr to `err`), and its exit status.
moe::test::CommandResult stdout_of(const std::string& command, const std::string& err) {
    return run_command("{ " + command + " 2>" + err + "; }");
}

TEST_CASE("moe-bench --backend-lib: a row the plugin declines is not timed, but named with the reason; none timed: exit 2") {
    // bad_plugin_declines_f16 supports f32 data only, and crashes when run on f16: moe-bench ran
    // every row regardless of supports() (a crash, exit 1, or a write past the output).
    const std::string plugin = std::string(MOE_BAD_PLUGIN_DIR) + "/bad_plugin_declines_f16.so";
    const TempDir dir;
    const std::string json = (dir / "rows.json").string(), err = (dir / "err.txt").string();
    const auto some = stdout_of(moe_bench() + " --backend-lib " + plugin + " --tokens 1 --reps 1 --dtype f16,f32 " +
                                    kCustom + " --json " + json,
                                err);
    const std::string stderr_text = file_text(err);
    CAPTURE(some.output);
    CAPTURE(stderr_text);
    CHECK(some.exit_code == 0);
    CHECK(some.output.find("custom             1 f16   f16     uniform    skipped: bad_plugin: not supported: f32 "
                           "data only, not dtype 2") != std::string::npos);
    CHECK(some.output.find("custom             1 f32   f32     uniform ") != std::string::npos);
    CHECK(stderr_text.find("crashed") == std::string::npos);
    // The plugin's printf() lands on stderr, not in the table on stdout.
    CHECK(some.output.find("declines_f16 ran") == std::string::npos);
    CHECK(stderr_text.find("declines_f16 ran") != std::string::npos);
    // --json holds the timed row alone.
    const std::string rows = file_text(json);
    CHECK(rows.find("\"dtype\": \"f32\"") != std::string::npos);
    CHECK(rows.find("\"dtype\": \"f16\"") == std::string::npos);
    // Every row declined: nothing timed is no benchmark (exit 2, as for an unavailable backend).
    const auto none = run_command(moe_bench() + " --backend-lib " + plugin + " --tokens 1,2 --reps 1 --dtype f16 " +
                                  kCustom + " --json " + json);
    CAPTURE(none.output);
    CHECK(none.exit_code == 2);
    CHECK(none.output.find("custom             2 f16   f16     uniform    skipped: bad_plugin: not supported: ") !=
          std::string::npos);
    CHECK(none.output.find("moe-bench: error: backend bad_plugin supports none of the rows asked for, so nothing was "
                           "timed (custom T = 1 f16: not supported: f32 data only, not dtype 2)") != std::string::npos);
    CHECK(none.output.find("crashed") == std::string::npos);
}

TEST_CASE("moe-bench: a custom layer with top-k = experts runs (the checks above refuse no good input)") {
    const auto r = run_command(moe_bench() + " --tokens 1 --reps 1 --experts 4 --topk 4 --hidden 64 --inter 64");
    CAPTURE(r.output);
    CHECK(r.exit_code == 0);
    CHECK(r.output.find("custom             1 f32") != std::string::npos);
}

TEST_CASE("moe-bench --backend-lib --json: the rows measured before the plugin was killed are written, exit 1") {
    // --timeout bounds the whole plugin run. T = 1 (with the machine figures: a GEMM and a 1 GiB
    // read) takes a few seconds, more on a loaded CI machine, where it once passed 10 s; T = 65536
    // at H = I = 1024 is 16 times the work of T = 4096, which took the plain C loops 15 s here.
    const TempDir dir;
    const std::string json = (dir / "rows.json").string();
    const auto r = run_command("timeout 150 " + moe_bench() + " --backend-lib " + std::string(MOE_EXAMPLE_PLUGIN) +
                               " --tokens 1,65536 --reps 1 --timeout 45 --experts 4 --topk 2 --hidden 1024 --inter 1024"
                               " --json " + json);
    CAPTURE(r.output);
    CHECK(r.exit_code == 1);
    CHECK(r.output.find("did not finish within --timeout 45 s") != std::string::npos);
    CHECK(r.output.find(json + " holds the 1 row measured before the failure") != std::string::npos);
    const std::string rows = file_text(json);
    CAPTURE(rows);
    CHECK(rows.find("\"backend\": \"example_loops\"") != std::string::npos);
    CHECK(rows.find("\"tokens\": 1,") != std::string::npos);
    CHECK(rows.find("\"tokens\": 65536") == std::string::npos);
}

TEST_CASE("moe-bench: two modes, or a flag the mode does not read, exit 2 naming both") {
    // Once one mode silently won (transfer > decode > engine > strategy), and the others' flags
    // were dropped: --worked-examples --json wrote no file, with exit 0.
    expect_refused("--engine-study --decode-study " + kCustom, "--engine-study and --decode-study are two modes");
    expect_refused("--strategy-stats --worked-examples", "--worked-examples and --strategy-stats are two modes");
    const TempDir dir;
    expect_refused("--worked-examples --json " + (dir / "w.json").string(), "--json has no effect with --worked-examples");
    CHECK_FALSE(std::filesystem::exists(dir / "w.json"));
    expect_refused("--worked-examples --shape bogus", "--shape has no effect with --worked-examples");
    expect_refused("--strategy-stats --shape mixtral --routing hot", "--routing has no effect with --strategy-stats");
    expect_refused("--strategy-stats --shape mixtral --reps 3", "--reps has no effect with --strategy-stats");
    expect_refused("--strategy-stats --shape mixtral --dtype f32,bf16", "--strategy-stats takes one --dtype");
    expect_refused("--decode-study --tokens 8 " + kCustom, "--tokens has no effect with --decode-study");
    expect_refused("--engine-study --weights u4 " + kCustom, "--weights has no effect with --engine-study");
    expect_refused("--tokens 1 --reps 1 --alpha 2 " + kCustom, "--alpha has no effect without --strategy-stats");
    expect_refused("--tokens 1 --reps 1 --timeout 5 " + kCustom, "--timeout limits a --backend-lib plugin");
    expect_refused("--shape mixtral --expert-type gemm2 --tokens 1", "--expert-type is a custom shape's");
    // Each mode still takes the flags it reads.
    CHECK(run_command(moe_bench() + " --worked-examples").exit_code == 0);
    const auto stats = run_command(moe_bench() + " --strategy-stats --tokens 1,8 --dtype bf16 --alpha 2 --block-size 128"
                                                 " --devices 4 " + kCustom);
    CAPTURE(stats.output);
    CHECK(stats.exit_code == 0);
    CHECK(stats.output.find("block_size 128") != std::string::npos);
}

TEST_CASE("moe-bench: a list item empty or given twice, or a number out of range, exit 2 naming the flag and item") {
    // CLI11 dropped empty items ("1,,2" ran T = 1 and 2) and read past-2^64 counts as 2^64 - 1.
    expect_refused("--tokens 1,,2 --reps 1 " + kCustom, "--tokens: '1,,2' has an empty item");
    expect_refused("--tokens 1, --reps 1 " + kCustom, "--tokens: '1,' has an empty item");
    expect_refused("--tokens 1 --dtype f32,,bf16 --reps 1 " + kCustom, "--dtype: 'f32,,bf16' has an empty item");
    expect_refused("--tokens 1 --dtype f32,f32 --reps 1 " + kCustom, "--dtype: 'f32' is named twice");
    expect_refused("--tokens 1 --tokens 2,1 --reps 1 " + kCustom, "--tokens: '1' is named twice");
    expect_refused("--tokens 1 --weights u4,mxfp4,u4 --reps 1 " + kCustom, "--weights: 'u4' is named twice");
    expect_refused("--tokens 99999999999999999999 --reps 1 " + kCustom,
                   "--tokens: 99999999999999999999: out of range, at most 18446744073709551615");
    expect_refused("--tokens 1 --reps 1 --experts 99999999999999999999 --topk 1 --hidden 1 --inter 1",
                   "--experts: 99999999999999999999: out of range");
    expect_refused("--tokens 1 --reps 1 --threads 99999999999 " + kCustom,
                   "--threads: 99999999999: out of range, at most ");  // moe::cli::max_threads()
    expect_refused("--tokens 1.5 --reps 1 " + kCustom, "--tokens: 1.5: expected a whole number");
    const auto timeout = run_command(moe_bench() + " --timeout -1 --tokens 1 " + kCustom);
    CHECK(timeout.exit_code == 2);
    CHECK(timeout.output.find("--timeout: -1: expected 0 or more") != std::string::npos);
    CHECK(timeout.output.find("1797693134862315") == std::string::npos);  // DBL_MAX in 309 digits
    expect_refused("--strategy-stats --shape mixtral --dtype i32", "--dtype i32: expected a float type");
    expect_refused("--strategy-stats --shape mixtral --devices -1", "--devices: -1: expected more than 0");
}

TEST_CASE("moe-bench: the cpu backend's per-expert packing counts in the memory check") {
    // 1 x 1 experts: 1.2 GB of weights, but oneDNN pads each packed matrix to 4 KiB, about 1.2 TB;
    // once an internal error (bad_alloc), exit 3, or minutes of packing.
    expect_refused("--tokens 1 --reps 1 --experts 100000000 --topk 1 --hidden 1 --inter 1", "more than this machine's");
}

TEST_CASE("moe-bench --help: the defaults of --shape, --routing, --threads, and what decode is for --reps") {
    const auto r = run_command(moe_bench() + " --help");
    CAPTURE(r.output);
    CHECK(r.exit_code == 0);
    for (const char* want : {"default gpt-oss-20b", "default uniform", "this machine's hardware threads",
                             "20 for decode, T <= 8", "at most one"})
        CHECK(r.output.find(want) != std::string::npos);
}

TEST_CASE("moe-bench --json onto the --backend-lib plugin it times: exit 2 before anything runs, the plugin unchanged") {
    // It replaced the .so with the rows JSON, exit 0.
    const TempDir dir;
    const std::filesystem::path plugin = dir / "mine.so";
    std::filesystem::copy_file(MOE_EXAMPLE_PLUGIN, plugin);
    const std::string before = file_text(plugin);
    expect_refused("--backend-lib " + plugin.string() + " --tokens 1 --reps 1 " + kCustom + " --json " +
                       (dir / "." / "mine.so").string(),
                   "--json " + (dir / "." / "mine.so").string() + " is " + plugin.string() + ", which this run reads");
    CHECK(file_text(plugin) == before);
}

TEST_CASE("moe-bench --threads: at most 4 per hardware thread (and 1024), in decimal digits") {
    // 100000 threads ended in SIGSEGV, 2^31 - 1 in libgomp's "Out of memory" (exit 1).
    expect_refused("--tokens 1 --reps 1 --threads 100000 " + kCustom, "--threads: 100000: out of range, at most ");
    expect_refused("--tokens 1 --reps 1 --threads 2147483647 " + kCustom, "--threads: 2147483647: out of range");
    expect_refused("--tokens 1 --reps 1 --threads 0x10 " + kCustom, "--threads: 0x10: expected a whole number");
    const auto help = run_command(moe_bench() + " --help");
    // What threads_check enforces, in words that parse (it once read "at most N, 4 per hardware
    // thread and at least 1024").
    CHECK(help.output.find("at most " + std::to_string(std::max<unsigned>(1024, 4 * std::thread::hardware_concurrency())) +
                           ", the larger of 1024 and 4 per hardware") != std::string::npos);
    CHECK(help.output.find("and at least 1024") == std::string::npos);
}

TEST_CASE("moe-bench --strategy-stats: --devices, --block-size, --tokens and --experts bounded before anything is made") {
    // 10^8 devices or tokens ran for minutes; 10^10-row blocks, 10^11 tokens and 2^64 - 1 ended
    // in bad_alloc or "vector larger than max_size()" (exit 3).
    const auto refused = [](const std::string& args, const std::string& message) {
        // Under `timeout`: a regression would hang here, as the mode did.
        const auto r = run_command("timeout 60 " + moe_bench() + " --strategy-stats " + args);
        CAPTURE(args);
        CAPTURE(r.output);
        CHECK(r.exit_code == 2);
        CHECK(r.output.find(message) != std::string::npos);
        CHECK(r.output.find("blockwise (Neuron") == std::string::npos);  // nothing printed before
    };
    refused("--shape mixtral --devices 100000000", "--devices: 100000000: out of range, at most 65536");
    refused("--shape mixtral --devices 18446744073709551615", "--devices: 18446744073709551615: out of range");
    refused("--shape mixtral --block-size 10000000000", "--block-size: 10000000000: out of range, at most 1048576");
    refused("--shape mixtral --tokens 100000000",
            "--strategy-stats: shape mixtral at T = 100000000 with --block-size 512 needs about ");
    refused("--shape mixtral --tokens 100000000", "--tokens 100000000 is too large for this mode; at most ");
    refused("--shape mixtral --tokens 100000000000", "--tokens 100000000000 is too large for this mode");
    refused("--shape qwen3-30b-a3b --block-size 1048576", "--block-size 1048576 is too large for this mode; at most ");
    refused("--experts 100000000000 --topk 1 --hidden 16 --inter 16", "--experts 100000000000 is too large for this mode");
    // The largest accepted values of a small shape still run at once.
    const auto r = run_command("timeout 60 " + moe_bench() + " --strategy-stats --tokens 8 --devices 65536 --block-size "
                               "1048576 --experts 4 --topk 2 --hidden 64 --inter 64");
    CAPTURE(r.output);
    CHECK(r.exit_code == 0);
    CHECK(r.output.find("D = 65536 devices") != std::string::npos);
}

TEST_CASE("moe-bench: a switch given a value is refused, not run") {
    // `--strategy-stats=false` ran the mode: CLI11 counts the flag as given whatever its value.
    expect_refused("--strategy-stats=false --shape mixtral",
                   "--strategy-stats=false: --strategy-stats is a switch and takes no value");
    expect_refused("--worked-examples=0", "--worked-examples=0: --worked-examples is a switch");
    expect_refused("--vs-reference=false --tokens 1 --reps 1 " + kCustom, "--vs-reference is a switch");
    // Given alone, as before.
    CHECK(run_command(moe_bench() + " --worked-examples").exit_code == 0);
}

TEST_CASE("moe-bench: --backend all, --shape beside a custom shape, --weights groups and an empty --device are named") {
    // "--backend all" was answered as if --backend-lib had loaded the built-in backends.
    expect_refused("--backend all --tokens 1 --reps 1 " + kCustom, "--backend all: moe-bench times one backend");
    // --shape was silently ignored beside a custom shape.
    expect_refused("--shape mixtral --tokens 1 --reps 1 " + kCustom, "--shape and the custom shape");
    // The generator refused it only after the machine probes, naming neither flag.
    expect_refused("--tokens 1 --reps 1 --experts 2 --topk 1 --hidden 16 --inter 16 --weights u4",
                   "--weights u4: its groups of 32 weights must divide the hidden size 16 and the intermediate size 16 "
                   "of shape custom (--hidden, --inter)");
    expect_refused("--decode-study --experts 2 --topk 1 --hidden 48 --inter 64 --weights mxfp4",
                   "--weights mxfp4: its groups of 32 weights must divide the hidden size 48");
    expect_refused("--tokens 1 --reps 1 --device '' " + kCustom, "--device: an empty value");
}

TEST_CASE("moe-bench --device P:D past 2^64: no OpenCL device matches, exit 2 (was an internal error: stoul)") {
    for (const std::string mode : {"--tokens 1 --reps 1", "--transfer-study --tokens 2"}) {
        const auto r = run_command(moe_bench() + " --backend opencl --device 0:99999999999999999999 " + mode + " " + kCustom);
        CAPTURE(r.output);
        CHECK(r.exit_code == 2);
        CHECK(r.output.find("internal error") == std::string::npos);
        // "no OpenCL device matches" where a platform exists, the reason it has none otherwise.
        CHECK((r.output.find("no OpenCL device matches '0:99999999999999999999'") != std::string::npos ||
               r.output.find("unavailable") != std::string::npos));
    }
}
