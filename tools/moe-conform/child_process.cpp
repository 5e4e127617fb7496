#include "child_process.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <exception>
#include <filesystem>

#include "moe/golden/golden_file.hpp"

namespace moe::conform_cli {

std::optional<std::string> in_child_process(const std::function<std::string()>& work, long limit_ms) {
    int fds[2];
    if (::pipe(fds) != 0) return std::nullopt;
    const pid_t pid = ::fork();
    if (pid < 0) {
        ::close(fds[0]);
        ::close(fds[1]);
        return std::nullopt;
    }
    if (pid == 0) {
        ::close(fds[0]);
        std::string text;
        try {
            text = work();
        } catch (...) {
            ::_exit(1);
        }
        for (std::size_t at = 0; at < text.size();) {
            const ssize_t n = ::write(fds[1], text.data() + at, text.size() - at);
            if (n <= 0) ::_exit(1);
            at += static_cast<std::size_t>(n);
        }
        ::_exit(0);
    }
    ::close(fds[1]);
    std::string text;
    bool finished = false;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(limit_ms);
    for (;;) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) break;
        pollfd p{fds[0], POLLIN, 0};
        const int r = ::poll(&p, 1, static_cast<int>(left.count()));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        char buf[4096];
        const ssize_t n = ::read(fds[0], buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            finished = n == 0;
            break;
        }
        text.append(buf, static_cast<std::size_t>(n));
    }
    ::close(fds[0]);
    if (!finished) ::kill(pid, SIGKILL);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (!finished || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return std::nullopt;
    return text;
}

long read_limit_ms(const std::vector<std::string>& files) {
    // Reading takes milliseconds a file, and about a second per 100 MB hashed or read.
    std::uintmax_t bytes = 0;
    for (const auto& f : files) {
        std::error_code ec;
        const auto size = std::filesystem::file_size(f, ec);
        if (!ec) bytes += size;
    }
    return 60000 + 100 * static_cast<long>(files.size()) + static_cast<long>(bytes / 100000);
}

std::vector<std::string> files_that_crash(const std::vector<std::string>& files,
                                          const std::function<void(const std::string&)>& read_one,
                                          const std::string& kind) {
    const auto reading = [&read_one](const std::vector<std::string>& some) {
        return [&read_one, some] {
            for (const auto& f : some) {
                try {
                    read_one(f);
                } catch (const std::exception&) {  // said again by the call in the tool's own process
                }
            }
            return std::string("read");
        };
    };
    const long limit_ms = read_limit_ms(files);
    if (files.empty() || in_child_process(reading(files), limit_ms)) return {};
    std::vector<std::string> problems;
    for (const auto& f : files)
        if (!in_child_process(reading({f}), limit_ms))
            problems.push_back(kind + " " + golden::printable(f) +
                               ": reading it crashed or hung the HDF5 library (a damaged file)");
    if (problems.empty())  // each file alone is fine: the whole failed (memory, time)
        problems.push_back("reading the " + kind + "s one after another in one process crashed or ran past " +
                           std::to_string(limit_ms / 1000) + " s, though each alone did not");
    return problems;
}

}  // namespace moe::conform_cli
