#include "moe/golden/manifest.hpp"

#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstring>

#include <fstream>
#include <memory>
#include <set>
#include <sstream>
#include <vector>

#include "hdf5/atomic_file.hpp"
#include "moe/golden/golden_file.hpp"
#include "moe/spec/error.hpp"
#include "owned_fd.hpp"

namespace moe::golden {

namespace {

// A manifest lists one file a line (about 120 bytes): 64 MiB is half a million files.
constexpr std::uint64_t kMaxManifestBytes = std::uint64_t{64} << 20;

// `file` opened for reading if it is a regular file. O_NONBLOCK: opening a FIFO must not wait for
// a writer (a suite folder is anyone's; a FIFO named MANIFEST.sha256 hung every run); it is
// refused right after. The path may be a suite file's name, anyone's bytes: escaped, as every
// message quoting one. `missing`: added to the message when there is no such file.
int open_regular(const std::filesystem::path& file, struct stat& st, const std::string& missing = "") {
    const int fd = ::open(file.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        const int error = errno;
        throw InputError("cannot read " + printable(file.string()) +
                         (error == ENOENT && !missing.empty() ? missing : ": " + std::string(std::strerror(error))));
    }
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd);
        throw InputError(printable(file.string()) + " is not a regular file");
    }
    return fd;
}

// Reads fd to its end, `block` bytes at a time, handing each piece to `use`; throws naming `file`.
template <class Use>
void read_blocks(int fd, const std::filesystem::path& file, std::size_t block, Use use) {
    std::vector<char> buf(block);
    for (;;) {
        const ssize_t n = ::read(fd, buf.data(), buf.size());
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) throw InputError("cannot read " + printable(file.string()) + ": " + std::strerror(errno));
        if (n == 0) return;
        use(buf.data(), static_cast<std::size_t>(n));
    }
}

}  // namespace

std::string sha256_file(const std::filesystem::path& file) {
    struct stat st {};
    const OwnedFd fd(open_regular(file, st));
    std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
    EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr);
    read_blocks(fd.get(), file, std::size_t{1} << 20,
                [&](const char* data, std::size_t n) { EVP_DigestUpdate(ctx.get(), data, n); });
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    EVP_DigestFinal_ex(ctx.get(), digest, &len);
    static const char* hex = "0123456789abcdef";
    std::string out;
    for (unsigned int i = 0; i < len; ++i) {
        out += hex[digest[i] >> 4];
        out += hex[digest[i] & 15];
    }
    return out;
}

void write_manifest(const std::filesystem::path& dir) {
    std::map<std::string, std::string> sums;
    for (const auto& entry : std::filesystem::directory_iterator(dir))
        if (entry.is_regular_file() && entry.path().extension() == ".h5")
            sums[entry.path().filename().string()] = sha256_file(entry.path());
    AtomicFile target(dir / kManifestName);  // a stale MANIFEST.sha256.tmp.<pid>.<n> is cleaned like any
    {
        std::ofstream out(target.temp_path());
        for (const auto& [name, sum] : sums) out << sum << "  " << name << "\n";
        if (!out) throw InputError("cannot write " + target.temp_path().string());
    }
    try {
        target.commit(h5::FileContext{dir / kManifestName});
    } catch (const FileError& e) {
        throw InputError(e.what());
    }
}

std::map<std::string, std::string> read_manifest(const std::filesystem::path& dir) {
    const auto file = dir / kManifestName;
    struct stat st {};
    const OwnedFd fd(open_regular(file, st, " (there is none: moe-golden generate --manifest writes one)"));
    if (static_cast<std::uint64_t>(st.st_size) > kMaxManifestBytes)
        throw InputError(printable(file.string()) + " is " + std::to_string(st.st_size) +
                         " bytes; a manifest is at most 64 MiB");
    std::string text;
    read_blocks(fd.get(), file, std::size_t{1} << 16, [&](const char* data, std::size_t n) {
        text.append(data, n);
        if (text.size() > kMaxManifestBytes)  // it grew while it was read
            throw InputError(printable(file.string()) + " is larger than 64 MiB, the most a manifest may be");
    });
    std::istringstream in(text);
    std::map<std::string, std::string> sums;
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
        // As sha256sum -c reads it: CRLF line ends (a manifest edited or checked out on Windows),
        // hex digits in either case, and "<sum> *<file>" (binary mode) as well as "<sum>  <file>".
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.empty()) continue;
        const bool hex = line.size() >= 64 && line.find_first_not_of("0123456789abcdefABCDEF") >= 64;
        if (!hex || line.size() < 67 || (line.substr(64, 2) != "  " && line.substr(64, 2) != " *"))
            throw InputError(file.string() + ":" + std::to_string(n) + ": expected '<sha256>  <file>'");
        std::string sum = line.substr(0, 64);
        for (char& c : sum) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        sums[line.substr(66)] = sum;
    }
    return sums;
}

std::vector<std::string> manifest_problems(const std::filesystem::path& dir) {
    const auto manifest = read_manifest(dir);
    // File names come from the folder and the manifest, whoever wrote them: escaped (a name can
    // hold a newline or a terminal escape).
    std::vector<std::string> problems;
    const auto problem = [&problems](const std::string& text) { problems.push_back(printable(text)); };
    std::set<std::string> on_disk;
    for (const auto& entry : std::filesystem::directory_iterator(dir))
        if (entry.path().extension() == ".h5") on_disk.insert(entry.path().filename().string());
    for (const auto& name : on_disk) {
        const auto it = manifest.find(name);
        if (it == manifest.end()) {
            problem(name + ": not listed in " + kManifestName);
            continue;
        }
        std::string digest;
        try {
            digest = sha256_file(dir / name);
        } catch (const InputError& e) {
            problems.push_back(printable(name) + ": " + e.what());  // sha256_file's message is escaped already
            continue;
        }
        if (digest != it->second) problem(name + ": SHA-256 differs from " + kManifestName);
    }
    for (const auto& entry : manifest)
        if (!on_disk.count(entry.first)) problem(entry.first + ": listed in " + kManifestName + " but missing");
    return problems;
}

std::optional<std::string> manifest_problem_for_file(const std::filesystem::path& file) {
    const auto dir = file.parent_path().empty() ? std::filesystem::path(".") : file.parent_path();
    std::error_code ec;
    if (!std::filesystem::exists(dir / kManifestName, ec)) return std::nullopt;
    const auto manifest = read_manifest(dir);
    const auto it = manifest.find(file.filename().string());
    if (it == manifest.end()) return std::nullopt;
    const std::string name = file.filename().string();
    try {
        if (sha256_file(file) != it->second)
            return printable(name + ": SHA-256 differs from " + (dir / kManifestName).string());
    } catch (const InputError& e) {
        return printable(name) + ": " + e.what();  // escaped as manifest_problems' are (e: by sha256_file)
    }
    return std::nullopt;
}

}  // namespace moe::golden
