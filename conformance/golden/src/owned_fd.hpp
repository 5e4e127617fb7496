#pragma once
// A file descriptor closed when it goes out of scope: the golden layer reads a few files with POSIX
// calls (a manifest opened without blocking on a FIFO, an HDF5 file's global heaps by offset), and
// every way out of those readers is a throw.
#include <unistd.h>

namespace moe::golden {

class OwnedFd {
public:
    explicit OwnedFd(int fd) : fd_(fd) {}
    ~OwnedFd() {
        if (fd_ >= 0) ::close(fd_);
    }
    OwnedFd(const OwnedFd&) = delete;
    OwnedFd& operator=(const OwnedFd&) = delete;
    int get() const { return fd_; }

private:
    int fd_;
};

}  // namespace moe::golden
