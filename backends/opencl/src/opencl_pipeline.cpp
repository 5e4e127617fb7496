#include "opencl_pipeline.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <cstdint>
#include <vector>

#include "moe/spec/error.hpp"

namespace moe::backends::ocl {

namespace {

using u32 = std::uint32_t;
using i32 = std::int32_t;

// Element type codes of kernels/common.cl (MOE_F32, MOE_F16, MOE_BF16).
i32 elem_type(DType t) {
    switch (t) {
        case DType::f32: return 0;
        case DType::f16: return 1;
        case DType::bf16: return 2;
        default: throw InputError("opencl: element type " + std::string(dtype_name(t)) + " is not supported");
    }
}

Buffer upload(const Runtime& rt, const Tensor& t) { return rt.buffer(t.nbytes(), t.data()); }

// Bytes past the end of a GEMM operand that moe_gemm may read (and never uses).
std::size_t gemm_pad(const Runtime& rt) { return rt.gemm().pad_elems() * sizeof(float); }

template <class T>
std::vector<T> read_vec(const Runtime& rt, const Buffer& b, std::size_t n) {
    std::vector<T> v(n);
    rt.read(b, n * sizeof(T), v.data());
    return v;
}

// [E, R, C] elements of `size` bytes to [E, C, R], in blocks that stay in cache.
std::vector<unsigned char> transpose_experts(const unsigned char* src, std::size_t E, std::size_t R, std::size_t C,
                                             std::size_t size) {
    std::vector<unsigned char> dst(E * R * C * size);
    constexpr std::size_t B = 32;
    for (std::size_t e = 0; e < E; ++e) {
        const unsigned char* s = src + e * R * C * size;
        unsigned char* d = dst.data() + e * R * C * size;
        for (std::size_t r0 = 0; r0 < R; r0 += B)
            for (std::size_t c0 = 0; c0 < C; c0 += B)
                for (std::size_t r = r0; r < std::min(R, r0 + B); ++r)
                    for (std::size_t c = c0; c < std::min(C, c0 + B); ++c)
                        std::memcpy(d + (c * R + r) * size, s + (r * C + c) * size, size);
    }
    return dst;
}

// A tensor on the device and how to read it. Padded for moe_gemm's reads past the end.
Weights weights(const Runtime& rt, const Tensor& t) {
    return {rt.buffer(t.nbytes(), t.data(), gemm_pad(rt)), elem_type(t.dtype()), {}, false};
}
// A weight tensor of `kn` layout ([E, K, N], else [E, N, K]). NK weights are on the device twice
// (twice their size in device memory): transposed to KN for the tiled kernels (moe_gemm,
// moe_gemm_small: their tiles then load whole vectors of columns instead of transposing every
// weight into local memory), and as given for moe_gemm_rows, which streams NK weight rows
// without local memory (faster for a few rows than the KN tiled rows kernel).
Weights weights(const Runtime& rt, const Tensor& t, bool kn) {
    if (kn) return weights(rt, t);
    const auto& s = t.shape();
    const auto bytes = transpose_experts(static_cast<const unsigned char*>(t.data()), s[0], s[1], s[2],
                                         t.nbytes() / (s[0] * s[1] * s[2]));
    return {rt.buffer(bytes.size(), bytes.data(), gemm_pad(rt)), elem_type(t.dtype()),
            rt.buffer(t.nbytes(), t.data(), gemm_pad(rt)), true};
}

const char* type_suffix(i32 type) { return type == 1 ? "f16" : type == 2 ? "bf16" : "f32"; }

// Row tiles of every used expert for one GEMM, 4 values each (expert, first row of A, first row
// of C, rows). An expert's rows go to blocks of tm rows (moe_gemm) while at least tm are left; a
// remainder of more than tm - ts / 2 rows to one more, partial, block; then blocks of ts rows
// (moe_gemm_small, about half as many rows, so few-row experts do not run half-empty blocks), a
// remainder of more than ts / 2 rows to one partial small block; the last few rows to
// moe_gemm_rows in tiles of rows_tm(kn) (a fuller block would cost more there: it re-reads the
// weights per tile); `kn`: the layout moe_gemm_rows reads.
struct GemmTiles {
    std::vector<u32> tiled, small, rows;
};
GemmTiles gemm_tiles(const GemmConfig& c, bool kn, const std::vector<std::size_t>& used,
                     const std::vector<std::size_t>& offsets, const std::vector<std::size_t>& counts,
                     bool wrong_offset) {
    GemmTiles g;
    const u32 tm = c.tiled_tm(), ts = c.small_tm(), rtm = c.rows_tm(kn);
    const u32 big_min = tm - ts / 2, small_min = ts / 2;
    for (std::size_t u = 0; u < used.size(); ++u) {
        const std::size_t e = used[u];
        const u32 row0 = u32(offsets[e]), count = u32(counts[e]);
        // The wrong-offset mutant: the second used expert reads its rows at the first's offset.
        const u32 a_row0 = wrong_offset && u == 1 ? u32(offsets[used[0]]) : row0;
        const auto add = [&](std::vector<u32>& list, u32 r, u32 n) {
            list.insert(list.end(), {u32(e), a_row0 + r, row0 + r, n});
        };
        u32 r = 0;
        for (; r + tm <= count; r += tm) add(g.tiled, r, tm);
        if (count - r > big_min) {
            add(g.tiled, r, count - r);
            continue;
        }
        for (; r + ts <= count; r += ts) add(g.small, r, ts);
        if (count - r > small_min) {
            add(g.small, r, count - r);
            continue;
        }
        for (; r < count; r += rtm) add(g.rows, r, std::min(rtm, count - r));
    }
    return g;
}

// One GEMM over every used expert's rows (see kernels/gemm.cl): C = A * W[e] (+ bias[e]) for
// each tile, one launch per kernel that has tiles. A is padded (gemm().pad_elems()).
void gemm(const Runtime& rt, const Buffer& A, const GemmTiles& g, u32 N, u32 K, const Weights& w,
          const Weights* bias, Buffer& C) {
    const GemmConfig& c = rt.gemm();
    // The tiled kernels read the KN buffer; moe_gemm_rows the NK original when there is one.
    const bool rows_kn = !w.has_nk;
    const std::string type = std::string("_") + type_suffix(w.type);
    const auto run = [&](const std::vector<u32>& tiles, const char* kernel, const GemmShape& s, std::size_t tn,
                         std::size_t ly, bool kn) {
        if (tiles.empty() || N == 0) return;
        const std::string name = kernel + type + (kn ? "_kn" : "_nk");
        const Buffer& wb = kn ? w.buf : w.nk;
        Buffer table = rt.buffer(tiles.size() * sizeof(u32), tiles.data());
        rt.args(name.c_str(), A, table, N, K, wb, bias ? bias->buf : wb, bias ? bias->type : i32(0),
                i32(bias != nullptr), C);
        const std::size_t global[2] = {(N + tn - 1) / tn * s.lx, tiles.size() / 4 * ly}, local[2] = {s.lx, ly};
        rt.launch(name.c_str(), 2, global, local, kernel);
    };
    run(g.tiled, "moe_gemm", c.tiled, c.tiled_tn(), c.tiled.ly, true);
    run(g.small, "moe_gemm_small", c.small, c.small_tn(), c.small.ly, true);
    if (rows_kn) {
        run(g.rows, "moe_gemm_rows", c.rows, c.rows_tn(true), 1, true);
        return;
    }
    // NK rows: tiles of at most 1, 2, 4 rows to the kernels of that many rows (_nk1, _nk2, _nk4),
    // so that decode does not compute rows_mr copies of one row; fuller tiles to _nk.
    std::vector<u32> by_rows[4];
    for (std::size_t i = 0; i < g.rows.size(); i += 4) {
        const u32 n = g.rows[i + 3];
        auto& list = by_rows[n <= 1 ? 0 : n <= 2 ? 1 : n <= 4 ? 2 : 3];
        list.insert(list.end(), g.rows.begin() + std::ptrdiff_t(i), g.rows.begin() + std::ptrdiff_t(i + 4));
    }
    const char* variant[4] = {"1", "2", "4", ""};
    for (int v = 0; v < 4; ++v) {
        if (by_rows[v].empty() || N == 0) continue;
        const std::string name = std::string("moe_gemm_rows") + type + "_nk" + variant[v];
        Buffer table = rt.buffer(by_rows[v].size() * sizeof(u32), by_rows[v].data());
        rt.args(name.c_str(), A, table, N, K, w.nk, bias ? bias->buf : w.nk, bias ? bias->type : i32(0),
                i32(bias != nullptr), C);
        const std::size_t tn = c.rows_tn(false);
        const std::size_t global[2] = {(N + tn - 1) / tn * c.rows.lx, by_rows[v].size() / 4}, local[2] = {c.rows.lx, 1};
        rt.launch(name.c_str(), 2, global, local, "moe_gemm_rows");
    }
}

void gather(const Runtime& rt, const Buffer& x, i32 x_type, const Buffer& token, std::size_t H, std::size_t pairs,
            Buffer& out) {
    rt.args("moe_gather", x, x_type, token, u32(H), u32(pairs), out);
    const std::size_t global[2] = {H, pairs};
    rt.launch("moe_gather", 2, global);
}

void swiglu(const Runtime& rt, const Buffer& first, const Buffer& up, Buffer& act, std::size_t I, std::size_t rows,
            bool gemm2, float beta, float limit, int gate_lane) {
    rt.args("moe_swiglu", first, up, act, u32(I), u32(rows), i32(gemm2), beta, limit, i32(gate_lane));
    const std::size_t global[2] = {I, rows};
    rt.launch("moe_swiglu", 2, global);
}

void scatter_reduce(const Runtime& rt, const Buffer& down, const Buffer& slot_weight, const Buffer& position,
                    std::size_t H, std::size_t T, std::size_t K, Buffer& out) {
    rt.args("moe_scatter_reduce", down, slot_weight, position, u32(H), u32(T), u32(K), out);
    const std::size_t global[2] = {H, T};
    rt.launch("moe_scatter_reduce", 2, global);
}

// [T, K, width] f32 stage from a plan-ordered [pairs, width] device buffer.
Tensor stage(const Runtime& rt, const Buffer& b, const RoutingPlan& plan, std::size_t width) {
    const std::size_t pairs = plan.position.size();
    const auto rows = read_vec<float>(rt, b, pairs * width);
    std::vector<double> v(pairs * width);
    for (std::size_t i = 0; i < pairs; ++i)
        std::copy(rows.begin() + static_cast<std::ptrdiff_t>(plan.position[i] * width),
                  rows.begin() + static_cast<std::ptrdiff_t>((plan.position[i] + 1) * width),
                  v.begin() + static_cast<std::ptrdiff_t>(i * width));
    return Tensor::from_f64(DType::f32, {plan.tokens, plan.topk, width}, v);
}

}  // namespace

DeviceWeights upload_weights(const Runtime& rt, const Problem& p) {
    const bool gemm2 = p.attributes.expert_type == ExpertType::gemm2_bias_swiglu_clamp;
    const bool kn = resolve(p.attributes).weight_layout == WeightLayout::KN;
    DeviceWeights w;
    w.w0 = weights(rt, p.input(kWeight0), kn);
    w.w1 = weights(rt, p.input(kWeight1), kn);
    w.w2 = gemm2 ? Weights{rt.buffer(0), 0, {}, false} : weights(rt, p.input(kWeight2), kn);
    w.has_b0 = gemm2 && p.has(kBias0);
    w.has_b1 = gemm2 && p.has(kBias1);
    w.b0 = w.has_b0 ? weights(rt, p.input(kBias0)) : Weights{rt.buffer(0), 0, {}, false};
    w.b1 = w.has_b1 ? weights(rt, p.input(kBias1)) : Weights{rt.buffer(0), 0, {}, false};
    return w;
}

DevicePlan mask_gen(const Runtime& rt, const Tensor& indices, std::size_t experts) {
    const std::size_t topk = indices.shape().back(), pairs = indices.size();
    std::vector<i32> idx(pairs);
    for (std::size_t i = 0; i < pairs; ++i) idx[i] = static_cast<i32>(indices.get_index(i));
    Buffer d_idx = rt.buffer(pairs * sizeof(i32), idx.data());
    Buffer counts = rt.buffer(experts * sizeof(u32)), offsets = rt.buffer((experts + 1) * sizeof(u32)),
           used = rt.buffer(experts * sizeof(u32)), used_count = rt.buffer(sizeof(u32));
    DevicePlan d{rt.buffer(pairs * sizeof(u32)), rt.buffer(pairs * sizeof(u32)), rt.buffer(pairs * sizeof(u32)), {}};
    rt.args("moe_mask_gen", d_idx, u32(pairs), u32(topk), u32(experts), counts, offsets, d.token, d.slot, d.position,
            used, used_count);
    // One work-group (the kernel synchronises its phases with barriers): as many work-items as
    // experts, up to what the device and the kernel allow.
    std::size_t kernel_wg = 0;
    check(clGetKernelWorkGroupInfo(rt.kernel("moe_mask_gen"), rt.device().device, CL_KERNEL_WORK_GROUP_SIZE,
                                   sizeof kernel_wg, &kernel_wg, nullptr),
          "clGetKernelWorkGroupInfo(CL_KERNEL_WORK_GROUP_SIZE)");
    const std::size_t group = std::max<std::size_t>(
        1, std::min({experts, kernel_wg, rt.device().max_work_group, rt.device().max_item_sizes[0]}));
    rt.launch("moe_mask_gen", 1, &group, &group);

    RoutingPlan& h = d.host;
    h.experts = experts;
    h.topk = topk;
    h.tokens = topk ? pairs / topk : 0;
    const auto to_size = [](const std::vector<u32>& v) { return std::vector<std::size_t>(v.begin(), v.end()); };
    h.counts = to_size(read_vec<u32>(rt, counts, experts));
    h.offsets = to_size(read_vec<u32>(rt, offsets, experts + 1));
    h.token = read_vec<u32>(rt, d.token, pairs);
    h.slot = read_vec<u32>(rt, d.slot, pairs);
    h.position = to_size(read_vec<u32>(rt, d.position, pairs));
    const u32 n_used = read_vec<u32>(rt, used_count, 1)[0];
    h.used = to_size(read_vec<u32>(rt, used, std::min<std::size_t>(n_used, experts)));
    return d;
}

Output run_pipeline(const Runtime& rt, const Problem& p, bool want_stages, const PipelineOptions& options) {
    const Dims d = validate(p);
    const ResolvedParams rp = resolve(p.attributes);
    const bool gemm2 = p.attributes.expert_type == ExpertType::gemm2_bias_swiglu_clamp;
    const std::size_t pairs = d.T * d.K, n0 = d.first_gemm_width(p.attributes.expert_type);
    const Tensor& x = p.input(kHiddenStates);

    // 1. mask_gen: the plan on the device; counts/offsets/used come back to drive the GEMMs.
    DevicePlan plan = mask_gen(rt, p.input(kTopkIndices), d.E);

    // 2. gather the routed rows, expert-major, as f32.
    Buffer d_x = upload(rt, x);
    Buffer gathered = rt.buffer(pairs * d.H * sizeof(float), nullptr, gemm_pad(rt));
    gather(rt, d_x, elem_type(x.dtype()), plan.token, d.H, pairs, gathered);

    // 3. first GEMM(s) per used expert: gate_up (+ bias_0) for GEMM2, gate and up for GEMM3.
    //    The weights come from prepare() when it ran for this problem, else are uploaded now.
    DeviceWeights uploaded;
    if (!options.weights) uploaded = upload_weights(rt, p);
    const DeviceWeights& dw = options.weights ? *options.weights : uploaded;
    const Weights &w0 = dw.w0, &w1 = dw.w1, &w2 = dw.w2, &b0 = dw.b0, &b1 = dw.b1;
    const bool has_b0 = dw.has_b0, has_b1 = dw.has_b1;
    Buffer first = rt.buffer(pairs * n0 * sizeof(float));
    Buffer up = rt.buffer(gemm2 ? 0 : pairs * d.I * sizeof(float));
    Buffer act = rt.buffer(pairs * d.I * sizeof(float), nullptr, gemm_pad(rt));
    Buffer down = rt.buffer(pairs * d.H * sizeof(float));
    const RoutingPlan& hp = plan.host;
    const bool kn = !w0.has_nk;  // the layout moe_gemm_rows reads
    const GemmTiles tiles = gemm_tiles(rt.gemm(), kn, hp.used, hp.offsets, hp.counts, false);
    const GemmTiles first_tiles =
        options.wrong_offset ? gemm_tiles(rt.gemm(), kn, hp.used, hp.offsets, hp.counts, true) : tiles;
    gemm(rt, gathered, first_tiles, u32(n0), u32(d.H), w0, has_b0 ? &b0 : nullptr, first);
    if (!gemm2) gemm(rt, gathered, first_tiles, u32(d.I), u32(d.H), w1, nullptr, up);

    // 4. activation over every routed pair at once.
    swiglu(rt, first, gemm2 ? first : up, act, d.I, pairs, gemm2, float(rp.swish_beta), float(rp.clamp_limit),
           rp.gate_lane);

    // 5. down GEMM over every used expert (+ bias_1 for GEMM2).
    gemm(rt, act, tiles, u32(d.H), u32(d.I), gemm2 ? w1 : w2, has_b1 ? &b1 : nullptr, down);

    // 6. scatter-reduce in slot order. The routing weight of (t, k) is read on the host in the
    //    convention's layout (compact: t*K + k; dense: e*T + t), as the cpu pipeline does.
    const Tensor& rw = p.input(kRoutingWeights);
    const Tensor& idx = p.input(kTopkIndices);
    std::vector<float> slot_weight(pairs);
    for (std::size_t i = 0; i < pairs; ++i) {
        const std::size_t t = i / d.K;
        const std::size_t flat =
            rp.routing_layout == RoutingLayout::compact ? i : static_cast<std::size_t>(idx.get_index(i)) * d.T + t;
        slot_weight[i] = static_cast<float>(rw.get(flat));
    }
    Buffer d_w = rt.buffer(pairs * sizeof(float), slot_weight.data());
    Buffer out = rt.buffer(d.T * d.H * sizeof(float));
    scatter_reduce(rt, down, d_w, plan.position, d.H, d.T, d.K, out);

    const auto y = read_vec<float>(rt, out, d.T * d.H);
    Output o;
    o.output = Tensor(x.dtype(), x.shape());
    const std::vector<double> wide(y.begin(), y.end());
    o.output.set_range(0, wide.size(), wide.data());  // rounds to the data type
    if (want_stages) {
        o.stages.emplace(gemm2 ? "gate_up" : "gate", stage(rt, first, hp, n0));
        if (!gemm2) o.stages.emplace("up", stage(rt, up, hp, d.I));
        o.stages.emplace("act", stage(rt, act, hp, d.I));
        o.stages.emplace("down", stage(rt, down, hp, d.H));
    }
    return o;
}

std::vector<float> gather_rows(const Runtime& rt, const Tensor& x, const std::vector<u32>& token) {
    const std::size_t H = x.shape().back(), pairs = token.size();
    Buffer d_x = upload(rt, x), d_token = rt.buffer(pairs * sizeof(u32), token.data());
    Buffer out = rt.buffer(pairs * H * sizeof(float));
    gather(rt, d_x, elem_type(x.dtype()), d_token, H, pairs, out);
    auto v = read_vec<float>(rt, out, pairs * H);
    rt.take_kernel_times();
    return v;
}

std::vector<float> gemm_expert_rows(const Runtime& rt, const std::vector<float>& A,
                                    const std::vector<std::size_t>& counts, const Tensor& w, bool kn,
                                    const Tensor* bias) {
    // NK: [E, N, K]; KN: [E, K, N].
    const std::size_t N = kn ? w.shape()[2] : w.shape()[1], K = kn ? w.shape()[1] : w.shape()[2];
    const std::size_t E = w.shape()[0];
    if (counts.size() != E) throw std::invalid_argument("gemm_expert_rows: one count per expert");
    std::vector<std::size_t> offsets(E + 1, 0), used;
    for (std::size_t e = 0; e < E; ++e) {
        offsets[e + 1] = offsets[e] + counts[e];
        if (counts[e]) used.push_back(e);
    }
    const std::size_t M = offsets[E];
    if (A.size() != M * K) throw std::invalid_argument("gemm_expert_rows: A is not (sum of counts) x K");
    Buffer d_a = rt.buffer(A.size() * sizeof(float), A.data(), gemm_pad(rt));
    const Weights dw = weights(rt, w, kn);
    const Weights db = bias ? weights(rt, *bias) : Weights{rt.buffer(0), 0, {}, false};
    Buffer out = rt.buffer(M * N * sizeof(float));
    gemm(rt, d_a, gemm_tiles(rt.gemm(), !dw.has_nk, used, offsets, counts, false), u32(N), u32(K), dw,
         bias ? &db : nullptr, out);
    auto v = read_vec<float>(rt, out, M * N);
    rt.take_kernel_times();
    return v;
}

std::vector<float> gemm_rows(const Runtime& rt, const std::vector<float>& A, std::size_t M, const Tensor& w, bool kn,
                             std::size_t expert, const Tensor* bias) {
    std::vector<std::size_t> counts(w.shape()[0], 0);
    counts.at(expert) = M;
    return gemm_expert_rows(rt, A, counts, w, kn, bias);
}

std::vector<float> swiglu_rows(const Runtime& rt, const std::vector<float>& first, const std::vector<float>& up,
                               std::size_t rows, std::size_t inter, bool gemm2, float beta, float limit, int gate_lane) {
    Buffer d_first = rt.buffer(first.size() * sizeof(float), first.data());
    Buffer d_up = rt.buffer(up.size() * sizeof(float), up.data());
    Buffer act = rt.buffer(rows * inter * sizeof(float));
    swiglu(rt, d_first, gemm2 ? d_first : d_up, act, inter, rows, gemm2, beta, limit, gate_lane);
    auto v = read_vec<float>(rt, act, rows * inter);
    rt.take_kernel_times();
    return v;
}

std::vector<float> scatter_reduce_rows(const Runtime& rt, const std::vector<float>& down,
                                       const std::vector<float>& slot_weight, const std::vector<u32>& position,
                                       std::size_t tokens, std::size_t topk, std::size_t hidden) {
    Buffer d_down = rt.buffer(down.size() * sizeof(float), down.data());
    Buffer d_w = rt.buffer(slot_weight.size() * sizeof(float), slot_weight.data());
    Buffer d_pos = rt.buffer(position.size() * sizeof(u32), position.data());
    Buffer out = rt.buffer(tokens * hidden * sizeof(float));
    scatter_reduce(rt, d_down, d_w, d_pos, hidden, tokens, topk, out);
    auto v = read_vec<float>(rt, out, tokens * hidden);
    rt.take_kernel_times();
    return v;
}

}  // namespace moe::backends::ocl
