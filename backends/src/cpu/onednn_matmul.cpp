#include "onednn_matmul.hpp"

#include <omp.h>

#include <oneapi/dnnl/dnnl.hpp>
#include <algorithm>
#include <map>
#include <vector>
#include <mutex>
#include <stdexcept>
#include <tuple>

namespace moe::backends::cpu {

namespace {

dnnl::memory::data_type dnnl_type(DType t) {
    switch (t) {
        case DType::f32: return dnnl::memory::data_type::f32;
        case DType::bf16: return dnnl::memory::data_type::bf16;
        default: throw std::logic_error("onednn_matmul: unsupported element type");
    }
}

// A primitive for each distinct problem shape seen, so a run with many small experts does not
// pay for primitive creation every time (oneDNN's own cache still builds a descriptor per call).
struct ShapeKey {
    std::size_t M, N, K, lda, ldc;
    DType a_type, w_type;
    WeightLayout layout;
    int threads;  // oneDNN plans its work split for the thread count at creation
    bool operator<(const ShapeKey& o) const {
        return std::tie(M, N, K, lda, ldc, a_type, w_type, layout, threads) <
               std::tie(o.M, o.N, o.K, o.lda, o.ldc, o.a_type, o.w_type, o.layout, o.threads);
    }
};

struct Context {
    dnnl::engine engine{dnnl::engine::kind::cpu, 0};
    struct Entry {
        dnnl::matmul primitive;
        dnnl::memory::desc scratchpad;
    };
    std::map<ShapeKey, Entry> primitives;
    std::mutex mutex;
};

Context& context() {
    static Context c;
    return c;
}

}  // namespace

void onednn_matmul(const void* A, DType a_type, std::size_t M, std::size_t lda, const WeightView& W, float* C,
                   std::size_t ldc, int threads) {
    using dims = dnnl::memory::dims;
    const auto m = static_cast<dnnl::memory::dim>(M), n = static_cast<dnnl::memory::dim>(W.N),
               k = static_cast<dnnl::memory::dim>(W.K);
    const dnnl::memory::desc a_md(dims{m, k}, dnnl_type(a_type), dims{static_cast<dnnl::memory::dim>(lda), 1});
    const dnnl::memory::desc w_md(dims{k, n}, dnnl_type(W.dtype), W.layout == WeightLayout::NK ? dims{1, k} : dims{n, 1});
    const dnnl::memory::desc c_md(dims{m, n}, dnnl::memory::data_type::f32, dims{static_cast<dnnl::memory::dim>(ldc), 1});
    Context& ctx = context();
    const int previous = omp_get_max_threads();
    omp_set_num_threads(threads);  // oneDNN's OpenMP runtime takes its thread count from here
    const ShapeKey key{M, W.N, W.K, lda, ldc, a_type, W.dtype, W.layout, threads};
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
    dnnl::memory w(w_md, ctx.engine, const_cast<unsigned char*>(W.data));
    dnnl::memory c(c_md, ctx.engine, C);
    // Experts may run side by side on several threads: each thread executes on its own stream.
    static thread_local dnnl::stream stream(ctx.engine);
    static thread_local std::vector<unsigned char> scratch;
    scratch.resize(std::max<std::size_t>(entry.scratchpad.get_size(), 1));
    dnnl::memory pad(entry.scratchpad, ctx.engine, scratch.data());
    entry.primitive.execute(stream, {{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_DST, c}, {DNNL_ARG_SCRATCHPAD, pad}});
    stream.wait();
    omp_set_num_threads(previous);
}

}  // namespace moe::backends::cpu
