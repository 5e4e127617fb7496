#include "onednn_matmul.hpp"

#include <omp.h>
#include <sys/mman.h>

#include <oneapi/dnnl/dnnl.hpp>
#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>
#include <stdexcept>
#include <tuple>
#include <vector>

#include "bf16_matmul_domain.hpp"
#include "compressed_kernels.hpp"
#include "element_convert.hpp"
#include "small_m_kernels.hpp"

namespace moe::backends::cpu {

namespace {

using dims = dnnl::memory::dims;
using dim = dnnl::memory::dim;

dnnl::memory::data_type dnnl_type(DType t) {
    switch (t) {
        case DType::f32: return dnnl::memory::data_type::f32;
        case DType::bf16: return dnnl::memory::data_type::bf16;
        default: throw std::logic_error("onednn_matmul: unsupported element type");
    }
}

// The weights of one expert as the op stores them, seen as the library's [K, N] operand.
dnnl::memory::desc plain_weights_md(std::size_t N, std::size_t K, DType type, WeightLayout layout) {
    const dim n = static_cast<dim>(N), k = static_cast<dim>(K);
    return {dims{k, n}, dnnl_type(type), layout == WeightLayout::NK ? dims{1, k} : dims{n, 1}};
}

// A primitive for each distinct problem shape seen, so a run with many small experts does not
// pay for primitive creation every time (oneDNN's own cache still builds a descriptor per call).
struct ShapeKey {
    std::size_t M, N, K, lda, ldc;
    DType a_type, w_type;
    WeightLayout layout;
    // Which blocked layout packed weights are in (packed_layout_id), -1 for weights as stored. The
    // library picks that layout for the thread count PackedWeights was built with (an AMX host
    // blocks N by 48 for two threads and 64 for one), and a primitive reads only the layout it was
    // created for: two layouts of one shape must not share a primitive.
    int packed_layout;
    int threads;  // oneDNN plans its work split for the thread count at creation
    bool operator<(const ShapeKey& o) const {
        return std::tie(M, N, K, lda, ldc, a_type, w_type, layout, packed_layout, threads) <
               std::tie(o.M, o.N, o.K, o.lda, o.ldc, o.a_type, o.w_type, o.layout, o.packed_layout, o.threads);
    }
};

struct Context {
    dnnl::engine engine{dnnl::engine::kind::cpu, 0};
    struct Entry {
        dnnl::matmul primitive;
        dnnl::memory::desc scratchpad;
    };
    std::map<ShapeKey, Entry> primitives;
    std::vector<dnnl::memory::desc> packed_layouts;  // every distinct one seen; the index is its id
    std::mutex mutex;
};

Context& context() {
    static Context c;
    return c;
}

int packed_layout_id(const dnnl::memory::desc& desc) {
    Context& ctx = context();
    std::lock_guard<std::mutex> lock(ctx.mutex);
    const auto& seen = ctx.packed_layouts;
    const auto it = std::find(seen.begin(), seen.end(), desc);
    if (it != seen.end()) return static_cast<int>(it - seen.begin());
    ctx.packed_layouts.push_back(desc);
    return static_cast<int>(seen.size()) - 1;
}

// The library takes its thread count from OpenMP's; restored when the call returns.
class OmpThreads {
public:
    explicit OmpThreads(int threads) : previous_(omp_get_max_threads()) { omp_set_num_threads(threads); }
    ~OmpThreads() { omp_set_num_threads(previous_); }
    OmpThreads(const OmpThreads&) = delete;
    OmpThreads& operator=(const OmpThreads&) = delete;

private:
    int previous_;
};

void execute(const ShapeKey& key, const void* A, const dnnl::memory::desc& w_md, const void* W, float* C) {
    const dnnl::memory::desc a_md(dims{static_cast<dim>(key.M), static_cast<dim>(key.K)}, dnnl_type(key.a_type),
                                  dims{static_cast<dim>(key.lda), 1});
    const dnnl::memory::desc c_md(dims{static_cast<dim>(key.M), static_cast<dim>(key.N)}, dnnl::memory::data_type::f32,
                                  dims{static_cast<dim>(key.ldc), 1});
    Context& ctx = context();
    OmpThreads omp_threads(key.threads);
    Context::Entry entry;
    {
        std::lock_guard<std::mutex> lock(ctx.mutex);
        auto it = ctx.primitives.find(key);
        if (it == ctx.primitives.end()) {
            if (ctx.primitives.size() > 4096) ctx.primitives.clear();  // bounded: shapes vary with T
            // A user scratchpad, so that the same primitive can run on several threads at once.
            dnnl::primitive_attr attr;
            attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
            const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, w_md, c_md), attr, ctx.engine);
            it = ctx.primitives.emplace(key, Context::Entry{dnnl::matmul(pd), pd.scratchpad_desc()}).first;
        }
        entry = it->second;
    }
    dnnl::memory a(a_md, ctx.engine, const_cast<void*>(A));
    dnnl::memory w(w_md, ctx.engine, const_cast<void*>(W));
    dnnl::memory c(c_md, ctx.engine, C);
    // Experts may run side by side on several threads: each thread executes on its own stream.
    static thread_local dnnl::stream stream(ctx.engine);
    static thread_local std::vector<unsigned char> scratch;
    scratch.resize(std::max<std::size_t>(entry.scratchpad.get_size(), 1));
    dnnl::memory pad(entry.scratchpad, ctx.engine, scratch.data());
    entry.primitive.execute(stream, {{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_DST, c}, {DNNL_ARG_SCRATCHPAD, pad}});
    stream.wait();
}

}  // namespace

