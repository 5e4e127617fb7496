// The opencl backend on this machine's OpenCL device (PoCL on CPU-only hosts): availability,
// outputs and stages judged by the product's comparison against the reference, the mask_gen
// kernel against make_routing_plan, and the SKIP path when no OpenCL platform exists.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "moe/backends/opencl_backend.hpp"
#include "moe/backends/registry.hpp"
#include "bundled_suite.hpp"
#include "compressed_problem.hpp"
#include "conformance_check.hpp"
#include "run_command.hpp"
#include "small_case_grid.hpp"
#include "small_cases.hpp"
#include "temp_dir.hpp"
#include "text_contains.hpp"

using namespace moe;
using backends::OpenclBackend;
using moe::test::has;

TEST_CASE("opencl is available on this machine") {
    OpenclBackend b;
    const auto a = b.availability();
    INFO("reason: " << a.reason);
    REQUIRE(a.available);  // no silent skip: PoCL (pocl-opencl-icd) is installed here
    CHECK(b.name() == "opencl");
    CHECK(b.provides_stages());
    CHECK(b.precision(DType::bf16).compute == DType::f32);
    CHECK(b.precision(DType::bf16).storage == DType::f32);
    const auto list = backends::opencl_device_list();
    REQUIRE(!list.empty());
    CHECK(has(list.front(), "0:0 "));
    CHECK(has(list.front(), "compute units"));
}

TEST_CASE("opencl passes the conformance comparison: both expert types, conventions and data types; T = 1 and 45") {
    OpenclBackend b;
    REQUIRE_MESSAGE(b.availability().available, b.availability().reason);
    test::for_each_small_problem({DType::f32, DType::f16, DType::bf16}, {1u, 45u},
                                 [&](const Problem& p, DType dtype, std::size_t) {
                                     const auto got = b.run(p, false).output;
                                     CHECK(got.dtype() == dtype);
                                     CHECK(got.shape() == p.input(kHiddenStates).shape());
                                     CHECK(test::verdict(test::golden_case(p), got, b.precision(dtype)) == "PASS");
                                 });
}

TEST_CASE("opencl: hidden states and output of several MB (staged through pinned memory in chunks)") {
    OpenclBackend b;
    REQUIRE_MESSAGE(b.availability().available, b.availability().reason);
    // 2100 tokens x H = 520 f32: 4.4 MB in and out, several 1 MiB chunks each way (on two threads
    // or more where the host has them: host_transfer.cpp).
    for (auto dtype : {DType::f32, DType::bf16}) {
        CAPTURE(dtype_name(dtype));
        const Problem p = test::small_problem(ExpertType::gemm3_swiglu, Convention::openvino, 2100, 520, 24, 8, 2, dtype);
        b.prepare(p);
        CHECK(test::verdict(test::golden_case(p), b.run(p, false).output, b.precision(dtype)) == "PASS");
    }
}

TEST_CASE("opencl: an empty expert, and one expert that takes every token") {
    OpenclBackend b;
    REQUIRE_MESSAGE(b.availability().available, b.availability().reason);
    for (auto type : {ExpertType::gemm2_bias_swiglu_clamp, ExpertType::gemm3_swiglu}) {
        for (auto conv : {Convention::spec, Convention::openvino}) {
            for (int variant = 0; variant < 2; ++variant) {
                CAPTURE(expert_type_name(type));
                CAPTURE(convention_name(conv));
                CAPTURE(variant);
                auto spec = test::small_spec(type, conv, 45, 33, 19, 5, 2, DType::f32);
                if (variant == 0) spec.routing.exclude = {1, 3};
                else spec.routing.always = {0};
                const Problem p = generator::synthesize(spec);
                const auto plan = backends::make_routing_plan(p.input(kTopkIndices), 5);
                if (variant == 0) CHECK(plan.counts[1] == 0);
                else CHECK(plan.counts[0] == 45);
                CHECK(test::verdict(test::golden_case(p), b.run(p, false).output, b.precision(DType::f32)) == "PASS");
            }
        }
    }
}

