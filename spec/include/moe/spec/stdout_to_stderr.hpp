#pragma once
// A backend's writes to stdout sent to stderr. The tools' stdout holds their reports (moe-conform
// run's text report, moe-bench's table, shrink's repro line), which CI parses or archives; a
// plugin's debugging printf() there is noise at the top of the report. Its lines are kept, on
// stderr beside the tools' progress.
//
// Two ways: a process that only runs backends (a case worker) redirects for good
// (stdout_to_stderr_for_good); a process that also writes its report redirects around the
// backend's calls (StdoutToStderr). Both work on file descriptor 1, so that a plugin's printf(),
// write(1, ...) and its own threads' writes are all caught; stdio's buffer is flushed at each
// switch, so that nothing buffered before it lands on the other side.
#include <unistd.h>

#include <cstdio>
#include <iostream>

namespace moe {

// For the rest of this process: fd 1 is a copy of fd 2. Returns a new descriptor for the old
// stdout (-1 when it could not be kept), for a caller that still writes its report there.
inline int stdout_to_stderr_for_good() {
    std::cout.flush();
    std::fflush(stdout);
    const int saved = ::dup(STDOUT_FILENO);
    ::dup2(STDERR_FILENO, STDOUT_FILENO);
    return saved;
}

// While it lives, fd 1 is a copy of fd 2; the destructor puts the old stdout back. Not for a
// process where another thread writes its report meanwhile (that would go to stderr too).
class StdoutToStderr {
public:
    StdoutToStderr() {
        std::cout.flush();
        std::fflush(stdout);  // the report so far stays on stdout
        saved_ = ::dup(STDOUT_FILENO);
        if (saved_ >= 0) ::dup2(STDERR_FILENO, STDOUT_FILENO);  // else: no way back, so no switch
    }
    ~StdoutToStderr() {
        if (saved_ < 0) return;
        std::cout.flush();
        std::fflush(stdout);  // what the backend left in stdio's buffer goes to stderr
        ::dup2(saved_, STDOUT_FILENO);
        ::close(saved_);
    }
    StdoutToStderr(const StdoutToStderr&) = delete;
    StdoutToStderr& operator=(const StdoutToStderr&) = delete;

private:
    int saved_ = -1;
};

}  // namespace moe
