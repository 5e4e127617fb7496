#pragma once
// Reading a catalogue's JSON values (case_spec.cpp): each value taken with its type checked, and
// every refusal naming the catalogue, the case and the key's path ("shape.tokens"); the op's
// `attributes` and `params`, whose values may be "inf" where the spec allows it.
#include <cmath>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include "moe/golden/golden_file.hpp"
#include "moe/spec/error.hpp"
#include "moe/spec/problem.hpp"

namespace moe::generator::catalog_json {

using Json = nlohmann::ordered_json;

// Error context: "catalog FILE, case NAME, key KEY: ...". Inside an object such as shape, the
// key is given as "shape.tokens".
struct Where {
    std::string file, name, object;
    [[noreturn]] void fail(const std::string& key, const std::string& what) const {
        // The file's name, the case's name and the key come from the user and the catalogue:
        // escaped, once (an unknown key "x\u001b[2J" cleared the terminal). `what` is this tool's
        // words and values shown() wrote as ASCII JSON: escaped again, a value's backslashes doubled.
        std::string m = "catalog " + golden::printable(file);
        if (!name.empty()) m += ", case " + golden::printable(name);
        const std::string full = object.empty() ? key : key.empty() ? object : object + "." + key;
        if (!full.empty()) m += ", key " + golden::printable(full);
        throw InputError(m + ": " + what);
    }
    Where in(const std::string& inner) const { return {file, name, inner}; }
};

// A JSON value as text for a message: ASCII JSON (controls, C1 and bidirectional characters as
// \uXXXX, bad UTF-8 replaced), so a catalogue's value cannot garble the terminal.
inline std::string shown(const Json& v) { return v.dump(-1, ' ', true, Json::error_handler_t::replace); }

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

// A string, boolean or number only from that JSON type: nlohmann's get<T>() would throw a
// type_error whose text names neither the catalogue nor the key.
inline std::string string_value(const Json& v, const std::string& key, const Where& w) {
    if (!v.is_string()) w.fail(key, shown(v) + " is not a string");
    return v.get<std::string>();
}

// Every value of a case is taken through get(), number_or_special() or (for an object)
// check_keys(), so that a value of the wrong JSON type is refused naming its key.
template <class T>
T get(const Json& j, const std::string& key, const Where& w) {
    if (!j.contains(key)) w.fail(key, "missing");
    const Json& v = j.at(key);
    if constexpr (std::is_same_v<T, bool>) {
        if (!v.is_boolean()) w.fail(key, shown(v) + " is not true or false");
        return v.get<bool>();
    } else if constexpr (std::is_integral_v<T>) {
        return integer<T>(v, key, w);
    } else if constexpr (std::is_same_v<T, double>) {
        // JSON numbers are finite (1e400 is a parse error); "inf" and "nan" need number_or_special().
        if (!v.is_number()) w.fail(key, shown(v) + " is not a number");
        return v.get<double>();
    } else if constexpr (std::is_same_v<T, std::string>) {
        return string_value(v, key, w);
    } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
        if (!v.is_array()) w.fail(key, shown(v) + " is not a list of strings");
        T out;
        for (std::size_t i = 0; i < v.size(); ++i)
            out.push_back(string_value(v[i], key + "[" + std::to_string(i) + "]", w));
        return out;
    } else {
        static_assert(is_integer_list<T>::value, "get<T>: no typed reading for T");
        if (!v.is_array()) w.fail(key, shown(v) + " is not a list of integers");
        T out;
        for (std::size_t i = 0; i < v.size(); ++i)
            out.push_back(integer<typename T::value_type>(v[i], key + "[" + std::to_string(i) + "]", w));
        return out;
    }
}

// A number, or one of the strings "nan", "-nan", "inf", "-inf" (JSON has no non-finite numbers).
// "-nan" has its sign bit set: the FP8 types store it as their negative NaN code (E4M3 0xFF, E5M2
// 0xFE), which a decoder that knows only 0x7F (or 0x7E) reads as a number. Where the key allows
// only some non-finite values, the caller refuses the others by name.
inline double number_or_special(const Json& v, const Where& w, const std::string& key) {
    if (v.is_number()) return v.get<double>();
    if (v.is_string()) {
        const auto s = v.get<std::string>();
        if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
        if (s == "-nan") return -std::numeric_limits<double>::quiet_NaN();
        if (s == "inf") return std::numeric_limits<double>::infinity();
        if (s == "-inf") return -std::numeric_limits<double>::infinity();
    }
    w.fail(key, shown(v) + " is not a number or \"nan\", \"-nan\", \"inf\", \"-inf\"");
}

// The op attributes as given. What each means is resolve()'s to say (the convention decides which
// is swish beta and which the clamp limit), so each attribute given is also resolved alone, the
// others at the convention's defaults: a refusal names the attribute at fault. A number, or
// "nan", "inf", "-inf": the clamp limit may be +Inf (no clamping); resolve() refuses the rest.
inline OpAttributes parse_attributes(const Json& a, ExpertType type, Convention conv, const Where& w) {
    check_keys(a, {"expert_alpha", "expert_beta", "gate_idx"}, w, "attributes");
    const Where aw = w.in("attributes");
    OpAttributes out = default_attributes(type, conv);
    for (const auto& [key, v] : a.items()) {
        OpAttributes alone = default_attributes(type, conv);
        if (key == "gate_idx") out.gate_idx = alone.gate_idx = integer<std::int64_t>(v, key, aw);
        else if (key == "expert_alpha") out.expert_alpha = alone.expert_alpha = number_or_special(v, aw, key);
        else out.expert_beta = alone.expert_beta = number_or_special(v, aw, key);
        try {
            resolve(alone);
        } catch (const InputError& e) {
            aw.fail(key, e.what());
        }
    }
    return out;
}

// The arithmetic, written as attributes by attributes_for(). swish_beta must be finite; the GEMM2
// clamp_limit >= 0 or "inf" (no clamping), not NaN; GEMM3 has no clamp and ignores its limit.
inline OpAttributes parse_params(const Json& p, ExpertType type, Convention conv, const Where& w) {
    check_keys(p, {"swish_beta", "clamp_limit", "gate_lane"}, w, "params");
    const Where pw = w.in("params");
    double beta = 1.0, limit = 0.0;
    std::optional<int> lane;
    if (p.contains("swish_beta")) {
        beta = number_or_special(p.at("swish_beta"), pw, "swish_beta");
        if (!std::isfinite(beta)) pw.fail("swish_beta", "swish beta must be finite, got " + shown(p.at("swish_beta")));
    }
    if (p.contains("clamp_limit")) {
        limit = number_or_special(p.at("clamp_limit"), pw, "clamp_limit");
        if (type == ExpertType::gemm2_bias_swiglu_clamp && !(limit >= 0.0))  // NaN too
            pw.fail("clamp_limit", "the clamp limit must be >= 0 or \"inf\" (no clamping), got " +
                                       shown(p.at("clamp_limit")));
    }
    if (p.contains("gate_lane")) lane = get<int>(p, "gate_lane", pw);
    try {  // what is left to refuse is the lane: not 0 or 1, or one the spec convention cannot express
        const OpAttributes a = attributes_for(type, conv, beta, limit, lane);
        resolve(a);
        return a;
    } catch (const InputError& e) {
        pw.fail(lane ? "gate_lane" : "", e.what());
    }
}

}  // namespace moe::generator::catalog_json
