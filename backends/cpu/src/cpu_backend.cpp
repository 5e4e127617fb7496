#include "moe/backends/cpu_backend.hpp"

#include <cstdlib>
#include <string>
#include <thread>

#include "compressed_kernels.hpp"
#include "cpu_features.hpp"
#include "expert_gemm.hpp"
#include "moe/backends/mutation_table.hpp"
#include "moe/spec/compression.hpp"
#include "moe/spec/error.hpp"
#include "pipeline.hpp"
#include "small_m_kernels.hpp"

namespace moe::backends {

namespace {

constexpr MutationEntry<CpuMutation> kCpuMutations[] = {
    {CpuMutation::tile_edge_dropped, "cpu_tile_edge_dropped",
     "cpu: the first GEMM leaves the last partial 16-column tile uncomputed"},
    {CpuMutation::wrong_expert_block, "cpu_wrong_expert_block",
     "cpu: the second used expert's first GEMM reads the next expert's weights"},
    {CpuMutation::scatter_race, "cpu_scatter_race",
     "cpu: lost updates in the scatter-reduce (even tokens keep only their last slot)"},
};

}  // namespace

std::vector<Mutant> cpu_mutants() {
    return mutants_from_table<CpuMutation>(kCpuMutations, "cpu", [](CpuMutation m) -> std::unique_ptr<Backend> {
        return std::make_unique<CpuBackend>(CpuOptions{0, m});
    });
}

struct CpuBackend::Prepared {
    std::map<std::string, cpu::PackedWeights> packed;
};

struct CpuBackend::Workspaces {
    cpu::Workspace<float> f32;
    cpu::Workspace<double> f64;
};

const char* decode_products_name(DecodeProducts p) {
    switch (p) {
        case DecodeProducts::int8: return "int8";
        case DecodeProducts::bf16: return "bf16";
        default: return "auto";
    }
}

bool cpu_runs_decode_products(DecodeProducts p) {
    if (p == DecodeProducts::int8) return cpu::cpu_has_int_dot();
    if (p == DecodeProducts::bf16) return cpu::cpu_has_avx512_bf16();
    return true;
}

DecodeProducts cpu_decode_products_default() {
    return cpu::cpu_prefers_int_dot() ? DecodeProducts::int8 : DecodeProducts::bf16;
}

namespace {

// The options' choice, else MOE_CPU_DECODE_PRODUCTS (unset or empty: auto), auto resolved for this
// processor (cpu_features.hpp).
DecodeProducts resolve_products(DecodeProducts asked) {
    if (asked == DecodeProducts::automatic) {
        const char* v = std::getenv("MOE_CPU_DECODE_PRODUCTS");
        const std::string s = v ? v : "";
        if (s == "int8") asked = DecodeProducts::int8;
        else if (s == "bf16") asked = DecodeProducts::bf16;
        else if (!s.empty() && s != "auto")
            throw InputError("MOE_CPU_DECODE_PRODUCTS: '" + s +
                             "' is not auto, int8 or bf16 (the cpu backend's products for 4-bit weights in decode)");
    }
    return asked != DecodeProducts::automatic ? asked : cpu_decode_products_default();
}

// For description(): the dot-product engine 4-bit weights' decode takes on this CPU (activations
// on int8's grid), if any: int8 where asked and run here, else bf16 where run here (the kernels'
// fallback for int8 asked on a CPU without its instructions).
std::string decode_engine_note(DecodeProducts products) {
    if (products == DecodeProducts::int8 && cpu_runs_decode_products(DecodeProducts::int8))
        return " (int8 products for 4-bit weights)";
    if (cpu_runs_decode_products(DecodeProducts::bf16)) return " (bf16 products for 4-bit weights)";
    return "";
}

}  // namespace

CpuBackend::CpuBackend(CpuOptions options)
    : options_(options), workspaces_(std::make_shared<Workspaces>()),
      threads_(options.threads > 0 ? options.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()))),
      products_(resolve_products(options.decode_products)) {}

std::string CpuBackend::name() const {
    return mutant_or_plain_name(kCpuMutations, options_.mutation, "cpu");
}

std::string CpuBackend::description() const {
    return std::string("routed CPU pipeline (mask_gen, gather, GEMMs, activation, scatter-reduce), oneDNN matmul on "
                       "weights packed by prepare(), ") +
           (cpu::small_m_uses_avx512() ? "AVX-512" : "portable") + " kernels for weights read in place" +
           decode_engine_note(products_) +
           ", " + std::to_string(threads_) + " threads";
}

