// Crash isolation through the real command-line tools: a golden file whose reading crashes the
// process is an ERROR of its own; the other files of the suite still PASS, the reports are
// written, and no tool dies with it. The crash is the crash_on_open.c shim's (HDF5 dies of
// SIGSEGV opening the file): every file that once crashed HDF5 (tests/golden/fuzz-regressions/)
// is refused with a message now, and the next one found must be survived as well.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "bundled_suite.hpp"
#include "run_command.hpp"
#include "temp_dir.hpp"
#include "text_contains.hpp"

namespace fs = std::filesystem;
using moe::test::run_command;
using moe::test::TempDir;
using moe::test::bundled_case;
using moe::test::has;

namespace {

const fs::path kRegressions = fs::path(MOE_SOURCE_DIR) / "tests/golden/fuzz-regressions";
// Put before a command: HDF5 crashes opening any file whose name contains "crashing".
const std::string kCrashingReader = std::string("LD_PRELOAD=") + MOE_CRASH_SHIM + " MOE_CRASH_ON_OPEN=crashing ";

int count(const std::string& text, const std::string& part) {
    int n = 0;
    for (auto at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
    return n;
}

}  // namespace

TEST_CASE("the crashing file really crashes an unisolated reader, and only that file") {
    TempDir dir;
    fs::copy_file(bundled_case("topk_one.h5"), dir / "crashing.h5");
    auto r = run_command(kCrashingReader + moe::test::moe_conform() + " run --quiet --no-isolation --backend reference --case " +
                         (dir / "crashing.h5").string());
    CAPTURE(r.output);
    CHECK((r.exit_code == -1 || r.exit_code > 128));  // killed by a signal (the shell reports 128 + signal)
    r = run_command(kCrashingReader + moe::test::moe_conform() + " run --quiet --no-isolation --backend reference --case " +
                    bundled_case("topk_one.h5"));
    CHECK(r.exit_code == 0);
}

TEST_CASE("a suite with one crashing file and two good ones: ERROR, PASS, PASS, both reports, exit 1") {
    TempDir dir;
    const fs::path suite = dir / "suite";
    fs::create_directories(suite);
    fs::copy_file(bundled_case("topk_one.h5"), suite / "a_good.h5");
    fs::copy_file(bundled_case("topk_one.h5"), suite / "b_crashing.h5");
    fs::copy_file(bundled_case("gemm2_bias_en.h5"), suite / "c_good.h5");
    const std::string json = (dir / "r.json").string(), xml = (dir / "r.xml").string();
    const auto r = run_command(kCrashingReader + moe::test::moe_conform() + " run --quiet --backend reference,loop_f32 --suite " +
                               suite.string() + " --json " + json + " --junit " + xml);
    CAPTURE(r.output);
    CHECK(r.exit_code == 1);
    CHECK(count(r.output, "ERROR   ") == 2);  // one per backend
    CHECK(has(r.output, "SIGSEGV"));
    CHECK(has(r.output, "b_crashing"));
    CHECK(has(r.output, "4 passed, 0 failed, 0 skipped, 2 errors"));
    const auto check = run_command("/usr/bin/python3 " MOE_SOURCE_DIR "/tests/python/check_report_files.py " + json + " " +
                                   xml + " " MOE_SOURCE_DIR "/spec/report.schema.json --expect-total 6");
    CAPTURE(check.output);
    CHECK(check.exit_code == 0);
}

TEST_CASE("a case over its time limit is killed and reported as ERROR naming the timeout; the run goes on") {
    TempDir dir;
    const std::string json = (dir / "r.json").string();
    const auto r = run_command(moe::test::moe_conform() + " run --quiet --backend reference --case-timeout 0.000001 --case " +
                               bundled_case("topk_one.h5") + " --case " + bundled_case("gemm2_bias_en.h5") +
                               " --json " + json);
    CAPTURE(r.output);
    CHECK(r.exit_code == 1);
    CHECK(has(r.output, "timed out after 1e-06 s"));
    CHECK(has(r.output, "0 passed, 0 failed, 0 skipped, 2 errors"));
    CHECK(fs::exists(json));
    // The limit was the user's, not the file's fault; the repro lines repeat it, so that they
    // give the same ERROR.
    CHECK(!has(r.output, "damaged or hostile"));
    CHECK(has(r.output, "--case " + bundled_case("topk_one.h5") + " --case-timeout 1e-06"));
}

TEST_CASE("moe-golden survives a reader that crashes: a message and exit 2") {
    TempDir dir;
    fs::copy_file(bundled_case("topk_one.h5"), dir / "crashing.h5");
    for (const char* command : {" inspect ", " complete -o /dev/null "}) {
        const auto r = run_command(kCrashingReader + "timeout 60 " + moe::test::moe_golden() + command +
                                   (dir / "crashing.h5").string());
        CAPTURE(r.output);
        CHECK(r.exit_code == 2);
        CHECK(has(r.output, "crashed the HDF5 library"));
        CHECK(has(r.output, "SIGSEGV"));
    }
}

TEST_CASE("moe-golden survives every regression file: a message and exit 2, never a crash or a hang") {
    for (const auto& e : fs::directory_iterator(kRegressions)) {
        CAPTURE(e.path().string());
        for (const char* command : {" inspect ", " complete -o /dev/null "}) {
            const auto r = run_command("timeout 60 " + moe::test::moe_golden() + command + e.path().string());
            CAPTURE(r.output);
            CHECK(r.exit_code == 2);
            CHECK(has(r.output, "moe-golden: error: golden file"));
        }
    }
}
