#include "case_wire.hpp"

#include <cstdint>
#include <cstring>
#include <stdexcept>

namespace moe::shrink::wire {

namespace {

// Appends fields to `out` in the order the Reader takes them back.
struct Writer {
    std::string out;

    void u64(std::uint64_t v) { out.append(reinterpret_cast<const char*>(&v), sizeof v); }
    void f64(double v) { out.append(reinterpret_cast<const char*>(&v), sizeof v); }
    void text(const std::string& s) {
        u64(s.size());
        out += s;
    }
    void tensor(const Tensor& t) {
        text(std::string(dtype_name(t.dtype())));
        u64(t.rank());
        for (std::size_t d : t.shape()) u64(d);
        u64(t.nbytes());
        out.append(reinterpret_cast<const char*>(t.data()), t.nbytes());
    }
    void tensors(const std::map<std::string, Tensor>& m) {
        u64(m.size());
        for (const auto& [name, t] : m) {
            text(name);
            tensor(t);
        }
    }
};

// Reads what a Writer wrote (same process image: same byte order and sizes); anything short or
// out of place is std::runtime_error.
struct Reader {
    const std::string& in;
    std::size_t at = 0;

    const char* take(std::size_t n) {
        if (in.size() - at < n) throw std::runtime_error("shrink worker: a truncated message");
        const char* p = in.data() + at;
        at += n;
        return p;
    }
    std::uint64_t u64() {
        std::uint64_t v;
        std::memcpy(&v, take(sizeof v), sizeof v);
        return v;
    }
    double f64() {
        double v;
        std::memcpy(&v, take(sizeof v), sizeof v);
        return v;
    }
    std::string text() {
        const std::uint64_t n = u64();
        return std::string(take(n), n);
    }
    Tensor tensor() {
        const auto dtype = parse_dtype(text());
        if (!dtype) throw std::runtime_error("shrink worker: an unknown element type");
        Shape shape(u64());
        for (auto& d : shape) d = u64();
        Tensor t = Tensor::uninitialised(*dtype, shape);
        if (u64() != t.nbytes()) throw std::runtime_error("shrink worker: a tensor's size does not match its shape");
        std::memcpy(t.data(), take(t.nbytes()), t.nbytes());
        return t;
    }
    std::map<std::string, Tensor> tensors() {
        std::map<std::string, Tensor> m;
        for (std::uint64_t n = u64(); n > 0; --n) {
            std::string name = text();
            m.emplace(std::move(name), tensor());
        }
        return m;
    }
};

}  // namespace

std::string encode_case(const golden::GoldenCase& c) {
    Writer w;
    const Problem& p = c.problem;
    w.text(p.name);
    w.text(std::string(expert_type_name(p.attributes.expert_type)));
    w.text(std::string(convention_name(p.attributes.convention)));
    w.f64(p.attributes.expert_alpha);
    w.f64(p.attributes.expert_beta);
    w.u64(p.attributes.gate_idx.has_value());
    w.u64(static_cast<std::uint64_t>(p.attributes.gate_idx.value_or(0)));
    w.tensors(p.inputs);
    w.u64(c.seed.has_value());
    w.u64(c.seed.value_or(0));
    w.text(c.generator);
    w.text(c.tier);
    w.text(c.description);
    w.u64(c.exact);
    w.tensors(c.outputs);
    w.tensors(c.stages);
    return std::move(w.out);
}

golden::GoldenCase decode_case(const std::string& bytes) {
    Reader r{bytes};
    golden::GoldenCase c;
    Problem& p = c.problem;
    p.name = r.text();
    p.attributes.expert_type = parse_expert_type(r.text());
    p.attributes.convention = parse_convention(r.text());
    p.attributes.expert_alpha = r.f64();
    p.attributes.expert_beta = r.f64();
    const bool has_gate_idx = r.u64() != 0;
    const auto gate_idx = static_cast<std::int64_t>(r.u64());
    if (has_gate_idx) p.attributes.gate_idx = gate_idx;
    p.inputs = r.tensors();
    const bool has_seed = r.u64() != 0;
    const std::uint64_t seed = r.u64();
    if (has_seed) c.seed = seed;
    c.generator = r.text();
    c.tier = r.text();
    c.description = r.text();
    c.exact = r.u64() != 0;
    c.outputs = r.tensors();
    c.stages = r.tensors();
    if (r.at != bytes.size()) throw std::runtime_error("shrink worker: a message longer than its case");
    return c;
}

std::string encode_verdict(const Verdict& v) {
    Writer w;
    w.u64(static_cast<std::uint64_t>(v.status));
    w.text(v.stage);
    w.text(v.reason);
    w.u64(static_cast<std::uint64_t>(v.signal));
    w.f64(v.hung_after);
    return std::move(w.out);
}

Verdict decode_verdict(const std::string& bytes) {
    Reader r{bytes};
    Verdict v;
    v.status = static_cast<conformance::Status>(r.u64());
    v.stage = r.text();
    v.reason = r.text();
    v.signal = static_cast<int>(r.u64());
    v.hung_after = r.f64();
    return v;
}

}  // namespace moe::shrink::wire
