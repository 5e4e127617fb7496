#pragma once
// A GoldenCase as bytes, between a worker process and the one that waits on it: a golden file
// read in a child (isolated_read.hpp) and the candidates of an isolated shrink sent to its worker
// (tools/shrink). Fixed-width little-endian numbers and sized strings; a tensor as its type and
// shape, its element bytes apart (case_tensors), so that a caller streams them straight from or
// into the tensors, never through a second buffer of hundreds of MB.
//
// Every field of GoldenCase, Problem and OpAttributes crosses here, once: a field added there is
// added to write_case and read_case, or a worker judges a case that lacks it.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "moe/golden/golden_file.hpp"

namespace moe::golden::bytes {

struct Writer {
    std::vector<unsigned char> out;
    void u64(std::uint64_t v);
    void f64(double v);
    void str(const std::string& s);
};

// Reads what a Writer wrote from data[at, size); anything short is std::runtime_error naming
// `from` ("truncated message from FROM").
struct Reader {
    const unsigned char* data;
    std::size_t size;
    const char* from;
    std::size_t at = 0;
    const unsigned char* take(std::size_t n);
    std::uint64_t u64();
    double f64();
    std::string str();
};

// The case's fields, and its tensors' types and shapes without their elements.
void write_case(Writer& w, const GoldenCase& c);
// What write_case wrote, its tensors allocated and not filled (their elements follow apart).
GoldenCase read_case(Reader& r);

// The tensors whose elements travel apart, in the order write_case lists them.
std::vector<const Tensor*> case_tensors(const GoldenCase& c);
std::vector<Tensor*> case_tensors(GoldenCase& c);

}  // namespace moe::golden::bytes
