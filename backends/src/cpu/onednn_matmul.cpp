#include "onednn_matmul.hpp"

#include <omp.h>

#include <oneapi/dnnl/dnnl.hpp>
#include <stdexcept>

namespace moe::backends::cpu {

namespace {

dnnl::memory::data_type dnnl_type(DType t) {
    switch (t) {
        case DType::f32: return dnnl::memory::data_type::f32;
        case DType::bf16: return dnnl::memory::data_type::bf16;
        default: throw std::logic_error("onednn_matmul: unsupported element type");
    }
}

struct Context {
    dnnl::engine engine{dnnl::engine::kind::cpu, 0};
    dnnl::stream stream{engine};
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
    // oneDNN keeps recently created primitives in its own cache, so repeated shapes are cheap.
    const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, w_md, c_md), ctx.engine);
    const dnnl::matmul prim(pd);
    dnnl::memory a(a_md, ctx.engine, const_cast<void*>(A));
    dnnl::memory w(w_md, ctx.engine, const_cast<unsigned char*>(W.data));
    dnnl::memory c(c_md, ctx.engine, C);
    const int previous = omp_get_max_threads();
    omp_set_num_threads(threads);  // oneDNN's OpenMP runtime takes its thread count from here
    prim.execute(ctx.stream, {{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_DST, c}});
    ctx.stream.wait();
    omp_set_num_threads(previous);
}

}  // namespace moe::backends::cpu
