#pragma once
// Reading a catalogue's JSON values (case_spec.cpp): each value taken with its type checked, and
// every refusal naming the catalogue, the case and the key's path ("shape.tokens").
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include "moe/spec/error.hpp"

namespace moe::generator::catalog_json {

using Json = nlohmann::ordered_json;

// Error context: "catalog FILE, case NAME, key KEY: ...". Inside an object such as shape, the
// key is given as "shape.tokens".
struct Where {
    std::string file, name, object;
    [[noreturn]] void fail(const std::string& key, const std::string& what) const {
        std::string m = "catalog " + file;
        if (!name.empty()) m += ", case " + name;
        const std::string full = object.empty() ? key : key.empty() ? object : object + "." + key;
        if (!full.empty()) m += ", key " + full;
        throw InputError(m + ": " + what);
    }
    Where in(const std::string& inner) const { return {file, name, inner}; }
};

// A JSON value as text for a message: escaped, so a control character or bad UTF-8 in a
// catalogue cannot garble the terminal.
inline std::string shown(const Json& v) { return v.dump(-1, ' ', false, Json::error_handler_t::replace); }

inline void check_keys(const Json& j, const std::set<std::string>& allowed, const Where& w, const std::string& where) {
    if (!j.is_object()) w.fail(where, "expected an object");
    for (const auto& [k, v] : j.items()) {
        (void)v;
        if (!allowed.count(k)) {
            std::string list;
            for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
            w.fail(where.empty() ? k : where + "." + k, "unknown key (allowed: " + list + ")");
        }
    }
}

// An integer is taken only from a JSON integer within T's range: get<T>() would cast, turning a
// size of -4 into 2^64 - 4 and 4.9 into 4.
template <class T>
T integer(const Json& v, const std::string& key, const Where& w) {
    using Limits = std::numeric_limits<T>;
    if (v.is_number_unsigned() && v.get<std::uint64_t>() <= static_cast<std::uint64_t>(Limits::max())) return v.get<T>();
    if constexpr (std::is_signed_v<T>) {
        if (v.is_number_integer() && !v.is_number_unsigned() && v.get<std::int64_t>() >= Limits::min() &&
            v.get<std::int64_t>() <= Limits::max())
            return v.get<T>();
    }
    std::string wanted = std::is_signed_v<T> ? "an integer" : "a non-negative integer";
    if (Limits::digits < 63)  // a narrower type than the JSON integers: say its range
        wanted += " in [" + std::to_string(Limits::min()) + ", " + std::to_string(Limits::max()) + "]";
    w.fail(key, shown(v) + " is not " + wanted);
}

template <class T>
struct is_integer_list : std::false_type {};
template <class T>
struct is_integer_list<std::vector<T>> : std::is_integral<T> {};

template <class T>
T get(const Json& j, const std::string& key, const Where& w) {
    if (!j.contains(key)) w.fail(key, "missing");
    const Json& v = j.at(key);
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
        return integer<T>(v, key, w);
    } else if constexpr (is_integer_list<T>::value) {
        if (!v.is_array()) w.fail(key, shown(v) + " is not a list of integers");
        T out;
        for (std::size_t i = 0; i < v.size(); ++i)
            out.push_back(integer<typename T::value_type>(v[i], key + "[" + std::to_string(i) + "]", w));
        return out;
    } else {
        try {
            return v.get<T>();
        } catch (const nlohmann::json::exception& e) {
            w.fail(key, std::string("wrong type: ") + e.what());
        }
    }
}

inline double number_or_special(const Json& v, const Where& w, const std::string& key) {
    if (v.is_number()) return v.get<double>();
    if (v.is_string()) {
        const auto s = v.get<std::string>();
        if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
        if (s == "inf") return std::numeric_limits<double>::infinity();
        if (s == "-inf") return -std::numeric_limits<double>::infinity();
    }
    w.fail(key, "expected a number or \"nan\", \"inf\", \"-inf\"");
}

}  // namespace moe::generator::catalog_json
