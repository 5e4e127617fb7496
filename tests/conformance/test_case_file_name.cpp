// The file names --write-results and shrink give a case's files, from names a golden file chose.
#include <doctest/doctest.h>

#include <set>
#include <string>

#include "moe/conformance/case_file_name.hpp"

using moe::conformance::case_file_stem;
using moe::conformance::kCaseFileStemLimit;

TEST_CASE("a plain case name is its own file name") {
    CHECK(case_file_stem("gemm3_qwen_spec_f32") == "gemm3_qwen_spec_f32");
    CHECK(case_file_stem("a-b.c") == "a-b.c");
    CHECK(case_file_stem("run-0123456789abcdeg") == "run-0123456789abcdeg");  // not 16 hex digits
}

TEST_CASE("names that map alike keep files of their own; a long one fits a file system's name limit") {
    // Before: "a<b", "a>b" and "a_b<" wrote one file, "a_b.h5"; the last one written won.
    const std::string names[] = {"a<b", "a>b", "a_b", "a/b", "../a_b", ".a_b", "", "unnamed"};
    std::set<std::string> stems;
    for (const auto& n : names) {
        const std::string s = case_file_stem(n);
        CAPTURE(n);
        CAPTURE(s);
        CHECK(s.find('/') == std::string::npos);
        CHECK(s.front() != '.');
        stems.insert(s);
    }
    CHECK(stems.size() == std::size(names));
    CHECK(case_file_stem("a<b").rfind("a_b-", 0) == 0);
    const std::string long_name(300, 'x'), other = long_name + "y";
    CHECK(case_file_stem(long_name).size() == kCaseFileStemLimit + 17);
    CHECK(case_file_stem(long_name) != case_file_stem(other));
    // A plain name that is another name's stem is hashed itself.
    const std::string hashed = case_file_stem("a<b");
    CHECK(case_file_stem(hashed) != hashed);
}