TEST_CASE("opencl: more experts than mask_gen's local memory holds (the host's plan goes up instead)") {
    // mask_gen keeps E counters and E bit masks of at least one word in one work-group's local
    // memory: 8 bytes an expert, so E = 150000 (1.2 MB) fits no device's (PoCL 512 KiB, GPUs
    // 48-228 KiB). The op allows any E; it used to be an ERROR ("no work-group of 32 fits").
    OpenclBackend b;
    REQUIRE_MESSAGE(b.availability().available, b.availability().reason);
    for (auto type : {ExpertType::gemm2_bias_swiglu_clamp, ExpertType::gemm3_swiglu}) {
        for (auto conv : {Convention::spec, Convention::openvino}) {
            CAPTURE(expert_type_name(type));
            CAPTURE(convention_name(conv));
            const Problem p = test::small_problem(type, conv, 7, 5, 3, 150000, 3, DType::f32);
            CHECK(test::verdict(test::golden_case(p), b.run(p, false).output, b.precision(DType::f32)) == "PASS");
        }
    }
}

TEST_CASE("opencl: decode's fused launches give the bits of every stage as a kernel of its own") {
    // Fused (the default): SwiGLU stored by the first GEMM's NK rows kernels when every tile is
    // one (decode), and with the GPU bodies mask_gen and the gather in one launch. Apart
    // (OpenclOptions::fuse = false, what MOE_OPENCL_FUSE=0 selects): moe_swiglu and moe_gather.
    OpenclBackend fused, apart(backends::OpenclOptions{"", backends::OpenclMutation::none, false});
    REQUIRE_MESSAGE(fused.availability().available, fused.availability().reason);
    const auto same_bits = [](const Tensor& a, const Tensor& b) {
        return a.dtype() == b.dtype() && a.shape() == b.shape() && std::memcmp(a.data(), b.data(), a.nbytes()) == 0;
    };
    // H = 37, I = 21: partial column blocks in every GEMM (and for GEMM2 a block that ends inside
    // the 42 gate_up columns on the GPU bodies' 16).
    test::for_each_small_problem({DType::f32, DType::bf16}, {1u, 3u, 45u}, [&](const Problem& p, DType dtype, std::size_t T) {
        const Output a = fused.run(p, true);
        const auto ka = fused.last_kernel_times();
        const Output b = apart.run(p, true);
        const auto kb = apart.last_kernel_times();
        CHECK(same_bits(a.output, b.output));
        REQUIRE(a.stages.size() == b.stages.size());
        for (const auto& [name, t] : b.stages) {
            CAPTURE(name);
            REQUIRE(a.stages.count(name) == 1);
            CHECK(same_bits(a.stages.at(name), t));
        }
        CHECK(test::verdict(test::golden_case(p), a.output, fused.precision(dtype)) == "PASS");
        // Which kernels ran: T = 1 and 3 are decode, every expert's few rows in NK rows tiles
        // when the weights are NK (KN weights go to the KN rows kernel); T = 45 is not, and runs
        // moe_swiglu either way.
        const bool nk = resolve(p.attributes).weight_layout == WeightLayout::NK;
        const bool fused_act = T < 45 && nk;
        CHECK(ka.count("moe_swiglu") == (fused_act ? 0u : 1u));
        CHECK(kb.count("moe_swiglu") == 1);
        // The GPU bodies (a GPU, or MOE_OPENCL_GEMM=wide) gather in mask_gen's launch whenever it
        // copies at most kFusedGatherElems (32768) elements: here at most 90 pairs x 37.
        const bool fused_gather = has(fused.description(), "GEMM GPU bodies");
        CHECK(ka.count("moe_mask_gen_gather") == (fused_gather ? 1u : 0u));
        CHECK(ka.count("moe_mask_gen") == (fused_gather ? 0u : 1u));
        CHECK(ka.count("moe_gather") == (fused_gather ? 0u : 1u));
        CHECK(ka.count("moe_scatter_reduce") == 1);
        for (const char* k : {"moe_mask_gen", "moe_gather", "moe_scatter_reduce"}) {
            CAPTURE(k);
            CHECK(kb.count(k) == 1);
        }
        CHECK(kb.count("moe_mask_gen_gather") == 0);
    });
}

