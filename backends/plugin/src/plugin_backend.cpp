// The adapter between the backend contract (moe/spec/backend.hpp) and a plugin's C table.
#include "moe/backends/plugin_backend.hpp"

#include <cstring>
#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <vector>

#include "moe/spec/error.hpp"
#include "moe/spec/compression.hpp"
#include "moe/spec/printable.hpp"
#include "moe/spec/stdout_to_stderr.hpp"
#include "plugin_library.hpp"
#include "problem_view.hpp"

namespace moe::backends {

namespace {

constexpr std::size_t kMessageSize = 2048;

// A message the plugin wrote, escaped: it reaches terminals and reports as the plugin's words.
std::string message(const char* buf) {
    const std::string s = printable(std::string_view(buf, strnlen(buf, kMessageSize)));
    return s.empty() ? "(no message)" : s;
}

// The fill of the output and stage buffers before run(): a quiet NaN whose payload no arithmetic
// makes (x86 and ARM produce the default NaN, f32 0x7fc00000), so that an element still holding
// these bits afterwards was never written, and is reported so (a NaN alone would pass wherever
// the golden output is NaN too: in the dense reading of a NaN weight, every element is).
std::uint64_t unwritten_bits(DType t) {
    switch (t) {
        case DType::f64: return 0x7ffa5a5a5a5a5a5aULL;
        case DType::f32: return 0x7fd5a5a5U;
        case DType::f16: return 0x7f5aU;
        case DType::bf16: return 0x7fdaU;
        default: throw std::logic_error("plugin: output type " + std::string(dtype_name(t)));
    }
}

Tensor unwritten_filled(DType t, Shape shape) {
    Tensor x(t, std::move(shape));
    const std::uint64_t bits = unwritten_bits(t);
    const std::size_t w = x.size() ? x.nbytes() / x.size() : 0;
    for (std::size_t i = 0; i < x.size(); ++i) std::memcpy(x.data() + i * w, &bits, w);  // little-endian
    return x;
}

// The index of the first element in [begin, x.size()) that holds the fill (`filled`) or does
// not, or nullopt.
std::optional<std::size_t> first_element(const Tensor& x, std::size_t begin, bool filled) {
    const std::uint64_t bits = unwritten_bits(x.dtype());
    const std::size_t w = x.size() ? x.nbytes() / x.size() : 0;
    for (std::size_t i = begin; i < x.size(); ++i) {
        std::uint64_t v = 0;
        std::memcpy(&v, x.data() + i * w, w);  // little-endian
        if ((v == bits) == filled) return i;
    }
    return std::nullopt;
}

// The index of the first element still holding the fill, or nullopt.
std::optional<std::size_t> first_unwritten(const Tensor& x) { return first_element(x, 0, true); }

std::string index_text(const Tensor& x, std::size_t flat) {
    std::string s;
    for (std::size_t d = x.rank(); d-- > 0;) {
        s = std::to_string(flat % x.shape()[d]) + (s.empty() ? "" : ", ") + s;
        flat /= x.shape()[d];
    }
    return "[" + s + "]";
}

moe_buffer_v1 buffer_of(const char* name, Tensor& t, const Shape& shape) {
    moe_buffer_v1 b{};
    b.name = name;
    b.dtype = plugin::abi_dtype(t.dtype());
    b.rank = static_cast<int32_t>(shape.size());
    for (std::size_t i = 0; i < shape.size(); ++i) b.shape[i] = static_cast<int64_t>(shape[i]);
    b.data = t.data();
    return b;
}

// Elements past the end of every output and stage buffer, holding the fill: a plugin that writes
// one of them wrote past its buffer (an off-by-one in its last tile), which would otherwise pass
// silently or corrupt the heap somewhere else.
constexpr std::size_t kGuardElements = 64;

// A buffer of `shape` with the guard after it, all filled; the plugin is shown `shape` only.
Tensor guarded_filled(DType t, const Shape& shape) {
    Shape flat{1};
    for (std::size_t d : shape) flat[0] *= d;
    flat[0] += kGuardElements;
    return unwritten_filled(t, flat);
}

// Checks the guard and gives the buffer its shape. Throws BackendFailed naming the first element
// written past the end.
void unguard(const char* what, Tensor& t, const Shape& shape) {
    const std::size_t n = element_count(shape);
    if (const auto i = first_element(t, n, false))
        throw BackendFailed("run() wrote past the end of " + std::string(what) + " " + shape_to_string(shape) +
                            ": element " + std::to_string(*i - n) + " after its last");
    t.shrink_to(shape);
}

// A C function's non-zero return, in C's terms: the code matters to its author, and nothing was
// thrown. The report's BACKEND column (moe-bench's message) names the plugin.
BackendFailed returned(const char* function, int code, const char* err) {
    return BackendFailed(std::string(function) + " returned " + std::to_string(code) + ": " + message(err));
}

struct PluginPrecision {
    Precision precision;
    DType output;
};

class PluginBackend : public Backend {
public:
    explicit PluginBackend(const std::string& path) : lib_(std::make_shared<plugin::PluginLibrary>(path)) {
        // Every floating data type's precision, checked once here: a bad declaration refuses the
        // plugin up front rather than surfacing in the middle of a run.
        for (DType data : {DType::f64, DType::f32, DType::f16, DType::bf16}) {
            moe_precision_v2 p{MOE_F32, MOE_F32, -1, -1};
            const std::string where = "backend library " + path + ": precision(" + std::string(dtype_name(data)) + ")";
            if (lib_->precision(plugin::abi_dtype(data), &p) != MOE_OK) throw InputError(where + " failed");
            // Each field named in the message: which of the four the plugin got wrong.
            const auto field = [&](const char* name, std::int32_t code) {
                DType d;
                try {
                    d = plugin::dtype_from_abi(code);
                } catch (const InputError& e) {
                    throw InputError(where + ": its " + name + " field: " + e.what());
                }
                if (!is_floating(d))
                    throw InputError(where + ": its " + name + " field declares " + std::string(dtype_name(d)) +
                                     ", not one of f64, f32, f16, bf16 (the types a backend computes and stores in)");
                return d;
            };
            PluginPrecision pp;
            pp.precision.compute = field("compute", p.compute);
            pp.precision.storage = field("storage", p.storage);
            if (p.dequant >= 0) pp.precision.dequant = field("dequant", p.dequant);
            pp.output = p.output < 0 ? data : field("output", p.output);
            precisions_[data] = pp;
        }
    }

