#include "moe/golden/case_bytes.hpp"

#include <cstring>
#include <stdexcept>

namespace moe::golden::bytes {

void Writer::u64(std::uint64_t v) {
    for (int i = 0; i < 8; ++i) out.push_back(static_cast<unsigned char>(v >> (8 * i)));
}

void Writer::f64(double v) {
    std::uint64_t bits;
    std::memcpy(&bits, &v, 8);
    u64(bits);
}

void Writer::str(const std::string& s) {
    u64(s.size());
    out.insert(out.end(), s.begin(), s.end());
}

const unsigned char* Reader::take(std::size_t n) {
    if (size - at < n) throw std::runtime_error(std::string("truncated message from ") + from);
    const unsigned char* p = data + at;
    at += n;
    return p;
}

std::uint64_t Reader::u64() {
    const unsigned char* p = take(8);
    std::uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= std::uint64_t{p[i]} << (8 * i);
    return v;
}

double Reader::f64() {
    const std::uint64_t bits = u64();
    double v;
    std::memcpy(&v, &bits, 8);
    return v;
}

std::string Reader::str() {
    const std::uint64_t n = u64();
    const unsigned char* p = take(n);
    return std::string(reinterpret_cast<const char*>(p), n);
}

namespace {

void write_tensors(Writer& w, const std::map<std::string, Tensor>& m) {
    w.u64(m.size());
    for (const auto& [name, t] : m) {
        w.str(name);
        w.u64(static_cast<std::uint64_t>(t.dtype()));
        w.u64(t.rank());
        for (std::size_t d : t.shape()) w.u64(d);
    }
}

std::map<std::string, Tensor> read_tensors(Reader& r) {
    std::map<std::string, Tensor> m;
    for (std::uint64_t n = r.u64(); n > 0; --n) {
        std::string name = r.str();
        const auto dt = static_cast<DType>(r.u64());
        Shape shape(r.u64());
        for (auto& d : shape) d = r.u64();
        // Not zero-filled: the caller fills it from the elements that follow, and a case whose
        // bytes do not all arrive is never returned.
        m.emplace(std::move(name), Tensor::uninitialised(dt, shape));
    }
    return m;
}

}  // namespace

void write_case(Writer& w, const GoldenCase& c) {
    const OpAttributes& a = c.problem.attributes;
    w.str(c.problem.name);
    w.u64(static_cast<std::uint64_t>(a.expert_type));
    w.u64(static_cast<std::uint64_t>(a.convention));
    w.f64(a.expert_alpha);
    w.f64(a.expert_beta);
    w.u64(a.gate_idx.has_value());
    w.u64(static_cast<std::uint64_t>(a.gate_idx.value_or(0)));
    w.u64(c.seed.has_value());
    w.u64(c.seed.value_or(0));
    w.str(c.generator);
    w.str(c.tier);
    w.str(c.description);
    w.u64(c.exact);
    write_tensors(w, c.problem.inputs);
    write_tensors(w, c.outputs);
    write_tensors(w, c.stages);
}

GoldenCase read_case(Reader& r) {
    GoldenCase c;
    OpAttributes& a = c.problem.attributes;
    c.problem.name = r.str();
    a.expert_type = static_cast<ExpertType>(r.u64());
    a.convention = static_cast<Convention>(r.u64());
    a.expert_alpha = r.f64();
    a.expert_beta = r.f64();
    const bool has_gate = r.u64() != 0;
    const auto gate = static_cast<std::int64_t>(r.u64());
    if (has_gate) a.gate_idx = gate;
    const bool has_seed = r.u64() != 0;
    const std::uint64_t seed = r.u64();
    if (has_seed) c.seed = seed;
    c.generator = r.str();
    c.tier = r.str();
    c.description = r.str();
    c.exact = r.u64() != 0;
    c.problem.inputs = read_tensors(r);
    c.outputs = read_tensors(r);
    c.stages = read_tensors(r);
    return c;
}

std::vector<const Tensor*> case_tensors(const GoldenCase& c) {
    std::vector<const Tensor*> all;
    for (const auto* group : {&c.problem.inputs, &c.outputs, &c.stages})
        for (const auto& [name, t] : *group) all.push_back(&t);
    return all;
}

std::vector<Tensor*> case_tensors(GoldenCase& c) {
    std::vector<Tensor*> all;
    for (auto* group : {&c.problem.inputs, &c.outputs, &c.stages})
        for (auto& [name, t] : *group) all.push_back(&t);
    return all;
}

}  // namespace moe::golden::bytes