namespace {

// An environment variable set for a scope, its earlier value (or absence) restored after.
class ScopedEnv {
public:
    ScopedEnv(const char* name, const char* value) : name_(name) {
        if (const char* old = std::getenv(name)) old_ = old;
        ::setenv(name, value, 1);
    }
    ~ScopedEnv() { old_ ? (void)::setenv(name_, old_->c_str(), 1) : (void)::unsetenv(name_); }
    ScopedEnv(const ScopedEnv&) = delete;
    ScopedEnv& operator=(const ScopedEnv&) = delete;

private:
    const char* name_;
    std::optional<std::string> old_;
};

}  // namespace

TEST_CASE("opencl's GPU bodies: the decode kernels give the same bits with 1, 2 or 4 k-steps a pass") {
    // MOE_OPENCL_ROWS_STEPS (GemmConfig::rows_steps) has the NK rows kernels (plain and
    // compressed) load 2 or 4 k-steps' weights before their products; each lane's sums keep their
    // order. Rows long enough for whole passes and single steps after them: H = 2112 (plain: 8 whole
    // steps of 256 and a partial one; compressed: 4 steps of 512 and a partial one), I = 1056 (the
    // down GEMM: 4 whole steps and a partial one; compressed 2 and a partial one); bf16 with
    // H = 2102 reads rows that are not 16-byte aligned (vloadn). T = 1 and 3: decode.
    const ScopedEnv wide("MOE_OPENCL_GEMM", "wide");
    std::vector<std::pair<std::string, Problem>> problems;
    for (std::size_t T : {1u, 3u}) {
        const auto plain = [&](DType dtype, std::size_t H, std::size_t I) {
            return test::small_problem(ExpertType::gemm3_swiglu, Convention::openvino, T, H, I, 4, 2, dtype);
        };
        const std::string t = "T = " + std::to_string(T) + ", ";
        problems.emplace_back(t + "f32", plain(DType::f32, 2112, 1056));
        problems.emplace_back(t + "bf16, H = 2102", plain(DType::bf16, 2102, 1056));
        for (const auto& [name, o] : std::vector<std::pair<std::string, test::CompressOptions>>{
                 {"u4, groups of 32, zero points", {DType::u4, 32, DType::f16, true}},
                 {"MXFP4", {DType::f4e2m1}},
                 {"i8 per channel", {DType::i8, 0, DType::bf16}}}) {
            Problem p = test::small_problem(ExpertType::gemm2_bias_swiglu_clamp, Convention::openvino, T, 2112, 1056,
                                            4, 2, DType::bf16);
            test::compress_all_weights(p, o);
            problems.emplace_back(t + name, std::move(p));
        }
    }
    std::vector<Tensor> one_step;
    for (const char* steps : {"1", "2", "4"}) {
        CAPTURE(steps);
        const ScopedEnv env("MOE_OPENCL_ROWS_STEPS", steps);
        OpenclBackend b;
        REQUIRE_MESSAGE(b.availability().available, b.availability().reason);
        for (std::size_t i = 0; i < problems.size(); ++i) {
            const auto& [name, p] = problems[i];
            CAPTURE(name);
            const Tensor got = b.run(p, false).output;
            // The GPU bodies' NK rows kernels ran, built with this many steps a pass.
            const bool compressed = is_compressed_weight(p.input(kWeight0).dtype());
            CHECK(b.last_kernel_times().count(compressed ? "moe_gemm_compressed_rows" : "moe_gemm_rows") == 1);
            CHECK(has(b.description(), "GEMM GPU bodies"));
            CHECK(has(b.description(), "k-steps a pass") == (std::string(steps) != "1"));
            if (std::string(steps) == "1") {
                CHECK(test::verdict(test::golden_case(p), got, b.precision(p.input(kHiddenStates).dtype())) == "PASS");
                one_step.push_back(got);
                continue;
            }
            REQUIRE(got.nbytes() == one_step[i].nbytes());
            CHECK(std::memcmp(got.data(), one_step[i].data(), got.nbytes()) == 0);
        }
    }
}

