#include "moe/conformance/expectations.hpp"

#include <fstream>
#include <nlohmann/json.hpp>

#include "moe/golden/suite.hpp"
#include "moe/spec/error.hpp"

namespace moe::conformance {

namespace {

// The JSON type of a value, as a person reads it ("a number", "an array").
std::string kind(const nlohmann::json& v) {
    if (v.is_string()) return "a string";
    if (v.is_number()) return "a number";
    if (v.is_boolean()) return "a boolean";
    if (v.is_array()) return "an array";
    if (v.is_object()) return "an object";
    return "null";
}

// The string member `key` of `e`: missing or not a string is an input error naming the key.
std::string text_member(const nlohmann::json& e, const char* key, const std::string& entry, bool required) {
    const auto it = e.find(key);
    if (it == e.end()) {
        if (required) throw InputError(entry + ": \"" + key + "\" is missing (each entry needs backend, case, status, reason)");
        return "";
    }
    if (!it->is_string()) throw InputError(entry + ": \"" + key + "\" must be a string, not " + kind(*it));
    return it->get<std::string>();
}

}  // namespace

// Every key is checked, and any other refused: a misspelt "reason" or "tikcet" would otherwise
// pass unnoticed, and an entry that silently matches nothing turns a known failure into a FAIL
// (or worse, a misspelt "status" into a wrong one).
std::vector<Expectation> load_expectations(const std::filesystem::path& file) {
    const std::string where = "expectation file " + file.string();
    std::ifstream in(file);
    if (!in) throw InputError(where + ": cannot open it");
    nlohmann::json root;
    try {
        root = nlohmann::json::parse(in);
    } catch (const nlohmann::json::exception& e) {
        throw InputError(where + ": not valid JSON: " + e.what());
    }
    const std::string format_hint = ": expected an object with \"format\": \"moe-expectations\", \"format_version\": 1 "
                                    "and an \"expectations\" array";
    if (!root.is_object()) throw InputError(where + format_hint + " (the file holds " + kind(root) + ")");
    for (const auto& [key, value] : root.items())
        if (key != "format" && key != "format_version" && key != "expectations" && key != "description")
            throw InputError(where + ": unknown key \"" + key + "\"" + format_hint);
    const auto format = root.find("format"), version = root.find("format_version");
    if (format == root.end() || !format->is_string() || *format != "moe-expectations")
        throw InputError(where + format_hint + " (\"format\" is " +
                         (format == root.end() ? std::string("missing") : format->dump()) + ")");
    if (version == root.end() || !version->is_number_integer() || *version != 1)
        throw InputError(where + format_hint + " (\"format_version\" is " +
                         (version == root.end() ? std::string("missing") : version->dump()) + ")");
    const auto list = root.find("expectations");
    if (list == root.end() || !list->is_array())
        throw InputError(where + format_hint + " (\"expectations\" is " +
                         (list == root.end() ? std::string("missing") : kind(*list)) + ")");
    std::vector<Expectation> out;
    std::size_t n = 0;
    for (const auto& e : *list) {
        const std::string entry = where + ", entry " + std::to_string(n++);
        if (!e.is_object()) throw InputError(entry + ": must be an object, not " + kind(e));
        for (const auto& [key, value] : e.items())
            if (key != "backend" && key != "case" && key != "status" && key != "reason" && key != "ticket")
                throw InputError(entry + ": unknown key \"" + key + "\" (the keys are backend, case, status, reason, ticket)");
        Expectation x;
        x.backend = text_member(e, "backend", entry, true);
        x.case_glob = text_member(e, "case", entry, true);
        const std::string status = text_member(e, "status", entry, true);
        if (status == "FAIL") x.status = Status::fail;
        else if (status == "SKIP") x.status = Status::skip;
        else throw InputError(entry + ": \"status\" must be FAIL or SKIP, not " + status);
        x.reason = text_member(e, "reason", entry, true);
        x.ticket = text_member(e, "ticket", entry, false);
        if (x.backend.empty() || x.case_glob.empty())
            throw InputError(entry + ": \"backend\" and \"case\" must not be empty (\"*\" matches every name)");
        if (x.reason.empty()) throw InputError(entry + ": an expectation needs a reason");
        out.push_back(std::move(x));
    }
    return out;
}

const Expectation* find_expectation(const std::vector<Expectation>& list, const std::string& backend,
                                    const std::string& case_name) {
    for (const auto& e : list)
        if (golden::glob_match(e.backend, backend) && golden::glob_match(e.case_glob, case_name)) return &e;
    return nullptr;
}

}  // namespace moe::conformance
