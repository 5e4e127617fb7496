#pragma once
// Names and messages in reports come from golden files and backends: any bytes at all. The XML and
// HTML reports declare UTF-8, so they pass text through this first (the JSON writer has its own
// replacing mode).
#include <string>

namespace moe::conformance {

// `s` with every byte that does not start a well-formed UTF-8 sequence (overlong forms, surrogates
// and code points past U+10FFFF included), and the non-characters U+FFFE and U+FFFF, replaced by
// U+FFFD.
std::string valid_utf8(const std::string& s);

}  // namespace moe::conformance