TEST_CASE("opencl mask_gen produces exactly make_routing_plan's plan") {
    REQUIRE_MESSAGE(OpenclBackend().availability().available, OpenclBackend().availability().reason);
    std::vector<std::pair<Tensor, std::size_t>> cases = {
        {Tensor::from_f64(DType::i32, {4, 2}, {3, 0, 0, 1, 1, 3, 0, 3}), 4},      // expert 2 empty
        {Tensor::from_f64(DType::i64, {1, 3, 2}, {2, 0, 1, 2, 2, 1}), 3},         // i64, rank 3
        {Tensor(DType::i32, {0, 2}), 5},                                           // no tokens
    };
    // A larger one from the generator: 45 tokens, top-4 of 16 experts, one expert excluded.
    auto spec = test::small_spec(ExpertType::gemm3_swiglu, Convention::openvino, 45, 8, 4, 16, 4);
    spec.routing.exclude = {7};
    cases.emplace_back(generator::synthesize(spec).input(kTopkIndices), 16);
    // 700 tokens x top-4: 2800 pairs, more than one work-group's chunk (the kernel places them
    // 1024 or fewer at a time).
    cases.emplace_back(generator::synthesize(test::small_spec(ExpertType::gemm3_swiglu, Convention::openvino, 700, 8, 4,
                                                              16, 4))
                           .input(kTopkIndices),
                       16);
    for (const auto& [idx, E] : cases) {
        CAPTURE(shape_to_string(idx.shape()));
        const auto want = backends::make_routing_plan(idx, E);
        const auto got = backends::opencl_mask_gen(idx, E);
        CHECK(got.experts == want.experts);
        CHECK(got.tokens == want.tokens);
        CHECK(got.topk == want.topk);
        CHECK(got.counts == want.counts);
        CHECK(got.offsets == want.offsets);
        CHECK(got.token == want.token);
        CHECK(got.slot == want.slot);
        CHECK(got.position == want.position);
        CHECK(got.used == want.used);
    }
}

TEST_CASE("opencl stages have the golden layout and are within the reference's stage bounds") {
    OpenclBackend b;
    REQUIRE_MESSAGE(b.availability().available, b.availability().reason);
    for (auto type : {ExpertType::gemm2_bias_swiglu_clamp, ExpertType::gemm3_swiglu}) {
        for (auto conv : {Convention::spec, Convention::openvino}) {
            CAPTURE(expert_type_name(type));
            CAPTURE(convention_name(conv));
            const Problem p = test::small_problem(type, conv, 9, 24, 10, 5, 3);
            const auto got = b.run(p, true).stages;
            const auto c = test::golden_case(p, true);
            REQUIRE(got.size() == c.stages.size());
            for (const auto& [name, t] : c.stages) {
                CAPTURE(name);
                REQUIRE(got.count(name) == 1);
                CHECK(got.at(name).dtype() == DType::f32);
                REQUIRE(got.at(name).shape() == t.shape());
            }
            CHECK(test::stage_verdict(c, got, b.precision(DType::f32)) == "PASS");
        }
    }
}

