#pragma once
// What the input-rule tests ask of validate(): its message for a problem, and (text_contains.hpp's
// has) whether a message names a part.
#include <string>

#include "moe/spec/error.hpp"
#include "moe/spec/problem.hpp"
#include "text_contains.hpp"

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

}  // namespace moe::test
