// The per-kernel testing hooks' host side (moe/backends/opencl_testing.hpp): one kernel launch
// on host data, read back as f32.
#include <stdexcept>

#include "gemm_dispatch.hpp"
#include "opencl_pipeline.hpp"

namespace moe::backends::ocl {

namespace {

using u32 = std::uint32_t;
using i32 = std::int32_t;

std::vector<float> read_floats(const Runtime& rt, const Buffer& b, std::size_t n) {
    std::vector<float> v(n);
    rt.read(b, n * sizeof(float), v.data());
    rt.take_kernel_times();
    return v;
}

}  // namespace

std::vector<float> gather_rows(const Runtime& rt, const Tensor& x, const std::vector<u32>& token) {
    const std::size_t H = x.shape().back(), pairs = token.size();
    Buffer d_x = rt.buffer(x.nbytes(), x.data()), d_token = rt.buffer(pairs * sizeof(u32), token.data());
    Buffer out = rt.buffer(pairs * H * sizeof(float));
    rt.args("moe_gather", d_x, u32(0), elem_type(x.dtype()), d_token, u32(H), u32(pairs), out);
    const std::size_t global[2] = {H, pairs};
    rt.launch("moe_gather", 2, global);
    return read_floats(rt, out, pairs * H);
}

std::vector<float> gemm_expert_rows(const Runtime& rt, const std::vector<float>& A,
                                    const std::vector<std::size_t>& counts, const Tensor& w, bool kn,
                                    const Tensor* bias) {
    // NK: [E, N, K]; KN: [E, K, N].
    const std::size_t N = kn ? w.shape()[2] : w.shape()[1], K = kn ? w.shape()[1] : w.shape()[2];
    if (counts.size() != w.shape()[0]) throw std::invalid_argument("gemm_expert_rows: one count per expert");
    const ExpertRows er = expert_rows(counts);
    const std::size_t M = er.offsets.back();
    if (A.size() != M * K) throw std::invalid_argument("gemm_expert_rows: A is not (sum of counts) x K");
    Buffer d_a = rt.buffer(A.size() * sizeof(float), A.data(), rt.gemm().pad_elems() * sizeof(float));
    const Weights dw = device_weight(rt, w, kn);
    const Weights db = bias ? device_tensor(rt, *bias) : Weights{};
    std::vector<u32> table;
    const GemmPlan plan = plan_gemm(rt.gemm(), er, !dw.has_nk, false, false, table, wants_pieces(rt, dw));
    Buffer d_table = rt.buffer(table.size() * sizeof(u32), table.data());
    Buffer out = rt.buffer(M * N * sizeof(float));
    enqueue_gemm(rt, d_a, d_table, plan, u32(N), u32(K), dw, bias ? &db : nullptr, out);
    return read_floats(rt, out, M * N);
}

std::vector<float> swiglu_rows(const Runtime& rt, const std::vector<float>& first, const std::vector<float>& up,
                               std::size_t rows, std::size_t inter, bool gemm2, float beta, float limit, int gate_lane) {
    Buffer d_first = rt.buffer(first.size() * sizeof(float), first.data());
    Buffer d_up = rt.buffer(up.size() * sizeof(float), up.data());
    Buffer act = rt.buffer(rows * inter * sizeof(float));
    rt.args("moe_swiglu", d_first, gemm2 ? d_first : d_up, act, u32(inter), u32(rows), i32(gemm2), beta, limit,
            i32(gate_lane));
    const std::size_t global[2] = {inter, rows};
    rt.launch("moe_swiglu", 2, global);
    return read_floats(rt, act, rows * inter);
}

std::vector<float> scatter_reduce_rows(const Runtime& rt, const std::vector<float>& down,
                                       const std::vector<float>& slot_weight, const std::vector<u32>& position,
                                       std::size_t tokens, std::size_t topk, std::size_t hidden) {
    Buffer d_down = rt.buffer(down.size() * sizeof(float), down.data());
    // Compact f32 routing weights at offset 0 (the dense layout's indices are not read).
    Buffer d_w = rt.buffer(slot_weight.size() * sizeof(float), slot_weight.data());
    Buffer d_pos = rt.buffer(position.size() * sizeof(u32), position.data());
    Buffer out = rt.buffer(tokens * hidden * sizeof(float));
    rt.args("moe_scatter_reduce", d_down, d_w, u32(0), i32(0), i32(0), u32(0), i32(0), d_pos, u32(hidden),
            u32(tokens), u32(topk), out, i32(0));
    const std::size_t global[2] = {hidden, tokens};
    rt.launch("moe_scatter_reduce", 2, global);
    return read_floats(rt, out, tokens * hidden);
}

}  // namespace moe::backends::ocl