    std::string name() const override { return lib_->name(); }
    std::string description() const override { return lib_->description() + " (plugin " + lib_->path() + ")"; }
    // Asked on first use, not at load: a load may happen in a parent process that then forks
    // workers, and finding a device usually opens a context that must not cross a fork.
    Availability availability() const override {
        if (!availability_) {
            char reason[kMessageSize] = {};
            availability_ = Availability{};
            if (lib_->availability(reason, sizeof reason) != MOE_OK)
                availability_ = Availability{false, message(reason)};
        }
        return *availability_;
    }
    Support supports(const Problem& p) const override {
        if (lib_->abi_version() < 2)
            for (const char* weight : {kWeight0, kWeight1, kWeight2})
                if (p.has(weight) && weight_compression(p, weight))
                    return {false, std::string(weight) + " is " + std::string(dtype_name(p.input(weight).dtype())) +
                                       ": compressed weights are not in backend ABI version 1 (export "
                                       "moe_conform_backend_v2)"};
        const plugin::ProblemView view(p);
        char reason[kMessageSize] = {};
        if (lib_->supports(view.get(), reason, sizeof reason)) return {};
        return {false, message(reason)};
    }
    Precision precision(DType data_type) const override { return precisions_.at(data_type).precision; }
    bool provides_stages() const override { return lib_->provides_stages(); }

    void prepare(const Problem& p) override {
        if (lib_->abi_version() < 2 && has_compressed_weights(p)) return;  // supports() says why
        prepared_for_ = nullptr;
        const plugin::ProblemView view(p);
        char err[kMessageSize] = {};
        if (const int code = lib_->prepare(view.get(), err, sizeof err); code != MOE_OK)
            throw returned("prepare()", code, err);
        prepared_for_ = &p;
        prepared_inputs_ = input_addresses(p);
    }