Support CpuBackend::supports(const Problem&) const { return {}; }

Precision CpuBackend::precision(DType data_type) const {
    if (data_type == DType::f64) return {DType::f64, DType::f64};
    // The pipeline keeps bf16 activations where the library's bf16 matmul takes them (the same
    // predicate decides it there); f32 accumulation throughout.
    // Compressed weights are dequantised in f32 (the decode kernels scale each group's f32 partial
    // sum once, which the same term bounds: spec/tolerance.md, "Compressed weights").
    if (cpu::rounds_bf16_intermediates(data_type)) return {DType::f32, DType::bf16, DType::f32};
    return {DType::f32, DType::f32, DType::f32};
}

namespace {
std::vector<const unsigned char*> weight_sources(const Problem& p) {
    std::vector<const unsigned char*> v;
    for (const char* w : {kWeight0, kWeight1, kWeight2}) v.push_back(p.has(w) ? p.input(w).data() : nullptr);
    return v;
}
}  // namespace

void CpuBackend::prepare(const Problem& p) {
    prepared_for_ = nullptr;
    prepared_.reset();  // the previous problem's copy goes before the next is made
    if (p.input(kHiddenStates).dtype() == DType::f64) return;
    const WeightLayout layout = resolve(p.attributes).weight_layout;
    // No expert gets more rows than there are tokens: with at most kCompressedRows of them every
    // GEMM on a compressed weight is a decode, which reads the stored bytes, and an f32 copy
    // would never be read (GPT-OSS-20B's: 3.2 GB).
    const bool decode_only = validate_structure(p).T <= cpu::kCompressedRows;
    auto prepared = std::make_shared<Prepared>();
    for (const char* name : {kWeight0, kWeight1, kWeight2})
        if (p.has(name)) {
            // Compressed weights are dequantised to f32 here, once, for the GEMMs of many rows.
            const std::string scale = scale_input(name), zero = zero_point_input(name);
            if (decode_only && p.has(scale)) continue;
            prepared->packed.emplace(name, cpu::PackedWeights(p.input(name), layout, threads_,
                                                              p.has(scale) ? &p.input(scale) : nullptr,
                                                              p.has(zero) ? &p.input(zero) : nullptr));
        }
    prepared_ = std::move(prepared);
    prepared_for_ = &p;
    prepared_sources_ = weight_sources(p);
}

std::size_t CpuBackend::prepared_bytes() const {
    std::size_t bytes = 0;
    if (prepared_)
        for (const auto& [name, packed] : prepared_->packed) bytes += packed.bytes();
    return bytes;
}

Output CpuBackend::run(const Problem& p, bool want_stages) {
    if (p.input(kHiddenStates).dtype() == DType::f64)
        return cpu::Pipeline<double>(p, threads_, options_.mutation, workspaces_->f64).run(want_stages);
    const bool prepared = prepared_ && prepared_for_ == &p && prepared_sources_ == weight_sources(p);
    return cpu::Pipeline<float>(p, threads_, options_.mutation, workspaces_->f32, prepared ? &prepared_->packed : nullptr,
                                products_)
        .run(want_stages);
}

void cpu_f32_gemm(const float* A, std::size_t M, const Tensor& weights, std::size_t expert, float* C, int threads,
                  const Tensor* scale, const Tensor* zero_point, DecodeProducts products) {
    const std::size_t N = weights.shape()[1], K = weights.shape()[2];
    cpu::GemmCall call{&weights, expert, WeightLayout::NK};
    call.scale = scale;
    call.zero_point = zero_point;
    call.products = products;
    cpu::expert_gemm(A, M, K, call, C, N, threads);
}

}  // namespace moe::backends

namespace moe::backends {

struct CpuPackedGemm::Impl {
    cpu::PackedWeights packed;
    int threads;
};

CpuPackedGemm::CpuPackedGemm(const Tensor& weights, int threads)
    : impl_(std::make_shared<Impl>(Impl{cpu::PackedWeights(weights, WeightLayout::NK, threads), threads})) {}

void CpuPackedGemm::run(const float* A, std::size_t M, std::size_t expert, float* C) const {
    const cpu::PackedWeights& w = impl_->packed;
    cpu::onednn_matmul(A, DType::f32, M, w.K(), w, expert, C, w.N(), impl_->threads);
}

}  // namespace moe::backends
