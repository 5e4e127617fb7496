#pragma once
// Expectation files: cases a backend is known to fail (XFAIL) or must not run (SKIP), each with a
// reason and, where one exists, a ticket. spec/report-format.md documents the format.
#include <filesystem>
#include <string>
#include <vector>

#include "moe/conformance/results.hpp"

namespace moe::conformance {

struct Expectation {
    std::string backend;  // glob over backend names
    std::string case_glob;
    Status status = Status::fail;  // fail (-> XFAIL / XPASS) or skip
    std::string reason;
    std::string ticket;
};

// Throws InputError naming the file and entry at fault. A reason is mandatory.
std::vector<Expectation> load_expectations(const std::filesystem::path& file);

// The first entry matching (backend, case), or nullptr. `case_name` as results carry it (printed,
// moe::printable); an entry's `case` matches it as --filter does: the name as stored in its file
// or as printed (golden::case_glob_match).
const Expectation* find_expectation(const std::vector<Expectation>& list, const std::string& backend,
                                    const std::string& case_name);

// The indices of the entries that applied to none of `results` (no result's backend and case
// match them first): a stale entry (a case renamed or removed, a file name given for a case
// name, a backend that did not run) would otherwise sit in the file unnoticed.
std::vector<std::size_t> unused_expectations(const std::vector<Expectation>& list,
                                             const std::vector<CaseResult>& results);

}  // namespace moe::conformance
