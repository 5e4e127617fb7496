#include "hdf5/h5_global_heap.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "owned_fd.hpp"

namespace moe::golden::h5 {

std::uint64_t little_endian(const unsigned char* p, unsigned bytes) {
    std::uint64_t v = 0;
    for (unsigned i = 0; i < bytes && i < 8; ++i) v |= std::uint64_t{p[i]} << (8 * i);
    return v;
}

namespace {

constexpr std::uint64_t kMinCollection = 4096;  // H5HG_MINSIZE
constexpr char kSignature[] = {'G', 'C', 'O', 'L', 1};

bool read_at(int fd, std::uint64_t offset, unsigned char* out, std::size_t n) {
    std::size_t done = 0;
    while (done < n) {
        const ssize_t r = ::pread(fd, out + done, n - done, static_cast<off_t>(offset + done));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return false;
        done += static_cast<std::size_t>(r);
    }
    return true;
}

// Walks the collection at `at` the way HDF5's deserializer does; returns the size of each of its
// objects by index (free space, index 0, left out).
std::map<unsigned, std::uint64_t> walk_collection(int fd, std::uint64_t at, std::uint64_t file_bytes,
                                                  unsigned len_size, const FileContext& ctx) {
    const std::string where = "global heap collection at byte " + std::to_string(at);
    const std::uint64_t header = 8 + len_size, object_header = 8 + len_size;
    unsigned char head[16] = {};
    if (at > file_bytes || header > file_bytes - at || !read_at(fd, at, head, header))
        ctx.fail(Kind::corrupt, where, "its header lies beyond the end of the file");
    const std::uint64_t size = little_endian(head + 8, len_size);
    if (size < kMinCollection || size > kMaxGlobalHeapBytes || size > file_bytes - at)
        ctx.fail(Kind::corrupt, where, "claims " + std::to_string(size) + " bytes (the file has " +
                                           std::to_string(file_bytes) + "; a collection has 4096 to " +
                                           std::to_string(kMaxGlobalHeapBytes) + "): the strings it holds are damaged");
    std::vector<unsigned char> c(size);
    if (!read_at(fd, at, c.data(), c.size())) ctx.fail(Kind::corrupt, where, "cannot be read");
    std::map<unsigned, std::uint64_t> objects;
    std::uint64_t p = header;
    while (p < size) {
        if (p + object_header > size) break;  // a tail too small for an object: free space
        const unsigned index = static_cast<unsigned>(little_endian(&c[p], 2));
        const std::uint64_t object = little_endian(&c[p + 8], len_size);
        if (object > size) ctx.fail(Kind::corrupt, where, "object " + std::to_string(index) + " claims " +
                                                              std::to_string(object) + " bytes, more than the collection");
        const std::uint64_t need = index > 0 ? object_header + ((object + 7) & ~std::uint64_t{7}) : object;
        if (need == 0) ctx.fail(Kind::corrupt, where, "has a free-space object of size 0 at offset " + std::to_string(p));
        if (need > size - p)
            ctx.fail(Kind::corrupt, where, "object " + std::to_string(index) + " at offset " + std::to_string(p) +
                                               " extends past the end of the collection");
        if (index > 0) objects[index] = object;  // HDF5 keeps the last of two with one index
        p += need;
    }
    return objects;
}

int open_file(const FileContext& ctx) {
    const int fd = ::open(ctx.file.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) ctx.fail(Kind::unreadable, "file", std::string("cannot be opened: ") + std::strerror(errno));
    return fd;
}

}  // namespace

unsigned length_size(const H5Id& file, const FileContext& ctx) {
    H5Id fcpl = own(H5Fget_create_plist(file.get()), H5Pclose, ctx, Kind::malformed, "file", "cannot read the superblock");
    std::size_t addr = 0, len = 0;
    check(H5Pget_sizes(fcpl.get(), &addr, &len), ctx, Kind::malformed, "file", "cannot read the superblock");
    if (len != 2 && len != 4 && len != 8) ctx.malformed("file", "size of lengths is " + std::to_string(len));
    return static_cast<unsigned>(len);
}

void check_global_heaps(const FileContext& ctx, std::uint64_t file_bytes, unsigned len_size) {
    const OwnedFd fd(open_file(ctx));
    // Blocks that stay in the core's cache between the copy out of the page cache and the search
    // (4 MiB ones did not: the scan of a 1.3 GB file took a quarter longer).
    constexpr std::size_t kBlock = std::size_t{256} << 10;
    constexpr std::size_t kOverlap = sizeof kSignature - 1;
    std::vector<unsigned char> buf(kBlock + kOverlap);
    std::size_t carried = 0;  // bytes at the front of buf from the previous block
    for (std::uint64_t offset = 0; offset < file_bytes;) {
        const std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(kBlock, file_bytes - offset));
        if (!read_at(fd.get(), offset, buf.data() + carried, want)) ctx.fail(Kind::unreadable, "file", "cannot be read");
        const std::size_t have = carried + want;
        const std::uint64_t base = offset - carried;  // file offset of buf[0]
        for (std::size_t i = 0; i + sizeof kSignature <= have; ++i) {
            const void* hit = std::memchr(buf.data() + i, 'G', have - i - (sizeof kSignature - 1));
            if (!hit) break;
            i = static_cast<std::size_t>(static_cast<const unsigned char*>(hit) - buf.data());
            if (std::memcmp(buf.data() + i, kSignature, sizeof kSignature) == 0)
                walk_collection(fd.get(), base + i, file_bytes, len_size, ctx);
        }
        carried = std::min(kOverlap, have);
        std::memmove(buf.data(), buf.data() + have - carried, carried);
        offset += want;
    }
}

void check_heap_object(const FileContext& ctx, const HeapObjectRef& ref, const std::string& where) {
    const OwnedFd fd(open_file(ctx));
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) ctx.fail(Kind::unreadable, "file", std::string("cannot be examined: ") + std::strerror(errno));
    const auto file_bytes = static_cast<std::uint64_t>(st.st_size);
    const std::string object = "object " + std::to_string(ref.index) + " of the global heap collection at byte " +
                               std::to_string(ref.collection);
    unsigned char signature[sizeof kSignature] = {};
    if (ref.collection > file_bytes || sizeof signature > file_bytes - ref.collection ||
        !read_at(fd.get(), ref.collection, signature, sizeof signature) ||
        std::memcmp(signature, kSignature, sizeof signature) != 0)
        ctx.fail(Kind::corrupt, where, "its string descriptor points at " + object + ", where the file holds no collection");
    const auto objects = walk_collection(fd.get(), ref.collection, file_bytes, ref.length_size, ctx);
    const auto found = objects.find(ref.index);
    if (found == objects.end())
        ctx.fail(Kind::corrupt, where, "its string descriptor points at " + object + ", which the collection does not hold");
    if (found->second != ref.bytes)
        ctx.fail(Kind::corrupt, where, "its string descriptor gives " + std::to_string(ref.bytes) + " bytes for " + object +
                                           ", which holds " + std::to_string(found->second));
}

}  // namespace moe::golden::h5
