#pragma once
// Catalogues written as JSON text by a test: loaded from a temporary file as moe-golden loads
// them, or the message of their refusal.
#include <fstream>
#include <string>
#include <vector>

#include "moe/generator/case_spec.hpp"
#include "moe/spec/error.hpp"
#include "temp_dir.hpp"

namespace moe::test {

inline std::vector<generator::CaseSpec> load_catalog_text(const std::string& text) {
    TempDir dir;
    const auto f = dir / "cat.json";
    std::ofstream(f) << text;
    return generator::load_catalog(f);
}

// A catalogue of `cases` (its "cases" array's items, comma-separated JSON objects), loaded.
inline std::vector<generator::CaseSpec> load_catalog_cases(const std::string& cases) {
    return load_catalog_text(R"({"format": "moe-catalog", "format_version": 1, "cases": [)" + cases + "]}");
}

// The refusal's message, "" when the catalogue is read.
inline std::string catalog_text_error(const std::string& text) {
    try {
        load_catalog_text(text);
    } catch (const InputError& e) {
        return e.what();
    }
    return "";
}

}  // namespace moe::test
