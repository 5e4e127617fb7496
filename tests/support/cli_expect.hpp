#pragma once
// What CLI tests expect of a command refused as it starts (doctest checks).
#include <doctest/doctest.h>

#include <string>

#include "run_command.hpp"

namespace moe::test {

// Exit 2 with `message`, and no count line: refused before the run, not after it. Returns what it
// printed, for further checks.
inline std::string expect_refused_before_running(const std::string& command, const std::string& message) {
    const auto r = run_command(command);
    CAPTURE(command);
    CAPTURE(r.output);
    CHECK(r.exit_code == 2);
    CHECK(r.output.find(message) != std::string::npos);
    CHECK(r.output.find("passed") == std::string::npos);
    return r.output;
}

}  // namespace moe::test
