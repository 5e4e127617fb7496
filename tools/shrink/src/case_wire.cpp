#include "case_wire.hpp"

#include <cstring>
#include <stdexcept>

#include "moe/golden/case_bytes.hpp"

namespace moe::shrink::wire {

namespace {

constexpr const char* kWorker = "the shrink's worker";

golden::bytes::Reader reader(const std::string& bytes) {
    return {reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), kWorker};
}

}  // namespace

std::string encode_case(const golden::GoldenCase& c) {
    golden::bytes::Writer w;
    golden::bytes::write_case(w, c);
    std::string out(w.out.begin(), w.out.end());
    for (const Tensor* t : golden::bytes::case_tensors(c)) out.append(reinterpret_cast<const char*>(t->data()), t->nbytes());
    return out;
}

golden::GoldenCase decode_case(const std::string& bytes) {
    auto r = reader(bytes);
    golden::GoldenCase c = golden::bytes::read_case(r);
    for (Tensor* t : golden::bytes::case_tensors(c)) std::memcpy(t->data(), r.take(t->nbytes()), t->nbytes());
    if (r.at != bytes.size()) throw std::runtime_error("shrink worker: a message longer than its case");
    return c;
}

std::string encode_verdict(const Verdict& v) {
    golden::bytes::Writer w;
    w.u64(static_cast<std::uint64_t>(v.status));
    w.str(v.stage);
    w.str(v.reason);
    w.u64(static_cast<std::uint64_t>(v.signal));
    w.f64(v.hung_after);
    return std::string(w.out.begin(), w.out.end());
}

Verdict decode_verdict(const std::string& bytes) {
    auto r = reader(bytes);
    Verdict v;
    v.status = static_cast<conformance::Status>(r.u64());
    v.stage = r.str();
    v.reason = r.str();
    v.signal = static_cast<int>(static_cast<std::int64_t>(r.u64()));
    v.hung_after = r.f64();
    return v;
}

}  // namespace moe::shrink::wire
