#include "opencl_pipeline.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#include "environment_setting.hpp"
#include "gemm_dispatch.hpp"
#include "host_transfer.hpp"

namespace moe::backends::ocl {

namespace {

using u32 = std::uint32_t;
using i32 = std::int32_t;

std::size_t align16(std::size_t n) { return (n + 15) / 16 * 16; }

// Outputs from this size on have their pages touched before the read back (run_pipeline, 9.).
constexpr std::size_t kTouchPages = std::size_t(1) << 20;

// b holds at least bytes + pad bytes (reallocated, contents lost, when it does not).
void ensure(const Runtime& rt, Buffer& b, std::size_t bytes, std::size_t pad = 0) {
    if (!b.get() || b.bytes() < std::max<std::size_t>(bytes + pad, 1)) b = rt.buffer(bytes, nullptr, pad);
}

TileRange shifted(TileRange r, u32 by) { return {r.first + by, r.count}; }
GemmPlan shifted(GemmPlan p, u32 by) {
    for (TileRange* r : {&p.tiled, &p.small, &p.rows_kn, &p.rows_nk[0], &p.rows_nk[1], &p.rows_nk[2], &p.rows_nk[3], &p.f64,
                         &p.pieces[0], &p.pieces[1], &p.pieces[2], &p.pieces[3]})
        *r = shifted(*r, by);
    return p;
}

// The rows moe_mask_gen_gather also gathers: x's buffer and byte offset, its element type, the
// row width, the destination.
struct FusedGather {
    const Buffer* x;
    std::size_t x_off;
    i32 x_type;
    std::size_t hidden;
    const Buffer* out;
};

// mask_gen's one work-group (the kernel synchronises its phases with barriers): up to 1024
// work-items, a multiple of 32, as far as the device, the kernel and local memory (E counters and
// E masks of one bit per work-item) allow; 0 when not even 32 fit (too many experts for the
// device's local memory). (Fewer at decode, as few as the pairs, measured no faster on an H100:
// 0.007-0.009 ms either way.)
std::size_t mask_gen_group(const Runtime& rt, const char* kernel, std::size_t experts) {
    std::size_t group = std::min<std::size_t>({1024, rt.kernel_limit(kernel), rt.device().max_item_sizes[0]});
    group = group / 32 * 32;
    const auto local_bytes = [&](std::size_t g) { return experts * (1 + g / 32) * sizeof(u32); };
    while (group > 32 && local_bytes(group) > rt.device().local_mem) group /= 2;
    return group < 32 || local_bytes(group) > rt.device().local_mem ? 0 : group;
}

// moe_mask_gen over the indices at byte idx_off of `in`, into the workspace's plan buffers (and
// with `gather`, moe_mask_gen_gather: the gather too); `group`: mask_gen_group()'s, when known.
void launch_mask_gen(const Runtime& rt, Workspace& ws, const Buffer& in, std::size_t idx_off, bool idx64,
                     std::size_t pairs, std::size_t topk, std::size_t experts, const FusedGather* gather = nullptr,
                     std::size_t group = 0) {
    const char* kernel = gather ? "moe_mask_gen_gather" : "moe_mask_gen";
    ensure(rt, ws.counts, experts * sizeof(u32));
    ensure(rt, ws.offsets, (experts + 1) * sizeof(u32));
    ensure(rt, ws.used, experts * sizeof(u32));
    ensure(rt, ws.used_count, sizeof(u32));
    for (Buffer* b : {&ws.token, &ws.slot, &ws.position}) ensure(rt, *b, pairs * sizeof(u32));
    if (group == 0) group = mask_gen_group(rt, kernel, experts);
    if (group == 0)
        throw ClError(std::string(kernel) + " (" + std::to_string(experts) + " experts: no work-group of 32 fits the device)",
                      CL_INVALID_WORK_GROUP_SIZE);
    const LocalBytes cnt{experts * sizeof(u32)}, masks{experts * (group / 32) * sizeof(u32)};
    if (gather)
        rt.args(kernel, in, u32(idx_off), i32(idx64), u32(pairs), u32(topk), u32(experts), ws.counts, ws.offsets,
                ws.token, ws.slot, ws.position, ws.used, ws.used_count, cnt, masks, *gather->x, u32(gather->x_off),
                gather->x_type, u32(gather->hidden), *gather->out);
    else
        rt.args(kernel, in, u32(idx_off), i32(idx64), u32(pairs), u32(topk), u32(experts), ws.counts, ws.offsets,
                ws.token, ws.slot, ws.position, ws.used, ws.used_count, cnt, masks);
    rt.launch(kernel, 1, &group, &group);
}

// Where mask_gen's local memory cannot hold the experts (mask_gen_group() == 0: E above about 65000
// on PoCL's 512 KiB, about 6000 on a GPU's 48 KiB), the host's plan, the one mask_gen computes
// (make_routing_plan; tests/backends/test_opencl_backend.cpp checks that they agree), is uploaded
// in its place, so a legal problem is computed rather than refused. The device reads only gather's
// token list and scatter-reduce's positions (the GEMMs' tiles come from the host's counts).
void upload_host_plan(const Runtime& rt, Workspace& ws, const Tensor& indices, std::size_t experts) {
    const RoutingPlan hp = make_routing_plan(indices, experts);
    const std::size_t pairs = hp.position.size();
    const std::vector<u32> position(hp.position.begin(), hp.position.end());
    for (Buffer* b : {&ws.token, &ws.slot, &ws.position}) ensure(rt, *b, pairs * sizeof(u32));
    rt.write(ws.token, 0, pairs * sizeof(u32), hp.token.data());
    rt.write(ws.position, 0, pairs * sizeof(u32), position.data());
    rt.finish();  // the writes read host vectors that end here
}

// [T, K, width] stage (f32, or f64 from the f64 program) from a plan-ordered [pairs, width]
// device buffer.
Tensor stage(const Runtime& rt, const Buffer& b, const RoutingPlan& plan, std::size_t width, bool f64) {
    const std::size_t pairs = plan.position.size();
    std::vector<double> rows(pairs * width), v(pairs * width);
    if (f64) {
        rt.read(b, rows.size() * sizeof(double), rows.data());
    } else {
        std::vector<float> f(pairs * width);
        rt.read(b, f.size() * sizeof(float), f.data());
        std::copy(f.begin(), f.end(), rows.begin());
    }
    for (std::size_t i = 0; i < pairs; ++i)
        std::copy(rows.begin() + static_cast<std::ptrdiff_t>(plan.position[i] * width),
                  rows.begin() + static_cast<std::ptrdiff_t>((plan.position[i] + 1) * width),
                  v.begin() + static_cast<std::ptrdiff_t>(i * width));
    return Tensor::from_f64(f64 ? DType::f64 : DType::f32, {plan.tokens, plan.topk, width}, v);
}

// MOE_OPENCL_HOST_TIMES=1: each run prints its host-side phases to stderr (what a run's wall time
// beyond the device time consists of). The queue is drained before the download then, so the
// wait for the kernels and the read back are told apart.
struct HostClock {
    bool on = [] {
        const auto v = environment_setting("MOE_OPENCL_HOST_TIMES");
        return v && *v != "0";
    }();
    std::chrono::steady_clock::time_point last = std::chrono::steady_clock::now();
    std::string line;
    void mark(const char* what) {
        if (!on) return;
        const auto now = std::chrono::steady_clock::now();
        char b[64];
        std::snprintf(b, sizeof b, " %s %.3f", what, std::chrono::duration<double, std::milli>(now - last).count());
        line += b;
        last = now;
    }
};

}  // namespace

Output run_pipeline(const Runtime& rt, Workspace& ws, const Problem& p, bool want_stages,
                    const PipelineOptions& options) {
    HostClock clock;
    // Weights prepared for this problem were validated by prepare(), values included; a decode
    // step must not re-read every MXFP4 scale (200 ms per run on GPT-OSS-20B) to check them again.
    const Dims d = options.weights ? validate_structure(p) : validate(p);
    const ResolvedParams rp = resolve(p.attributes);
    const bool gemm2 = p.attributes.expert_type == ExpertType::gemm2_bias_swiglu_clamp;
    const Tensor &x = p.input(kHiddenStates), &idx = p.input(kTopkIndices), &rw = p.input(kRoutingWeights);
    const bool f64 = x.dtype() == DType::f64;
    const std::size_t es = f64 ? sizeof(double) : sizeof(float);  // an intermediate element
    const std::size_t pairs = d.T * d.K, n0 = d.first_gemm_width(p.attributes.expert_type);
    const std::size_t pad = rt.gemm().pad_elems() * es;

    // The weights come from prepare() when it ran for this problem, else are uploaded now.
    DeviceWeights uploaded;
    if (!options.weights) uploaded = upload_weights(rt, p);
    const DeviceWeights& dw = options.weights ? *options.weights : uploaded;

    // 1. The host reads the indices once, to count each expert's rows: the GEMM launches are
    //    sized from the counts, so nothing comes back from the device before the output.
    const ExpertRows er = expert_rows(expert_counts(idx, d.E));
    const bool rows_kn = !dw.w0.has_nk;
    std::vector<u32> table;
    const bool pieces = wants_pieces(rt, dw.w0) || wants_pieces(rt, dw.w1) || wants_pieces(rt, dw.w2);
    const GemmPlan down_plan = plan_gemm(rt.gemm(), er, rows_kn, f64, false, table, pieces);
    const GemmPlan first_plan =
        options.wrong_offset ? plan_gemm(rt.gemm(), er, rows_kn, f64, true, table, pieces) : down_plan;
    clock.mark("plan");

    // 2. One upload: indices, routing weights, the tile table and (when small) the hidden states,
    //    as the problem stores them, packed in pinned memory; large hidden states on their own,
    //    staged in chunks (host_transfer.hpp).
    const bool pack_x = x.nbytes() <= kPackedHiddenBytes;
    const std::size_t rw_off = align16(idx.nbytes()), tiles_off = rw_off + align16(rw.nbytes());
    const std::size_t x_off = tiles_off + align16(table.size() * sizeof(u32));
    const std::size_t total = x_off + (pack_x ? x.nbytes() : 0), x_stage = align16(total);
    const std::size_t out_bytes = x.nbytes();  // the output has the shape and type of x
    const std::size_t staging = std::max(x_stage + (pack_x ? 0 : x.nbytes()), out_bytes);
    if (ws.staging.bytes() < staging) ws.staging = rt.pinned(std::max(staging, ws.staging.bytes() * 3 / 2));
    unsigned char* s = ws.staging.data();
    std::memcpy(s, idx.data(), idx.nbytes());
    std::memcpy(s + rw_off, rw.data(), rw.nbytes());
    std::memcpy(s + tiles_off, table.data(), table.size() * sizeof(u32));
    if (pack_x) std::memcpy(s + x_off, x.data(), x.nbytes());
    ensure(rt, ws.in, total);
    rt.write(ws.in, 0, total, s);
    clock.mark("pack");
    if (!pack_x) {
        ensure(rt, ws.x, x.nbytes());
        upload(rt, ws.x, 0, x.data(), x.nbytes(), s + x_stage);
    }
    clock.mark("upload_x");
    const u32 tile_shift = u32(tiles_off / 16);  // a tile is 16 bytes; the table starts 16-aligned

    // 3. mask_gen: the plan on the device (token lists for gather, positions for scatter); at
    //    decode on the GPU bodies with the gather in the same launch.
    const Buffer& x_buf = pack_x ? ws.in : ws.x;
    const std::size_t x_at = pack_x ? x_off : 0;
    ensure(rt, ws.gathered, pairs * d.H * es, pad);
    // Only with the GPU bodies: on a CPU device (PoCL) one work-group runs on one core, and its
    // copy takes longer than a launch of moe_gather (0.17 ms against 0.02 at gpt-oss-20b T = 1).
    const bool fusable = options.fuse && rt.gemm().wide && !f64 && pairs * d.H <= kFusedGatherElems;
    const std::size_t fused_group = fusable ? mask_gen_group(rt, "moe_mask_gen_gather", d.E) : 0;
    const bool fuse_gather = fused_group != 0;
    const std::size_t group = fuse_gather ? fused_group : mask_gen_group(rt, "moe_mask_gen", d.E);
    const FusedGather fused{&x_buf, x_at, elem_type(x.dtype()), d.H, &ws.gathered};
    if (group != 0)
        launch_mask_gen(rt, ws, ws.in, 0, idx.dtype() == DType::i64, pairs, d.K, d.E, fuse_gather ? &fused : nullptr,
                        group);
    else
        upload_host_plan(rt, ws, idx, d.E);

    // 4. gather the routed rows, expert-major, widened to f32 (f64).
    if (!fuse_gather) {
        const char* gather = f64 ? "moe_gather_f64" : "moe_gather";
        rt.args(gather, x_buf, u32(x_at), elem_type(x.dtype()), ws.token, u32(d.H), u32(pairs), ws.gathered);
        const std::size_t gather_global[2] = {d.H, pairs};
        rt.launch(gather, 2, gather_global, nullptr, "moe_gather");
    }

    // 5. first GEMM(s): gate_up (+ bias_0) for GEMM2, gate and up for GEMM3. At decode (every
    //    tile an NK rows tile) the last of them also stores the activation (6.): for GEMM2 a
    //    work-group's columns must hold whole (gate, linear) pairs.
    ensure(rt, ws.first, pairs * n0 * es);
    ensure(rt, ws.up, gemm2 ? 0 : pairs * d.I * es);
    ensure(rt, ws.act, pairs * d.I * es, pad);
    ensure(rt, ws.down, pairs * d.H * es);
    const GemmPlan first = shifted(first_plan, tile_shift), down = shifted(down_plan, tile_shift);
    const bool uncompressed = !dw.w0.compressed && (gemm2 || !dw.w1.compressed);
    const bool fuse_act = options.fuse && !f64 && uncompressed && rows_nk_only(first) &&
                          (!gemm2 || rt.gemm().rows_tn(false) % 2 == 0);
    ActEpilogue act;
    act.mode = gemm2 ? 1 : 2;
    act.gate = &ws.first;
    act.act = &ws.act;
    act.beta = float(rp.swish_beta);
    act.limit = float(rp.clamp_limit);
    act.gate_lane = i32(rp.gate_lane);
    const ActEpilogue* first_act = fuse_act && gemm2 ? &act : nullptr;
    enqueue_gemm(rt, ws.gathered, ws.in, first, u32(n0), u32(d.H), dw.w0, dw.has_b0 ? &dw.b0 : nullptr, ws.first,
                 first_act);
    if (!gemm2)
        enqueue_gemm(rt, ws.gathered, ws.in, first, u32(d.I), u32(d.H), dw.w1, nullptr, ws.up, fuse_act ? &act : nullptr);
    // Submitted now, so that the device can start on the first GEMM while the host enqueues the
    // rest (a driver may hold commands back until a flush; the enqueue takes 0.1-0.2 ms on the
    // H100 and H200 hosts at T = 512).
    rt.flush();

    // 6. activation over every routed pair at once (unless the GEMM stored it).
    if (!fuse_act) {
        const std::size_t act_global[2] = {d.I, pairs};
        const Buffer& up = gemm2 ? ws.first : ws.up;
        if (f64)
            rt.args("moe_swiglu_f64", ws.first, up, ws.act, u32(d.I), u32(pairs), i32(gemm2), rp.swish_beta,
                    rp.clamp_limit, i32(rp.gate_lane));
        else
            rt.args("moe_swiglu", ws.first, up, ws.act, u32(d.I), u32(pairs), i32(gemm2), float(rp.swish_beta),
                    float(rp.clamp_limit), i32(rp.gate_lane));
        rt.launch(f64 ? "moe_swiglu_f64" : "moe_swiglu", 2, act_global, nullptr, "moe_swiglu");
    }

    // 7. down GEMM (+ bias_1 for GEMM2).
    enqueue_gemm(rt, ws.act, ws.in, down, u32(d.H), u32(d.I), gemm2 ? dw.w1 : dw.w2, dw.has_b1 ? &dw.b1 : nullptr,
                 ws.down);

    // 8. scatter-reduce in slot order, the routing weights read in the convention's layout, the
    //    output stored in the data type.
    ensure(rt, ws.out, out_bytes);
    const i32 dense = rp.routing_layout == RoutingLayout::dense, idx64 = idx.dtype() == DType::i64;
    const std::size_t out_global[2] = {d.H, d.T};
    if (f64)
        rt.args("moe_scatter_reduce_f64", ws.down, ws.in, u32(rw_off), elem_type(rw.dtype()), dense, u32(0), idx64,
                ws.position, u32(d.H), u32(d.T), u32(d.K), ws.out);
    else
        rt.args("moe_scatter_reduce", ws.down, ws.in, u32(rw_off), elem_type(rw.dtype()), dense, u32(0), idx64,
                ws.position, u32(d.H), u32(d.T), u32(d.K), ws.out, elem_type(x.dtype()));
    rt.launch(f64 ? "moe_scatter_reduce_f64" : "moe_scatter_reduce", 2, out_global, nullptr, "moe_scatter_reduce");
    rt.flush();  // the device starts on the kernels while the host prepares the output
    clock.mark("enqueue");

    // 9. The output tensor, allocated without zero-filling (every byte is read back into it);
    //    while the device runs, its pages are touched once, so that the copies out of the
    //    staging memory do not stop at a page fault every 4 KiB (fresh memory from the system
    //    for large outputs).
    Output o;
    o.output = Tensor::uninitialised(x.dtype(), x.shape());
    if (out_bytes >= kTouchPages)
        for (std::size_t at = 0; at < out_bytes; at += 4096) o.output.data()[at] = 0;
    clock.mark("out_alloc");
    if (clock.on) {
        rt.finish();
        clock.mark("wait_device");
    }
    // One read, into the output tensor as it is (staged; the upload's staging is free again:
    // the in-order queue has run it).
    download(rt, ws.out, out_bytes, o.output.data(), s);
    clock.mark("download");
    if (clock.on) std::fprintf(stderr, "opencl host ms (T=%zu, %zu MB in):%s\n", d.T, x.nbytes() >> 20, clock.line.c_str());
    if (want_stages) {
        const RoutingPlan hp = make_routing_plan(idx, d.E);
        o.stages.emplace(gemm2 ? "gate_up" : "gate", stage(rt, ws.first, hp, n0, f64));
        if (!gemm2) o.stages.emplace("up", stage(rt, ws.up, hp, d.I, f64));
        o.stages.emplace("act", stage(rt, ws.act, hp, d.I, f64));
        o.stages.emplace("down", stage(rt, ws.down, hp, d.H, f64));
    }
    return o;
}

RoutingPlan mask_gen(const Runtime& rt, const Tensor& indices, std::size_t experts) {
    const std::size_t topk = indices.shape().back(), pairs = indices.size();
    Workspace ws;
    Buffer in = rt.buffer(indices.nbytes(), indices.data());
    launch_mask_gen(rt, ws, in, 0, indices.dtype() == DType::i64, pairs, topk, experts);
    const auto read = [&](const Buffer& b, std::size_t n) {
        std::vector<u32> v(n);
        rt.read(b, n * sizeof(u32), v.data());
        return std::vector<std::size_t>(v.begin(), v.end());
    };
    RoutingPlan h;
    h.experts = experts;
    h.topk = topk;
    h.tokens = topk ? pairs / topk : 0;
    h.counts = read(ws.counts, experts);
    h.offsets = read(ws.offsets, experts + 1);
    const auto token = read(ws.token, pairs), slot = read(ws.slot, pairs);
    h.token.assign(token.begin(), token.end());
    h.slot.assign(slot.begin(), slot.end());
    h.position = read(ws.position, pairs);
    h.used = read(ws.used, std::min<std::size_t>(read(ws.used_count, 1)[0], experts));
    rt.take_kernel_times();
    return h;
}

}  // namespace moe::backends::ocl
