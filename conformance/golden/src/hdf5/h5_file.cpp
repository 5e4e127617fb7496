#include "hdf5/h5_file.hpp"

#include <H5PLpublic.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "hdf5/h5_global_heap.hpp"

namespace moe::golden::h5 {

namespace fs = std::filesystem;

namespace {

// File access: use file locking where the file system supports it, and close everything with
// the file so that it is complete on disk before the rename.
H5Id file_access_plist(const FileContext& ctx, Kind kind) {
    H5Id fapl = own(H5Pcreate(H5P_FILE_ACCESS), H5Pclose, ctx, kind, "file", "cannot create property list");
    check(H5Pset_file_locking(fapl.get(), true, true), ctx, kind, "file", "cannot set file locking");
    check(H5Pset_fclose_degree(fapl.get(), H5F_CLOSE_STRONG), ctx, kind, "file", "cannot set close degree");
    return fapl;
}

const char* file_kind(mode_t mode) {
    if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISSOCK(mode)) return "a socket";
    return "not a regular file";
}

}  // namespace

OpenedFile open_file_for_reading(const FileContext& ctx) {
    // A filter plugin is code from outside the file; the format's filters are built in.
    H5PLset_loading_state(0);
    struct stat st {};
    if (::stat(ctx.file.c_str(), &st) != 0) {
        if (errno == ENOENT || errno == ENOTDIR) ctx.fail(Kind::unreadable, "file", "does not exist");
        ctx.fail(Kind::unreadable, "file", std::string("cannot be examined: ") + std::strerror(errno));
    }
    if (S_ISDIR(st.st_mode)) ctx.fail(Kind::unreadable, "file", "is a directory");
    if (!S_ISREG(st.st_mode))
        ctx.fail(Kind::refused, "file", std::string("is ") + file_kind(st.st_mode) + ", not a regular file");
    const htri_t is_hdf5 = H5Fis_hdf5(ctx.file.c_str());
    if (is_hdf5 < 0) ctx.fail(Kind::unreadable, "file", "cannot be opened" + hdf5_detail());
    if (is_hdf5 == 0) ctx.fail(Kind::unreadable, "file", "is not an HDF5 file");
    H5Id fapl = file_access_plist(ctx, Kind::unreadable);
    OpenedFile f;
    f.file = own(H5Fopen(ctx.file.c_str(), H5F_ACC_RDONLY, fapl.get()), H5Fclose, ctx, Kind::unreadable, "file",
                 "cannot be opened as HDF5");
    f.bytes = static_cast<std::uint64_t>(st.st_size);
    check_global_heaps(ctx, f.bytes, length_size(f.file, ctx));
    return f;
}

H5Id create_file(const fs::path& path, const FileContext& ctx) {
    H5Id fcpl = own(H5Pcreate(H5P_FILE_CREATE), H5Pclose, ctx, Kind::unreadable, "file",
                    "cannot create property list");
    // The root group is created from the file creation list: no timestamps there either.
    check(H5Pset_obj_track_times(fcpl.get(), false), ctx, Kind::unreadable, "file", "cannot set properties");
    H5Id fapl = file_access_plist(ctx, Kind::unreadable);
    // The newest format: superblock, object headers and chunk indexes all carry checksums.
    check(H5Pset_libver_bounds(fapl.get(), H5F_LIBVER_LATEST, H5F_LIBVER_LATEST), ctx, Kind::unreadable, "file",
          "cannot set the format bounds");
    return own(H5Fcreate(path.c_str(), H5F_ACC_EXCL, fcpl.get(), fapl.get()), H5Fclose, ctx, Kind::unreadable,
               "file", "cannot create temporary file '" + path.string() + "'");
}

H5Id open_root(const H5Id& file, const FileContext& ctx) {
    return own(H5Gopen2(file.get(), "/", H5P_DEFAULT), H5Gclose, ctx, Kind::malformed, "group /",
               "cannot open the root group");
}

unsigned superblock_version(const H5Id& file, const FileContext& ctx) {
    H5F_info2_t info;
    check(H5Fget_info2(file.get(), &info), ctx, Kind::malformed, "file", "cannot read the superblock");
    return info.super.version;
}

}  // namespace moe::golden::h5