struct PackedWeights::Impl {
    DType dtype = DType::f32;
    std::size_t N = 0, K = 0, expert_bytes = 0, experts = 0;
    dnnl::memory::desc desc;
    int layout_id = -1;  // packed_layout_id(desc)
    std::unique_ptr<unsigned char, decltype(&std::free)> data{nullptr, &std::free};
    const unsigned char* expert(std::size_t e) const { return data.get() + e * expert_bytes; }
};

PackedWeights::PackedWeights(const Tensor& weights, WeightLayout layout, int threads, const Tensor* scale,
                             const Tensor* zero_point) {
    auto impl = std::make_shared<Impl>();
    const WeightView first = expert_view(weights, 0, layout, scale, zero_point);
    // bf16 weights stay bf16 where the library's bf16 matmul flushes nothing (bf16_matmul_domain.hpp)
    // and runs (onednn_bf16_reduction).
    const bool bf16 = first.dtype == DType::bf16 && !first.compressed() && onednn_bf16_reduction(first.K) &&
                      bf16_matmul_operands(weights.data(), weights.size());
    impl->dtype = bf16 ? DType::bf16 : DType::f32;
    impl->N = first.N;
    impl->K = first.K;
    impl->experts = weights.shape()[0];
    Context& ctx = context();
    OmpThreads omp_threads(threads);
    // The layout the library picks for these weights; it does not depend on M (checked for
    // 9..4096 rows on every named shape), so any M gives it.
    const dim k = static_cast<dim>(impl->K), n = static_cast<dim>(impl->N);
    const dnnl::memory::desc a_md(dims{64, k}, dnnl_type(impl->dtype), dnnl::memory::format_tag::ab);
    const dnnl::memory::desc any_md(dims{k, n}, dnnl_type(impl->dtype), dnnl::memory::format_tag::any);
    const dnnl::memory::desc c_md(dims{64, n}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::ab);
    impl->desc = dnnl::matmul::primitive_desc(dnnl::matmul::desc(a_md, any_md, c_md), ctx.engine).weights_desc();
    impl->layout_id = packed_layout_id(impl->desc);
    impl->expert_bytes = (impl->desc.get_size() + 63) / 64 * 64;
    // 2 MiB pages where the kernel allows them (transparent huge pages in "madvise" mode): the
    // GEMMs stream these weights, and with 4 KiB pages every page is a TLB miss.
    constexpr std::size_t kHugePage = std::size_t(2) << 20;
    const std::size_t total = (std::max<std::size_t>(impl->expert_bytes * impl->experts, 64) + kHugePage - 1) / kHugePage * kHugePage;
    impl->data.reset(static_cast<unsigned char*>(std::aligned_alloc(kHugePage, total)));
    if (!impl->data) throw std::bad_alloc();
    madvise(impl->data.get(), total, MADV_HUGEPAGE);  // advice only: without it, 4 KiB pages
    const dnnl::memory::desc src_md = plain_weights_md(impl->N, impl->K, impl->dtype, layout);
    dnnl::stream stream(ctx.engine);
    std::vector<float> wide;  // one f16 expert widened to f32
    for (std::size_t e = 0; e < impl->experts; ++e) {
        const WeightView view = expert_view(weights, e, layout, scale, zero_point);
        const void* src = view.data;
        if (view.compressed()) {
            wide.resize(view.N * view.K);
            dequantize_expert_f32(view, wide.data(), threads);
            src = wide.data();
        } else if (view.dtype == DType::f16) {
            wide.resize(view.N * view.K);
            f16_to_f32(view.data, wide.size(), wide.data(), threads);
            src = wide.data();
        } else if (view.dtype == DType::bf16 && impl->dtype == DType::f32) {
            wide.resize(view.N * view.K);  // exact: bf16 is f32's high half
            widen_to_f32(weights, e * wide.size(), wide.size(), wide.data());
            src = wide.data();
        }
        dnnl::memory from(src_md, ctx.engine, const_cast<void*>(src));
        dnnl::memory to(impl->desc, ctx.engine, impl->data.get() + e * impl->expert_bytes);
        dnnl::reorder(from, to).execute(stream, from, to);
        stream.wait();
    }
    impl_ = std::move(impl);
}

DType PackedWeights::dtype() const { return impl_->dtype; }
std::size_t PackedWeights::N() const { return impl_->N; }
std::size_t PackedWeights::K() const { return impl_->K; }
std::size_t PackedWeights::bytes() const { return impl_->expert_bytes * impl_->experts; }

void onednn_matmul(const void* A, DType a_type, std::size_t M, std::size_t lda, const WeightView& W, float* C,
                   std::size_t ldc, int threads) {
    const ShapeKey key{M, W.N, W.K, lda, ldc, a_type, W.dtype, W.layout, -1, threads};
    execute(key, A, plain_weights_md(W.N, W.K, W.dtype, W.layout), W.data, C);
}

void onednn_matmul(const void* A, DType a_type, std::size_t M, std::size_t lda, const PackedWeights& packed,
                   std::size_t expert, float* C, std::size_t ldc, int threads) {
    const PackedWeights::Impl& w = packed.impl();
    const ShapeKey key{M, w.N, w.K, lda, ldc, a_type, w.dtype, WeightLayout::NK, w.layout_id, threads};
    execute(key, A, w.desc, w.expert(expert), C);
}

}  // namespace moe::backends::cpu
