#include "moe/conformance/expectations.hpp"

#include <fstream>
#include <nlohmann/json.hpp>
#include <map>
#include <optional>
#include <set>

#include "moe/golden/suite.hpp"
#include "moe/spec/error.hpp"
#include "moe/spec/printable.hpp"

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

// Refuses a key given twice in one object. nlohmann keeps the last silently, so
// {"status": "FAIL", ..., "status": "SKIP"} skipped a known failure, and a second top-level
// "expectations": [] dropped every entry, with nothing said.
class RepeatedKeys {
public:
    explicit RepeatedKeys(std::string where) : where_(std::move(where)) {}
    bool operator()(int, nlohmann::json::parse_event_t event, const nlohmann::json& parsed) {
        using E = nlohmann::json::parse_event_t;
        if (event == E::object_start || event == E::array_start) {
            std::string name;
            if (!stack_.empty()) {
                ++stack_.back().children;
                name = stack_.back().last_key;
            }
            stack_.push_back({event == E::object_start, std::move(name), {}, {}, 0});
        } else if (event == E::object_end || event == E::array_end) {
            if (!stack_.empty()) stack_.pop_back();
        } else if (event == E::value) {
            if (!stack_.empty() && !stack_.back().object) ++stack_.back().children;
        } else if (event == E::key && !stack_.empty()) {
            auto& top = stack_.back();
            top.last_key = parsed.get<std::string>();
            if (!top.keys.insert(top.last_key).second) throw InputError(place() + ": key \"" + printable(top.last_key) +
                                                                    "\" given twice (JSON would keep only the last)");
        }
        return true;
    }

private:
    struct Frame {
        bool object;
        std::string name;  // the key this object or array is the value of
        std::set<std::string> keys;
        std::string last_key;
        std::size_t children;
    };
    std::string place() const {
        if (stack_.size() >= 3 && stack_[1].name == "expectations" && !stack_[1].object)
            return where_ + ", entry " + std::to_string(stack_[1].children - 1);
        return where_;
    }
    std::string where_;
    std::vector<Frame> stack_;
};

bool wildcard(const std::string& glob) { return glob.find_first_of("*?") != std::string::npos; }

// The earlier entry of `out` that covers `x`, if any. A glob without a wildcard covers only itself:
// those are looked up, so that a generated file of thousands of plain entries loads in n log n.
std::optional<std::size_t> covering_entry(const std::vector<Expectation>& out, const Expectation& x,
                                          const std::map<std::pair<std::string, std::string>, std::size_t>& literal,
                                          const std::vector<std::size_t>& with_wildcards) {
    if (const auto it = literal.find({x.backend, x.case_glob}); it != literal.end()) return it->second;
    for (const std::size_t i : with_wildcards)
        if (golden::glob_covers(out[i].backend, x.backend) && golden::glob_covers(out[i].case_glob, x.case_glob))
            return i;
    return std::nullopt;
}

bool blank(const std::string& s) { return s.find_first_not_of(" \t\r\n") == std::string::npos; }

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
        root = nlohmann::json::parse(in, RepeatedKeys(where));
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
    const auto description = root.find("description");
    if (description != root.end() && !description->is_string())
        throw InputError(where + ": \"description\" must be a string, not " + kind(*description));
    std::vector<Expectation> out;
    std::map<std::pair<std::string, std::string>, std::size_t> literal;  // entries without a wildcard
    std::vector<std::size_t> with_wildcards;
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
        if (blank(x.reason)) throw InputError(entry + ": an expectation needs a reason (\"reason\" is blank)");
        // The first matching entry applies: one that an earlier entry covers can never apply,
        // whatever its status says (a duplicate with another status, an exception listed after
        // its rule). Refused rather than silently ignored.
        if (const auto i = covering_entry(out, x, literal, with_wildcards))
            throw InputError(entry + " (backend \"" + printable(x.backend) + "\", case \"" + printable(x.case_glob) +
                             "\") can never apply: entry " + std::to_string(*i) + " (backend \"" +
                             printable(out[*i].backend) + "\", case \"" + printable(out[*i].case_glob) +
                             "\") matches all it matches and comes first (the first matching entry applies)");
        if (wildcard(x.backend) || wildcard(x.case_glob)) with_wildcards.push_back(out.size());
        else literal.emplace(std::make_pair(x.backend, x.case_glob), out.size());
        out.push_back(std::move(x));
    }
    return out;
}

const Expectation* find_expectation(const std::vector<Expectation>& list, const std::string& backend,
                                    const std::string& case_name) {
    // As --filter matches: the name as stored or as printed (golden::case_glob_match). Matching
    // the printed name alone, an entry that gave a name as stored in its file (a JSON "\t" for a
    // tab) applied to nothing, where the same glob as --filter selected the case.
    const std::string stored = from_printable(case_name);
    for (const auto& e : list)
        if (golden::glob_match(e.backend, backend) && golden::case_glob_match(e.case_glob, stored)) return &e;
    return nullptr;
}

std::vector<std::size_t> unused_expectations(const std::vector<Expectation>& list,
                                             const std::vector<CaseResult>& results) {
    std::vector<bool> used(list.size(), false);
    for (const auto& r : results)
        if (const Expectation* e = find_expectation(list, r.backend, r.case_name))
            used[static_cast<std::size_t>(e - list.data())] = true;
    std::vector<std::size_t> unused;
    for (std::size_t i = 0; i < list.size(); ++i)
        if (!used[i]) unused.push_back(i);
    return unused;
}

}  // namespace moe::conformance