TEST_CASE("opencl: f64 data runs in f64 (PoCL has cl_khr_fp64); an unknown device is unavailable with the list") {
    for (auto type : {ExpertType::gemm2_bias_swiglu_clamp, ExpertType::gemm3_swiglu}) {
        for (auto conv : {Convention::spec, Convention::openvino}) {
            CAPTURE(expert_type_name(type));
            CAPTURE(convention_name(conv));
            const Problem p = test::small_problem(type, conv, 45, 37, 21, 6, 2, DType::f64);
            OpenclBackend b;
            REQUIRE(b.supports(p).supported);
            CHECK(b.precision(DType::f64).compute == DType::f64);
            CHECK(b.precision(DType::f64).storage == DType::f64);
            const auto out = b.run(p, true);
            CHECK(out.output.dtype() == DType::f64);
            CHECK(test::verdict(test::golden_case(p), out.output, b.precision(DType::f64)) == "PASS");
            CHECK(out.stages.at("act").dtype() == DType::f64);
        }
    }
    OpenclBackend none(backends::OpenclOptions{"no-such-device-xyz"});
    CHECK(!none.availability().available);
    CHECK(has(none.availability().reason, "no OpenCL device matches 'no-such-device-xyz' (devices found: 0:0 "));
    CHECK(OpenclBackend(backends::OpenclOptions{"0:0"}).availability().available);
    CHECK(backends::make_builtin_backend("opencl", {"0:0"})->availability().available);
}

TEST_CASE("without an OpenCL platform, every case is SKIP with the reason and the run exits 77") {
    test::TempDir empty;
    const auto r = test::run_command("OCL_ICD_VENDORS=" + empty.path().string() + " " + test::moe_conform() +
                                     " run --quiet --backend opencl --suite " + test::kBundledSuite);
    CAPTURE(r.output);
    CHECK(r.exit_code == 77);
    CHECK(has(r.output, "backend unavailable: no OpenCL platform found (clGetPlatformIDs returned CL_PLATFORM_NOT_FOUND_KHR)"));
    CHECK(!has(r.output, "PASS "));
    CHECK(has(r.output, " passed, 0 failed, "));
    std::size_t files = 0;
    for (const auto& e : std::filesystem::directory_iterator(test::kBundledSuite)) files += e.path().extension() == ".h5";
    CHECK(has(r.output, "0 passed, 0 failed, " + std::to_string(files) + " skipped"));
}

TEST_CASE("opencl and moe-bench on a device that takes fewer than 256 work-items a group (POCL_MAX_WORK_GROUP_SIZE)") {
    // OpenCL promises only 1 work-item a group; small GPUs offer 64-256. moe_gemm_f64's 16 x 16
    // work-group failed every f64 case there (CL_INVALID_WORK_GROUP_SIZE), and below 32 mask_gen
    // had no work-group at all (every case an ERROR). PoCL only: the variable means nothing to
    // other drivers, and PoCL reads it once per process, hence the child processes.
    if (!has(test::run_command(test::moe_conform() + " list").output, "Portable Computing Language")) {
        MESSAGE("no PoCL device here: skipped");
        return;
    }
    for (const std::string limit : {"16", "100"}) {
        for (const std::string file : {"gemm2_gptoss_spec_f64.h5", "gemm3_qwen_openvino_f64.h5", "gemm2_gptoss_openvino_f32.h5"}) {
            CAPTURE(limit);
            CAPTURE(file);
            const auto r = test::run_command("POCL_MAX_WORK_GROUP_SIZE=" + limit + " " + test::moe_conform() +
                                             " run --quiet --backend opencl --device 'Portable Computing Language' --case " +
                                             test::bundled_case(file));
            CAPTURE(r.output);
            CHECK(r.exit_code == 0);
            CHECK(has(r.output, "1 passed, 0 failed, 0 skipped"));
        }
    }
    // moe-bench's copy baseline launched 256 work-items a group whatever the device took.
    const auto r = test::run_command("POCL_MAX_WORK_GROUP_SIZE=100 " + test::moe_bench() +
                                     " --backend opencl --device 'Portable Computing Language' --tokens 1 --experts 2"
                                     " --topk 1 --hidden 16 --inter 8 --reps 1 --dtype f32");
    CAPTURE(r.output);
    CHECK(r.exit_code == 0);
    CHECK(!has(r.output, "CL_INVALID_WORK_GROUP_SIZE"));
}

