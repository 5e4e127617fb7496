#pragma once
// What the input-rule tests ask of validate(): its message for a problem, and whether a message
// names a part.
#include <string>

#include "moe/spec/error.hpp"
#include "moe/spec/problem.hpp"

namespace moe::test {

// The InputError message validate() throws, or "" when it accepts the problem.
inline std::string rejection(const Problem& p) {
    try {
        validate(p);
    } catch (const InputError& e) {
        return e.what();
    }
    return "";
}

inline bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace moe::test
