#include "pipeline.hpp"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <type_traits>

#include <omp.h>

#include "activation_kernels.hpp"
#include "element_convert.hpp"
#include "parallel_work.hpp"
#include "moe/spec/compression.hpp"

namespace moe::backends::cpu {

namespace {

template <class S>
S swish(S x, S beta) {
    return x / (S(1) + std::exp(-beta * x));
}

// bf16 data keeps its activations in bf16 (round to nearest even; NaN stays NaN).
float round_to_bf16(float v) {
    const std::uint32_t bits = static_cast<std::uint32_t>(f32_to_bf16_bits(v)) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

template <class S>
void add_bias(const Problem& p, const char* name, std::size_t e, std::size_t n, S* rows, std::size_t count) {
    if (!p.has(name)) return;
    std::vector<double> b(n);
    p.input(name).to_f64(e * n, n, b.data());
    for (std::size_t r = 0; r < count; ++r)
        for (std::size_t j = 0; j < n; ++j) rows[r * n + j] += static_cast<S>(b[j]);
}

}  // namespace

template <class S>
Pipeline<S>::Pipeline(const Problem& p, int threads, CpuMutation mutation, Workspace<S>& ws,
                      const std::map<std::string, PackedWeights>* prepared, DecodeProducts products)
    : p_(p), prepared_(prepared), d_(validate_structure(p)), rp_(resolve(p.attributes)),
      gemm2_(p.attributes.expert_type == ExpertType::gemm2_bias_swiglu_clamp), threads_(threads),
      mutation_(mutation), products_(products), plan_(make_routing_plan(p.input(kTopkIndices), d_.E)),
      n0_(d_.first_gemm_width(p.attributes.expert_type)), x_(ws.x), first_(ws.first), up_(ws.up), act_(ws.act),
      down_(ws.down) {
    const std::size_t pairs = d_.T * d_.K;
    x_.resize(pairs * d_.H);
    first_.resize(pairs * n0_);
    if (!gemm2_) up_.resize(pairs * d_.I);
    act_.resize(pairs * d_.I);
    down_.resize(pairs * d_.H);
    slot_weight_.resize(pairs);
    const Tensor& rw = p.input(kRoutingWeights);
    const Tensor& idx = p.input(kTopkIndices);
    for (std::size_t i = 0; i < pairs; ++i) {
        const std::size_t t = i / d_.K;
        const std::size_t flat = rp_.routing_layout == RoutingLayout::compact
                                     ? i
                                     : static_cast<std::size_t>(idx.get_index(i)) * d_.T + t;
        slot_weight_[i] = static_cast<S>(rw.get(flat));
    }
}

template <class S>
void Pipeline<S>::gather() {
    const Tensor& x = p_.input(kHiddenStates);
    const long long pairs = static_cast<long long>(plan_.token.size());
#pragma omp parallel num_threads(threads_) if (threads_ > 1 && pairs > 64)
    {
#pragma omp for schedule(static)
        for (long long i = 0; i < pairs; ++i) {
            S* dst = x_.data() + static_cast<std::size_t>(i) * d_.H;
            const std::size_t src = plan_.token[static_cast<std::size_t>(i)] * d_.H;
            if constexpr (std::is_same_v<S, float>) {
                widen_to_f32(x, src, d_.H, dst);
            } else {
                x.to_f64(src, d_.H, dst);
            }
        }
    }
}

template <class S>
void Pipeline<S>::activation(std::size_t begin, std::size_t end, int threads) {
    const S L = static_cast<S>(rp_.clamp_limit), beta = static_cast<S>(rp_.swish_beta);
    const int g = rp_.gate_lane;
    // bf16 data: the down GEMM runs on bf16 activations (declared as storage bf16).
    const bool to_bf16 = rounds_bf16_intermediates(p_.input(kHiddenStates).dtype());
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1 && (end - begin) * d_.I > 16384)
    for (long long r = static_cast<long long>(begin); r < static_cast<long long>(end); ++r) {
        const std::size_t i = static_cast<std::size_t>(r);
        S* a = act_.data() + i * d_.I;
        const S* f = first_.data() + i * n0_;
        if constexpr (std::is_same_v<S, float>) {
            if (gemm2_) swiglu_interleaved_row(f, a, d_.I, g, L, beta);
            else swiglu_split_row(f, up_.data() + i * d_.I, a, d_.I, beta);
            if (to_bf16)
                for (std::size_t j = 0; j < d_.I; ++j) a[j] = round_to_bf16(a[j]);
        } else {  // f64 data: the scalar definition, nothing stored narrower
            for (std::size_t j = 0; j < d_.I; ++j) {
                if (gemm2_) {
                    const S gate = std::min(f[2 * j + g], L);
                    const S lin = std::max(std::min(f[2 * j + 1 - g], L), -L);  // a NaN stays NaN
                    a[j] = (lin + S(1)) * swish(gate, beta);
                } else {
                    a[j] = swish(f[j], beta) * up_[i * d_.I + j];
                }
            }
        }
    }
}

template <class S>
GemmCall Pipeline<S>::call(const char* weight, std::size_t e) const {
    GemmCall c{&p_.input(weight), e, rp_.weight_layout};
    c.products = products_;
    if (p_.has(scale_input(weight))) {  // compressed (spec/compressed.md)
        c.scale = &p_.input(scale_input(weight));
        if (p_.has(zero_point_input(weight))) c.zero_point = &p_.input(zero_point_input(weight));
    }
    if (prepared_) {
        auto it = prepared_->find(weight);
        if (it != prepared_->end()) c.packed = &it->second;
    }
    return c;
}

template <class S>
void Pipeline<S>::run_expert(std::size_t e, bool second_used, int threads) {
    const std::size_t begin = plan_.offsets[e], n = plan_.counts[e];
    GemmCall first = call(kWeight0, e);
    if (mutation_ == CpuMutation::wrong_expert_block && second_used) first.expert = (e + 1) % d_.E;
    if (mutation_ == CpuMutation::tile_edge_dropped && n0_ % 16) first.n_limit = n0_ - n0_ % 16;
    expert_gemm(x_.data() + begin * d_.H, n, d_.H, first, first_.data() + begin * n0_, n0_, threads);
    if (gemm2_) {
        add_bias(p_, kBias0, e, n0_, first_.data() + begin * n0_, n);
    } else {
        expert_gemm(x_.data() + begin * d_.H, n, d_.H, call(kWeight1, e), up_.data() + begin * d_.I, d_.I, threads);
    }
    activation(begin, begin + n, threads);
    expert_gemm(act_.data() + begin * d_.I, n, d_.I, call(gemm2_ ? kWeight1 : kWeight2, e), down_.data() + begin * d_.H,
                d_.H, threads);
    if (gemm2_) add_bias(p_, kBias1, e, d_.H, down_.data() + begin * d_.H, n);
}

template <class S>
Tensor Pipeline<S>::scatter_reduce() const {
    const Tensor& x = p_.input(kHiddenStates);
    Tensor out(x.dtype(), x.shape());
    const long long T = static_cast<long long>(d_.T);
    // One token per work item: its K rows are summed in slot order by one thread, so there is no
    // race and the result does not depend on the thread count.
#pragma omp parallel num_threads(threads_) if (threads_ > 1 && T > 16)
    {
        std::vector<S> acc(d_.H);
#pragma omp for schedule(static)
        for (long long tt = 0; tt < T; ++tt) {
            const std::size_t t = static_cast<std::size_t>(tt);
            std::fill(acc.begin(), acc.end(), S(0));
            for (std::size_t k = 0; k < d_.K; ++k) {
                const S w = slot_weight_[t * d_.K + k];
                const S* y = down_.data() + plan_.position[t * d_.K + k] * d_.H;
                const bool lost = mutation_ == CpuMutation::scatter_race && t % 2 == 0 && k + 1 == d_.K && d_.K > 1;
                for (std::size_t h = 0; h < d_.H; ++h) acc[h] = lost ? w * y[h] : acc[h] + w * y[h];
            }
            if constexpr (std::is_same_v<S, float>) {
                narrow_from_f32(acc.data(), d_.H, out, t * d_.H);
            } else {
                out.set_range(t * d_.H, d_.H, acc.data());
            }
        }
    }
    return out;
}

template <class S>
Tensor Pipeline<S>::stage(const CacheLineVector<S>& buf, std::size_t width) const {
    std::vector<double> v(d_.T * d_.K * width);
    for (std::size_t i = 0; i < d_.T * d_.K; ++i)
        std::copy(buf.begin() + static_cast<std::ptrdiff_t>(plan_.position[i] * width),
                  buf.begin() + static_cast<std::ptrdiff_t>((plan_.position[i] + 1) * width),
                  v.begin() + static_cast<std::ptrdiff_t>(i * width));
    return Tensor::from_f64(sizeof(S) == 4 ? DType::f32 : DType::f64, {d_.T, d_.K, width}, v);
}

template <class S>
Output Pipeline<S>::run(bool want_stages) {
    gather();
    // Many experts with few rows each (prefill over many experts): experts side by side, one
    // thread each; there is no per-GEMM synchronisation to pay. An expert with many rows (a hot
    // expert), and every expert when there are too few to share out, gets all threads.
    constexpr std::size_t kSharedRows = 256;
    std::vector<std::size_t> side_by_side;
    const std::size_t pairs = plan_.token.size();
    const bool split = threads_ > 1 && plan_.used.size() >= 2 * static_cast<std::size_t>(threads_) &&
                       pairs * d_.H * (n0_ + d_.I) >= kMinParallelWork;
    for (std::size_t i = 0; i < plan_.used.size(); ++i) {
        const std::size_t e = plan_.used[i];
        if (split && plan_.counts[e] < kSharedRows) side_by_side.push_back(i);
        else run_expert(e, i == 1, threads_);
    }
    // Largest first. Even threads take from the large end, odd threads from the small end, so
    // the GEMMs of experts with many rows (compute-bound) run while the others stream the
    // weights of experts with a few rows (bound by memory), and the two meet in the middle.
    std::stable_sort(side_by_side.begin(), side_by_side.end(),
                     [&](std::size_t a, std::size_t b) { return plan_.counts[plan_.used[a]] > plan_.counts[plan_.used[b]]; });
    std::size_t front = 0, back = side_by_side.size();  // unclaimed: [front, back)
    std::mutex claim;
#pragma omp parallel num_threads(threads_) if (!side_by_side.empty())
    {
        const bool from_front = omp_get_thread_num() % 2 == 0;
        for (;;) {
            std::size_t i;
            {
                std::lock_guard<std::mutex> lock(claim);
                if (front == back) break;
                i = side_by_side[from_front ? front++ : --back];
            }
            run_expert(plan_.used[i], i == 1, 1);  // the result does not depend on which thread runs it
        }
    }
    Output o;
    o.output = scatter_reduce();
    if (want_stages) {
        o.stages.emplace(gemm2_ ? "gate_up" : "gate", stage(first_, n0_));
        if (!gemm2_) o.stages.emplace("up", stage(up_, d_.I));
        o.stages.emplace("act", stage(act_, d_.I));
        o.stages.emplace("down", stage(down_, d_.H));
    }
    return o;
}

template class Pipeline<float>;
template class Pipeline<double>;

}  // namespace moe::backends::cpu