TEST_CASE("opencl's GPU bodies on compressed weights when a kernel takes fewer than 128 work-items a group") {
    // moe_gemm_compressed_rows* required 128 work-items a group and moe_gemm_compressed_tiled the
    // tiled shape's, whatever the driver compiled them for (CL_KERNEL_WORK_GROUP_SIZE: a GPU may
    // give a register-heavy kernel fewer than the device takes); every compressed case was then an
    // ERROR. Now the rows kernels take 64 or 32 (or none run) and the tiles go to
    // moe_gemm_compressed. PoCL with the GPU bodies forced and the compressed kernels' limit
    // lowered (MOE_OPENCL_KERNEL_WG_CAP) stands in for such a driver.
    if (!has(test::run_command(test::moe_conform() + " list").output, "Portable Computing Language")) {
        MESSAGE("no PoCL device here: skipped");
        return;
    }
    const std::string dir = test::kBundledSuite + "/", device = " --device 'Portable Computing Language'";
    for (const auto& [cap, says] : std::vector<std::pair<std::string, std::string>>{
             {"64", "compressed-weight GEMMs (rows work-group 64) (tiles on moe_gemm_compressed)"},
             {"32", "compressed-weight GEMMs (rows work-group 32) (tiles on moe_gemm_compressed)"},
             {"16", "compressed-weight GEMMs (no rows kernels) (tiles on moe_gemm_compressed)"}}) {
        CAPTURE(cap);
        const std::string env = "MOE_OPENCL_GEMM=wide MOE_OPENCL_KERNEL_WG_CAP=moe_gemm_compressed=" + cap + " ";
        const auto r = test::run_command(env + test::moe_conform() + " run --backend opencl" + device + " --case " + dir +
                                         "compressed_u4_gemm3_channel_zp.h5 --case " + dir +
                                         "compressed_mxfp4_gemm3_bf16.h5 --case " + dir +
                                         "compressed_f8e4m3_gemm2_channel.h5 --case " + dir + "openvino_gpu_gemm3_u4.h5");
        CAPTURE(r.output);
        CHECK(r.exit_code == 0);
        CHECK(has(r.output, "4 passed, 0 failed, 0 skipped"));
        // moe-bench prints the build report and which kernels ran: at T = 64 tiles of many rows
        const auto b = test::run_command(env + test::moe_bench() + " --backend opencl" + device +
                                         " --tokens 64 --experts 2 --topk 1 --hidden 64 --inter 32 --reps 1 --dtype f32"
                                         " --weights u4");
        CAPTURE(b.output);
        CHECK(b.exit_code == 0);
        CHECK(has(b.output, says));
        CHECK(has(b.output, "moe_gemm_compressed "));
        CHECK(!has(b.output, "moe_gemm_compressed_tiled"));
    }
}

TEST_CASE("moe-conform: --device selects the device and appears in the repro line; list shows the devices") {
    test::TempDir dir;
    const std::string json = (dir.path() / "r.json").string();
    auto r = test::run_command(test::moe_conform() + " run --quiet --backend opencl --device 0:0 --json " + json +
                               " --case " + test::bundled_case("topk_one.h5"));
    CAPTURE(r.output);
    CHECK(r.exit_code == 0);
    const auto report = test::run_command("cat " + json);
    CHECK(has(report.output, "moe-conform run --device 0:0 --backend opencl --case "));
    r = test::run_command(test::moe_conform() + " run --quiet --backend opencl --device 7:7 --case " +
                          test::bundled_case("topk_one.h5"));
    CHECK(r.exit_code == 2);  // a usage error before anything runs, not every opencl case SKIP
    CHECK(has(r.output, "no OpenCL device matches '7:7' (devices found: 0:0 "));
    r = test::run_command(test::moe_conform() + " list");
    CHECK(r.exit_code == 0);
    CHECK(has(r.output, "OpenCL devices"));
    CHECK(has(r.output, "0:0 "));
}
