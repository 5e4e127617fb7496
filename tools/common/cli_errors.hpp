#pragma once
// The exit-code contract shared by the command-line tools: bad input (a file, a problem, a
// catalogue) or an output that cannot be written is 2 with a message naming it; anything
// unexpected is 3, never a crash.
#include <exception>
#include <iostream>

#include "moe/golden/golden_file.hpp"
#include "moe/spec/error.hpp"

namespace moe::cli {

template <class F>
int run_with_exit_codes(const char* tool, F&& command) {
    try {
        return command();
    } catch (const golden::FileError& e) {
        std::cerr << tool << ": error: " << e.what() << "\n";
        return 2;
    } catch (const InputError& e) {
        std::cerr << tool << ": error: " << e.what() << "\n";
        return 2;
    } catch (const OutputError& e) {
        std::cerr << tool << ": error: " << e.what() << "\n";
        return 2;
    } catch (const std::exception& e) {
        std::cerr << tool << ": internal error: " << e.what() << "\n";
        return 3;
    }
}

}  // namespace moe::cli