    Output run(const Problem& p, bool want_stages) override {
        // prepare() validated this problem, values included (a compressed weight's scales: a pass
        // over weights / group size elements, tens of ms per run on a model's layer); a run of
        // the same problem checks its structure only, so a timed decode step measures the plugin.
        const bool prepared = prepared_for_ == &p && prepared_inputs_ == input_addresses(p);
        const plugin::ProblemView view(p, prepared);
        const Dims& d = view.dims();
        const Tensor& hidden = p.input(kHiddenStates);
        const PluginPrecision& pp = precisions_.at(hidden.dtype());
        const DType out_type = pp.output;

        Output result;
        result.output = guarded_filled(out_type, hidden.shape());
        std::vector<std::pair<const char*, Tensor>> stages;
        std::vector<Shape> stage_shapes;
        if (want_stages && provides_stages()) {
            const bool gemm2 = p.attributes.expert_type == ExpertType::gemm2_bias_swiglu_clamp;
            const std::vector<std::pair<const char*, std::size_t>> layout =
                gemm2 ? std::vector<std::pair<const char*, std::size_t>>{{"gate_up", 2 * d.I}, {"act", d.I}, {"down", d.H}}
                      : std::vector<std::pair<const char*, std::size_t>>{{"gate", d.I}, {"up", d.I}, {"act", d.I}, {"down", d.H}};
            for (const auto& [stage, width] : layout) {
                stage_shapes.push_back({d.T, d.K, width});
                stages.emplace_back(stage, guarded_filled(pp.precision.storage, stage_shapes.back()));
            }
        }
        std::vector<moe_buffer_v1> stage_buffers;
        for (std::size_t s = 0; s < stages.size(); ++s)
            stage_buffers.push_back(buffer_of(stages[s].first, stages[s].second, stage_shapes[s]));
        moe_outputs_v1 outputs{};
        outputs.output = buffer_of("output", result.output, hidden.shape());
        outputs.want_stages = !stages.empty();
        outputs.num_stages = static_cast<int32_t>(stage_buffers.size());
        outputs.stages = stage_buffers.empty() ? nullptr : stage_buffers.data();

        char err[kMessageSize] = {};
        if (const int code = lib_->run(view.get(), &outputs, err, sizeof err); code != MOE_OK)
            throw returned("run()", code, err);
        unguard("the output", result.output, hidden.shape());
        for (std::size_t s = 0; s < stages.size(); ++s)
            unguard((std::string("stage '") + stages[s].first + "'").c_str(), stages[s].second, stage_shapes[s]);
        // An element left unwritten is the plugin's error, named, rather than a NaN that passes
        // where the golden value is NaN as well.
        const auto unwritten = [&](const char* what, const Tensor& t) {
            if (const auto i = first_unwritten(t))
                throw BackendFailed(std::string("run() left ") + what + " element " + index_text(t, *i) +
                                    " unwritten (it still holds the fill the runner put there)");
        };
        unwritten("output", result.output);
        if (outputs.stages_written)
            for (auto& [stage, tensor] : stages) {
                unwritten((std::string("stage '") + stage + "'").c_str(), tensor);
                result.stages.emplace(stage, std::move(tensor));
            }
        return result;
    }

private:
    // Where each input's data lies: the same problem object with the same buffers is the one
    // prepare() validated.
    static std::vector<std::pair<const unsigned char*, std::size_t>> input_addresses(const Problem& p) {
        std::vector<std::pair<const unsigned char*, std::size_t>> a;
        for (const auto& [name, t] : p.inputs) a.emplace_back(t.data(), t.nbytes());
        return a;
    }

    const Problem* prepared_for_ = nullptr;
    std::vector<std::pair<const unsigned char*, std::size_t>> prepared_inputs_;
    std::shared_ptr<plugin::PluginLibrary> lib_;
    mutable std::optional<Availability> availability_;
    std::map<DType, PluginPrecision> precisions_;
};

}  // namespace

std::unique_ptr<Backend> load_plugin_backend(const std::string& path) {
    // Loading runs the plugin's constructors, its entry function and precision(): what they print
    // goes to stderr, not into the report a tool writes to stdout (stdout_to_stderr.hpp).
    const StdoutToStderr plugin_prints_to_stderr;
    return std::make_unique<PluginBackend>(path);
}

}  // namespace moe::backends
