// A variable-length string attribute is stored as a descriptor (length, global heap collection,
// object index), and HDF5 1.10 follows it unchecked: in a file without metadata checksums (the
// old format h5py writes by default) one damaged byte there crashed the reader
// (tests/golden/fuzz-regressions/sigsegv-old-format-string-descriptor.h5). The reader now checks
// every descriptor against its collection before HDF5 reads the string, in this process.
#include <doctest/doctest.h>

#include "golden_test_support.hpp"

using namespace moe::test::golden_support;

namespace {

// An old-format copy of the small case whose root attribute 'format' ("moe-golden", 10 bytes) has
// its descriptor edited by `edit`: Python over the file's bytes `b`, the descriptor at `at`, the
// first global heap collection at `heap`.
fs::path damaged(const TempDir& dir, const std::string& name, const std::string& edit) {
    write_golden(dir / "c.h5", small_case());
    const fs::path p = dir / name;
    REQUIRE(python(dir, h5py_copy(dir / "c.h5", p, "libver='earliest'") +
                        "b = bytearray(open(" + py_str(p) + ", 'rb').read())\n"
                        "heap = b.find(b'GCOL')\n"
                        "at = b.find((10).to_bytes(4, 'little') + heap.to_bytes(8, 'little'))\n"
                        "assert heap > 0 and at > 0\n" +
                        edit + "\nopen(" + py_str(p) + ", 'wb').write(b)\n") == 0);
    return p;
}

std::string corrupt(const fs::path& p) {
    return file_error([&] { read_golden(p); }, FileError::Kind::corrupt);
}

}  // namespace

TEST_CASE("a string descriptor that its global heap does not back is refused, naming the attribute") {
    TempDir dir;
    // An object index the collection does not hold: HDF5 read through a wild pointer.
    std::string msg = corrupt(damaged(dir, "index.h5", "b[at + 12] ^= 0x40"));
    CHECK(has(msg, "root attribute 'format'"));
    CHECK(has(msg, "which the collection does not hold"));
    // A length other than the object's: HDF5 copied the object into a buffer of the claimed length.
    for (const char* length : {"9", "11", "0xFFFFFF0A"}) {
        CAPTURE(length);
        msg = corrupt(damaged(dir, "length.h5", std::string("b[at:at + 4] = (") + length + ").to_bytes(4, 'little')"));
        CHECK(has(msg, "root attribute 'format'"));
        CHECK(has(msg, "bytes for object"));
        CHECK(has(msg, "which holds 10"));
    }
    // A collection address where the file holds none, or past its end.
    for (const char* address : {"heap + 8", "len(b) + 4096", "(1 << 63) + 5"}) {
        CAPTURE(address);
        msg = corrupt(damaged(dir, "address.h5", std::string("b[at + 4:at + 12] = (") + address + ").to_bytes(8, 'little')"));
        CHECK(has(msg, "root attribute 'format'"));
        CHECK(has(msg, "where the file holds no collection"));
    }
}

TEST_CASE("the file that crashed HDF5 through a string descriptor is refused by an unisolated reader") {
    const fs::path file = fs::path(MOE_SOURCE_DIR) / "tests/golden/fuzz-regressions/sigsegv-old-format-string-descriptor.h5";
    const std::string msg = corrupt(file);
    CHECK(has(msg, "root attribute 'routing_layout'"));
    CHECK(has(msg, "object 33554439 of the global heap collection at byte 2048"));
}

TEST_CASE("intact descriptors read: the old format, a user block before the superblock, an empty string") {
    TempDir dir;
    write_golden(dir / "c.h5", small_case());
    for (const char* options : {"libver='earliest'", "libver='earliest', userblock_size=512", "libver='latest', userblock_size=1024"}) {
        CAPTURE(options);
        const fs::path p = dir / "copy.h5";
        REQUIRE(python(dir, h5py_copy(dir / "c.h5", p, options) + "with h5py.File(" + py_str(p) +
                                ", 'r+') as f: f.attrs['description'] = ''\n") == 0);
        const GoldenCase c = read_golden(p);
        CHECK(c.problem.name == small_case().problem.name);
        CHECK(c.description.empty());
    }
}
