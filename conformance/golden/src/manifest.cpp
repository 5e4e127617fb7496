#include "moe/golden/manifest.hpp"

#include <openssl/evp.h>

#include <fstream>
#include <memory>
#include <set>
#include <sstream>
#include <vector>

#include "moe/spec/error.hpp"

namespace moe::golden {

std::string sha256_file(const std::filesystem::path& file) {
    std::ifstream in(file, std::ios::binary);
    if (!in) throw InputError("cannot read " + file.string());
    std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
    EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr);
    std::vector<char> buf(1 << 20);
    while (in) {
        in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
        EVP_DigestUpdate(ctx.get(), buf.data(), static_cast<std::size_t>(in.gcount()));
    }
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
    const auto target = dir / kManifestName;
    const auto tmp = dir / (std::string(kManifestName) + ".tmp");
    {
        std::ofstream out(tmp);
        for (const auto& [name, sum] : sums) out << sum << "  " << name << "\n";
        if (!out) throw InputError("cannot write " + tmp.string());
    }
    std::filesystem::rename(tmp, target);
}

std::map<std::string, std::string> read_manifest(const std::filesystem::path& dir) {
    const auto file = dir / kManifestName;
    std::ifstream in(file);
    if (!in) throw InputError("cannot read " + file.string());
    std::map<std::string, std::string> sums;
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
        if (line.empty()) continue;
        if (line.size() < 67 || line.substr(64, 2) != "  ")
            throw InputError(file.string() + ":" + std::to_string(n) + ": expected '<sha256>  <file>'");
        sums[line.substr(66)] = line.substr(0, 64);
    }
    return sums;
}

std::vector<std::string> manifest_problems(const std::filesystem::path& dir) {
    const auto manifest = read_manifest(dir);
    std::vector<std::string> problems;
    std::set<std::string> on_disk;
    for (const auto& entry : std::filesystem::directory_iterator(dir))
        if (entry.path().extension() == ".h5") on_disk.insert(entry.path().filename().string());
    for (const auto& name : on_disk) {
        const auto it = manifest.find(name);
        if (it == manifest.end()) problems.push_back(name + ": not listed in " + kManifestName);
        else if (sha256_file(dir / name) != it->second) problems.push_back(name + ": SHA-256 differs from " + kManifestName);
    }
    for (const auto& entry : manifest)
        if (!on_disk.count(entry.first)) problems.push_back(entry.first + ": listed in " + kManifestName + " but missing");
    return problems;
}

}  // namespace moe::golden
