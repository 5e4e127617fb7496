// moe-conform --backend-lib with plugins that are wrong in one way each (bad_plugin.c): every one
// is refused (exit 2) or reported (ERROR, SKIP) with the fault named; none crashes the tool.
#include <doctest/doctest.h>

#include <string>

#include "run_command.hpp"

using moe::test::moe_conform;
using moe::test::run_command;

namespace {

const std::string kCase = std::string(MOE_SOURCE_DIR) + "/data/golden/exact_gemm2_lane1.h5";

std::string plugin(const std::string& variant) { return std::string(MOE_PLUGIN_DIR) + "/bad_plugin_" + variant + ".so"; }

moe::test::CommandResult run_with(const std::string& lib) {
    return run_command(moe_conform() + " run --quiet --backend-lib " + lib + " --case " + kCase);
}

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("plugins that cannot be used are refused with exit 2 and the fault named") {
    const struct {
        const char* variant;
        const char* message;
    } cases[] = {
        {"bad_version", "its moe_conform_backend_v1 table says ABI version 3, not 1"},
        {"v3_only", "built for moe-conform backend ABI version 3 (moe_conform_backend_v3); this moe-conform speaks versions 1 and 2"},
        {"v2_with_v1_table", "its moe_conform_backend_v2 table says ABI version 1, not 2"},
        {"v2_bad_dequant", "precision(f64) declares u8, not a floating type"},
        {"no_symbol", "exports no moe_conform_backend_v2 or moe_conform_backend_v1 function"},
        {"small_struct", "built against another backend_abi.h"},
        {"no_run", "has no run function"},
        {"bad_name", "its name is empty or has characters other than"},
        {"bad_precision", "precision(f64) declares i32, not a floating type"},
        {"null_table", "moe_conform_backend_v1() returned no table"},
    };
    for (const auto& c : cases) {
        CAPTURE(c.variant);
        const auto r = run_with(plugin(c.variant));
        CHECK(r.exit_code == 2);
        CHECK(has(r.output, plugin(c.variant)));
        CHECK(has(r.output, c.message));
    }
}

TEST_CASE("a version-1 plugin is SKIP on a case with compressed weights, with the reason") {
    // run_fails would report ERROR if the host called it: SKIP shows the host never did.
    const auto r = run_command(moe_conform() + " run --backend-lib " + plugin("run_fails") + " --case " +
                               std::string(MOE_SOURCE_DIR) + "/data/golden/exact_compressed_zp_u4_gemm2.h5");
    CHECK(r.exit_code == 77);
    CHECK(has(r.output, "SKIP"));
    CHECK(has(r.output, "compressed weights are not in backend ABI version 1 (export moe_conform_backend_v2)"));
    CHECK_FALSE(has(r.output, "device lost"));
}

TEST_CASE("a file that is not a shared library is refused with the loader's reason") {
    const auto r = run_with(kCase);
    CHECK(r.exit_code == 2);
    CHECK(has(r.output, "cannot load it"));
}

TEST_CASE("a plugin whose run fails gives ERROR with its message; the run continues and exits 1") {
    const auto r = run_with(plugin("run_fails"));
    CHECK(r.exit_code == 1);
    CHECK(has(r.output, "ERROR"));
    CHECK(has(r.output, "bad_plugin: run failed: device lost while running exact_gemm2_lane1"));
}

TEST_CASE("an unavailable plugin is SKIP with its reason, exit 77") {
    const auto r = run_with(plugin("unavailable"));
    CHECK(r.exit_code == 77);
    CHECK(has(r.output, "backend unavailable: no accelerator in this machine"));
}

TEST_CASE("moe-conform list shows a loaded plugin beside the built-in backends") {
    const auto r = run_command(moe_conform() + " list --backend-lib " + plugin("run_fails"));
    CHECK(r.exit_code == 0);
    CHECK(has(r.output, "bad_plugin"));
    CHECK(has(r.output, "a plugin wrong in one way (plugin "));
}
