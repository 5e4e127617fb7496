#include "moe/conformance/expectations.hpp"

#include <fstream>
#include <nlohmann/json.hpp>

#include "moe/golden/suite.hpp"
#include "moe/spec/error.hpp"

namespace moe::conformance {

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
    if (root.value("format", "") != "moe-expectations" || root.value("format_version", 0) != 1)
        throw InputError(where + ": expected format \"moe-expectations\", format_version 1");
    std::vector<Expectation> out;
    std::size_t n = 0;
    for (const auto& e : root.value("expectations", nlohmann::json::array())) {
        const std::string entry = where + ", entry " + std::to_string(n++);
        Expectation x;
        try {
            x.backend = e.at("backend").get<std::string>();
            x.case_glob = e.at("case").get<std::string>();
            const auto status = e.at("status").get<std::string>();
            if (status == "FAIL") x.status = Status::fail;
            else if (status == "SKIP") x.status = Status::skip;
            else throw InputError(entry + ": status must be FAIL or SKIP, not " + status);
            x.reason = e.at("reason").get<std::string>();
            x.ticket = e.value("ticket", "");
        } catch (const nlohmann::json::exception& ex) {
            throw InputError(entry + ": " + ex.what() + " (each entry needs backend, case, status, reason)");
        }
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
