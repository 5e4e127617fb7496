// from_printable undoes printable (spec/printable.hpp): reports print case names escaped, and a
// glob written as the name is stored must still find the case.
#include <doctest/doctest.h>

#include <string>

#include "moe/spec/printable.hpp"

using moe::from_printable;
using moe::printable;

TEST_CASE("from_printable(printable(t)) == t for controls, bidi characters, bad UTF-8 and backslashes") {
    for (const std::string& t : {std::string("plain"), std::string("a\x1b[2Jb\x7f"), std::string("tab\there"),
                                std::string("x\ny"), std::string("x\\x0ay"), std::string("a\\b\\\\"),
                                std::string("safe\xe2\x80\xae" "exe.fdp"), std::string("bad\xff\xfe\xc3("),
                                std::string("caf\xc3\xa9 \xf0\x9f\x99\x82"), std::string("nul\0in", 6),
                                std::string("\\"), std::string("\\x"), std::string("")}) {
        CAPTURE(printable(t));
        CHECK(from_printable(printable(t)) == t);
    }
}

TEST_CASE("from_printable keeps what printable cannot have written") {
    CHECK(from_printable("a\\qb") == "a\\qb");      // a backslash before another letter
    CHECK(from_printable("end\\") == "end\\");      // a lone backslash at the end
    CHECK(from_printable("\\x4") == "\\x4");        // a cut escape
    CHECK(from_printable("\\xZZ") == "\\xZZ");      // not hex
    CHECK(from_printable("\\x41\\\\") == "A\\");    // a byte, then a backslash
}
