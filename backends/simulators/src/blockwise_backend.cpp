// blockwise: the BWMM block mapping of the Neuron guide and a block-by-block f32 simulation of it.
#include "moe/backends/blockwise_backend.hpp"

#include <iomanip>
#include <sstream>

#include "expert_math.hpp"
#include "moe/backends/mutation_table.hpp"
#include "moe/spec/error.hpp"

namespace moe::backends {

const char* blockwise_split_name(BlockwiseSplit s) {
    switch (s) {
        case BlockwiseSplit::none: return "none";
        case BlockwiseSplit::h_sharded: return "h_sharded";
        case BlockwiseSplit::i_sharded: return "i_sharded";
        case BlockwiseSplit::block_parallel: return "block_parallel";
    }
    return "?";
}

namespace {

constexpr MutationEntry<BlockwiseMutation> kBlockwiseMutations[] = {
    {BlockwiseMutation::padding_row_counted, "blockwise_padding_counted",
     "a -1 padding row computed as token 0 (its input and its slot-0 routing weight) and added to token 0"},
    {BlockwiseMutation::block_wrong_expert, "blockwise_wrong_expert",
     "the second used expert's first block computed with the next expert's weights"},
};

}  // namespace

std::vector<Mutant> blockwise_mutants() {
    return mutants_from_table<BlockwiseMutation>(kBlockwiseMutations, "blockwise", [](BlockwiseMutation m) -> std::unique_ptr<Backend> {
        BlockwiseOptions o;
        o.mutation = m;
        return std::make_unique<BlockwiseBackend>(o);
    });
}

BlockPlan plan_blocks(const std::vector<std::size_t>& counts, std::size_t block_size, std::size_t experts) {
    if (block_size == 0) throw InputError("blockwise: block_size must be at least 1");
    if (counts.size() != experts)
        throw InputError("blockwise: " + std::to_string(counts.size()) + " expert counts for " +
                         std::to_string(experts) + " experts");
    BlockPlan p;
    p.block_size = block_size;
    p.experts = experts;
    for (std::size_t c : counts) p.pairs += c;
    p.num_blocks = (p.pairs + block_size - 1) / block_size + (experts ? experts - 1 : 0);
    p.block_expert.assign(p.num_blocks, 0);
    p.block_real.assign(p.num_blocks, 0);
    p.rows.assign(p.num_blocks * block_size, -1);
    std::size_t b = 0, pair = 0;
    for (std::size_t e = 0; e < experts; ++e) {
        for (std::size_t i = 0; i < counts[e]; i += block_size, ++b) {
            if (b >= p.num_blocks) throw InputError("blockwise: block plan overflow (cannot happen for dropless N)");
            const std::size_t real = std::min(block_size, counts[e] - i);
            p.block_expert[b] = e;
            p.block_real[b] = real;
            for (std::size_t r = 0; r < real; ++r) p.rows[b * block_size + r] = static_cast<std::int64_t>(pair + i + r);
        }
        pair += counts[e];
    }
    p.used_blocks = b;
    for (; b < p.num_blocks; ++b) p.block_expert[b] = p.used_blocks ? p.block_expert[p.used_blocks - 1] : 0;
    return p;
}

std::vector<std::int64_t> block_tokens(const BlockPlan& plan, const RoutingPlan& routing) {
    std::vector<std::int64_t> out(plan.rows.size(), -1);
    for (std::size_t i = 0; i < plan.rows.size(); ++i)
        if (plan.rows[i] >= 0) out[i] = routing.token[static_cast<std::size_t>(plan.rows[i])];
    return out;
}

namespace {

std::size_t cores_of(BlockwiseSplit s) { return s == BlockwiseSplit::none ? 1 : 2; }
std::size_t core_of_block(BlockwiseSplit s, std::size_t b) { return s == BlockwiseSplit::block_parallel ? b % 2 : 0; }
bool computed(const BlockPlan& p, const BlockwiseOptions& o, std::size_t b) {
    return !(o.block_skipping && p.block_real[b] == 0);
}

// Weight-set loads: each core walks its computed blocks in order and loads a block's expert
// unless weight skipping is on and the core's previous block had the same expert.
std::size_t count_weight_loads(const BlockPlan& p, const BlockwiseOptions& o) {
    std::vector<std::int64_t> loaded(2, -1);
    std::size_t loads = 0;
    for (std::size_t b = 0; b < p.num_blocks; ++b) {
        if (!computed(p, o, b)) continue;
        const std::size_t c = core_of_block(o.split, b);
        const auto e = static_cast<std::int64_t>(p.block_expert[b]);
        if (!(o.weight_skipping && loaded[c] == e)) ++loads;
        loaded[c] = e;
    }
    return loads;
}

std::size_t count_token_loads(const BlockPlan& p, const BlockwiseOptions& o) {
    std::size_t loads = 0;
    for (std::size_t b = 0; b < p.num_blocks; ++b)
        if (computed(p, o, b)) loads += o.token_skipping ? p.block_real[b] : p.block_size;
    return loads;
}

double ratio(std::size_t num, std::size_t den) { return den ? static_cast<double>(num) / static_cast<double>(den) : 0.0; }

}  // namespace

BlockwiseStats blockwise_stats(const BlockPlan& p, const BlockwiseOptions& o) {
    BlockwiseStats s;
    s.block_size = p.block_size;
    s.experts = p.experts;
    s.cores = cores_of(o.split);
    s.real_rows = p.pairs;
    s.blocks_provisioned = p.num_blocks;
    s.blocks_used = p.used_blocks;
    for (std::size_t b = 0; b < p.num_blocks; ++b) (computed(p, o, b) ? s.blocks_computed : s.blocks_skipped) += 1;
    s.provisioned_rows = p.num_blocks * p.block_size;
    s.required_rows = p.used_blocks * p.block_size;
    s.padding_rows = s.provisioned_rows - s.real_rows;
    s.padding_overhead = ratio(s.provisioned_rows - s.required_rows, s.required_rows);
    s.algorithmic_padding_overhead = ratio(s.required_rows - s.real_rows, s.real_rows);
    s.total_padding_overhead = ratio(s.provisioned_rows - s.real_rows, s.real_rows);

    BlockwiseOptions off = o;
    off.token_skipping = false;
    s.token_loads = count_token_loads(p, o);
    s.token_loads_without_token_skipping = count_token_loads(p, off);
    s.token_loads_saved = s.token_loads_without_token_skipping - s.token_loads;
    off = o;
    off.weight_skipping = false;
    s.weight_loads = count_weight_loads(p, o);
    s.weight_loads_without_weight_skipping = count_weight_loads(p, off);
    s.weight_loads_saved = s.weight_loads_without_weight_skipping - s.weight_loads;
    s.blocks_without_block_skipping = p.num_blocks;
    s.blocks_saved = s.blocks_skipped;
    s.arithmetic_intensity = p.experts ? static_cast<double>(p.block_size * p.num_blocks) / static_cast<double>(p.experts) : 0.0;
    s.arithmetic_intensity_used =
        p.experts ? static_cast<double>(p.block_size * p.used_blocks) / static_cast<double>(p.experts) : 0.0;
    return s;
}

std::string BlockwiseStats::to_text() const {
    std::ostringstream o;
    o << std::fixed << std::setprecision(2);
    o << "blockwise: block_size " << block_size << ", " << experts << " experts, " << cores << " core(s), "
      << real_rows << " real rows (T*K)\n";
    o << "  blocks: " << blocks_provisioned << " provisioned, " << blocks_used << " used, " << blocks_skipped
      << " skipped, " << blocks_computed << " computed\n";
    o << "  rows: " << provisioned_rows << " provisioned, " << required_rows << " in used blocks, " << padding_rows
      << " padding\n";
    o << "  padding overhead (provisioned vs required): " << 100 * padding_overhead << " %\n";
    o << "  algorithmic padding overhead (used blocks vs real rows): " << 100 * algorithmic_padding_overhead << " %\n";
    o << "  total padding overhead (provisioned vs real rows): " << 100 * total_padding_overhead << " %\n";
    o << "  token loads: " << token_loads << " (" << token_loads_without_token_skipping
      << " without token skipping, " << token_loads_saved << " saved)\n";
    o << "  weight loads: " << weight_loads << " (" << weight_loads_without_weight_skipping
      << " without weight skipping, " << weight_loads_saved << " saved)\n";
    o << "  blocks computed: " << blocks_computed << " (" << blocks_without_block_skipping
      << " without block skipping, " << blocks_saved << " saved)\n";
    o << "  arithmetic intensity factor block_size*N/E: " << arithmetic_intensity << " (used blocks: "
      << arithmetic_intensity_used << ")\n";
    return o.str();
}

BlockwiseBackend::BlockwiseBackend(BlockwiseOptions options) : options_(options) {}

std::string BlockwiseBackend::name() const {
    return mutant_or_plain_name(kBlockwiseMutations, options_.mutation, "blockwise");
}

std::string BlockwiseBackend::description() const {
    if (const auto* m = find_mutation(kBlockwiseMutations, options_.mutation)) return m->description;
    std::ostringstream o;
    o << "BWMM simulator (AWS Neuron NxD Inference's MoE guide): blocks of " << options_.block_size << " rows, one expert per block, f32; "
      << "token skipping " << (options_.token_skipping ? "on" : "off") << ", weight skipping "
      << (options_.weight_skipping ? "on" : "off") << ", block skipping " << (options_.block_skipping ? "on" : "off")
      << ", split " << blockwise_split_name(options_.split);
    return o.str();
}

Support BlockwiseBackend::supports(const Problem&) const {
    if (options_.block_size == 0) return {false, "block_size 0"};
    return {};
}

Precision BlockwiseBackend::precision(DType) const { return {}; }  // compute f32, storage f32

Output BlockwiseBackend::run(const Problem& p, bool) {
    const strategies::ExpertMath m = strategies::ExpertMath::load(p);
    const Dims& d = m.d;
    const Tensor& idx = p.input(kTopkIndices);
    const RoutingPlan routing = make_routing_plan(idx, d.E);
    const BlockPlan plan = plan_blocks(routing.counts, options_.block_size, d.E);
    stats_ = blockwise_stats(plan, options_);
    const std::size_t bs = plan.block_size;
    const BlockwiseSplit split = options_.split;
    const BlockwiseMutation mut = options_.mutation;

    // The block the block_wrong_expert mutant breaks: the second used expert's first block.
    std::int64_t wrong_block = -1;
    if (mut == BlockwiseMutation::block_wrong_expert && routing.used.size() >= 2) {
        for (std::size_t b = 0; b < plan.used_blocks; ++b)
            if (plan.block_expert[b] == routing.used[1]) {
                wrong_block = static_cast<std::int64_t>(b);
                break;
            }
    }

    // One output buffer per core for block_parallel (added at the end), one otherwise.
    std::vector<std::vector<float>> core_out(split == BlockwiseSplit::block_parallel ? 2 : 1,
                                             std::vector<float>(d.T * d.H, 0.0f));
    std::vector<std::int64_t> loaded(2, -1);
    std::size_t token_loads = 0, weight_loads = 0, blocks_computed = 0, blocks_skipped = 0;
    std::vector<float> xb(bs * d.H), yb(bs * d.H);
    std::vector<std::int64_t> row_token(bs);  // token whose output the row feeds, -1: discarded
    std::vector<float> row_weight(bs);
    std::vector<char> row_live(bs);           // loaded and computed

    const std::size_t I0 = d.I / 2, H0 = d.H / 2;
    std::vector<float> gate(d.I), lin(d.I), act(d.I), g1(d.I), l1(d.I), part(d.H);

    for (std::size_t b = 0; b < plan.num_blocks; ++b) {
        if (!computed(plan, options_, b)) {
            ++blocks_skipped;
            continue;
        }
        ++blocks_computed;
        const std::size_t core = core_of_block(split, b);
        std::size_t e = plan.block_expert[b];
        if (static_cast<std::int64_t>(b) == wrong_block) e = (e + 1) % d.E;
        if (!(options_.weight_skipping && loaded[core] == static_cast<std::int64_t>(e))) ++weight_loads;
        loaded[core] = static_cast<std::int64_t>(e);

        // Gather: real rows load their token; padding rows are skipped (token skipping) or loaded
        // as zero rows whose results are discarded.
        for (std::size_t r = 0; r < bs; ++r) {
            const std::int64_t pair = plan.rows[b * bs + r];
            float* dst = xb.data() + r * d.H;
            row_token[r] = -1;
            row_live[r] = 0;
            if (pair >= 0) {
                const std::size_t t = routing.token[static_cast<std::size_t>(pair)];
                const std::size_t k = routing.slot[static_cast<std::size_t>(pair)];
                std::copy(m.x.begin() + static_cast<std::ptrdiff_t>(t * d.H),
                          m.x.begin() + static_cast<std::ptrdiff_t>((t + 1) * d.H), dst);
                row_token[r] = static_cast<std::int64_t>(t);
                row_weight[r] = m.routing_weight(t, k, plan.block_expert[b]);
                row_live[r] = 1;
                ++token_loads;
            } else if (mut == BlockwiseMutation::padding_row_counted && d.T > 0) {
                std::copy(m.x.begin(), m.x.begin() + static_cast<std::ptrdiff_t>(d.H), dst);
                row_token[r] = 0;
                row_weight[r] = m.routing_weight(0, 0, static_cast<std::size_t>(idx.get_index(0)));
                row_live[r] = 1;
                ++token_loads;
            } else if (!options_.token_skipping) {
                std::fill(dst, dst + d.H, 0.0f);
                row_live[r] = 1;
                ++token_loads;
            }
        }

        // The expert MLP on every loaded row, split across the cores as configured.
        for (std::size_t r = 0; r < bs; ++r) {
            if (!row_live[r]) continue;
            const float* x = xb.data() + r * d.H;
            float* y = yb.data() + r * d.H;
            switch (split) {
                case BlockwiseSplit::none:
                case BlockwiseSplit::block_parallel: {
                    m.first_partial(e, x, 0, d.H, 0, d.I, gate.data(), lin.data());
                    m.activate(e, 0, d.I, gate.data(), lin.data(), act.data());
                    m.down_partial(e, act.data(), 0, d.I, 0, d.H, y);
                    break;
                }
                case BlockwiseSplit::i_sharded: {
                    // Core 0: I range [0, I0), core 1: [I0, I). Each computes its intermediate
                    // features completely, then its down-GEMM partial sums over all of H; the
                    // cross-core reduction after the second matmul adds the two partials.
                    m.first_partial(e, x, 0, d.H, 0, I0, gate.data(), lin.data());
                    m.activate(e, 0, I0, gate.data(), lin.data(), act.data());
                    m.down_partial(e, act.data(), 0, I0, 0, d.H, y);
                    m.first_partial(e, x, 0, d.H, I0, d.I, gate.data(), lin.data());
                    m.activate(e, I0, d.I, gate.data(), lin.data(), act.data());
                    m.down_partial(e, act.data(), I0, d.I, 0, d.H, part.data());
                    for (std::size_t h = 0; h < d.H; ++h) y[h] += part[h];
                    break;
                }
                case BlockwiseSplit::h_sharded: {
                    // Core 0 holds H range [0, H0), core 1 [H0, H). First GEMM: each core sums over
                    // its hidden inputs; the cross-core reduction after the first matmul adds the
                    // partial sums. Down GEMM: each core computes its hidden outputs.
                    m.first_partial(e, x, 0, H0, 0, d.I, gate.data(), lin.data());
                    m.first_partial(e, x, H0, d.H, 0, d.I, g1.data(), l1.data());
                    for (std::size_t j = 0; j < d.I; ++j) {
                        gate[j] += g1[j];
                        lin[j] += l1[j];
                    }
                    m.activate(e, 0, d.I, gate.data(), lin.data(), act.data());
                    m.down_partial(e, act.data(), 0, d.I, 0, H0, y);
                    m.down_partial(e, act.data(), 0, d.I, H0, d.H, y + H0);
                    break;
                }
            }
            for (std::size_t h = 0; h < d.H; ++h) y[h] += m.down_bias(e, h);
        }

        // Scatter: each real row, times its routing weight, added into its token's output row.
        std::vector<float>& out = core_out[split == BlockwiseSplit::block_parallel ? core : 0];
        for (std::size_t r = 0; r < bs; ++r) {
            if (row_token[r] < 0) continue;
            float* o = out.data() + static_cast<std::size_t>(row_token[r]) * d.H;
            const float* y = yb.data() + r * d.H;
            for (std::size_t h = 0; h < d.H; ++h) o[h] += row_weight[r] * y[h];
        }
    }
    std::vector<float>& out = core_out[0];
    if (core_out.size() == 2)  // block_parallel: the cross-core reduction of the two outputs
        for (std::size_t i = 0; i < out.size(); ++i) out[i] += core_out[1][i];

    stats_.token_loads = token_loads;
    stats_.weight_loads = weight_loads;
    stats_.blocks_computed = blocks_computed;
    stats_.blocks_skipped = blocks_skipped;

    const Tensor& hidden = p.input(kHiddenStates);
    Output result;
    result.output = Tensor::from_f64(hidden.dtype(), hidden.shape(), std::vector<double>(out.begin(), out.end()));
    return result;
}

}  // namespace moe::backends
