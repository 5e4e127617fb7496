#include "hdf5/h5_file.hpp"

#include <system_error>

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

}  // namespace

H5Id open_file_for_reading(const FileContext& ctx) {
    std::error_code ec;
    if (!fs::exists(ctx.file, ec)) ctx.fail(Kind::unreadable, "file", "does not exist");
    if (fs::is_directory(ctx.file, ec)) ctx.fail(Kind::unreadable, "file", "is a directory");
    const htri_t is_hdf5 = H5Fis_hdf5(ctx.file.c_str());
    if (is_hdf5 < 0) ctx.fail(Kind::unreadable, "file", "cannot be opened" + hdf5_detail());
    if (is_hdf5 == 0) ctx.fail(Kind::unreadable, "file", "is not an HDF5 file");
    H5Id fapl = file_access_plist(ctx, Kind::unreadable);
    return own(H5Fopen(ctx.file.c_str(), H5F_ACC_RDONLY, fapl.get()), H5Fclose, ctx, Kind::unreadable, "file",
               "cannot be opened as HDF5");
}

H5Id create_file(const fs::path& path, const FileContext& ctx) {
    H5Id fcpl = own(H5Pcreate(H5P_FILE_CREATE), H5Pclose, ctx, Kind::unreadable, "file",
                    "cannot create property list");
    // The root group is created from the file creation list: no timestamps there either.
    check(H5Pset_obj_track_times(fcpl.get(), false), ctx, Kind::unreadable, "file", "cannot set properties");
    H5Id fapl = file_access_plist(ctx, Kind::unreadable);
    return own(H5Fcreate(path.c_str(), H5F_ACC_EXCL, fcpl.get(), fapl.get()), H5Fclose, ctx, Kind::unreadable,
               "file", "cannot create temporary file '" + path.string() + "'");
}

H5Id open_root(const H5Id& file, const FileContext& ctx) {
    return own(H5Gopen2(file.get(), "/", H5P_DEFAULT), H5Gclose, ctx, Kind::malformed, "group /",
               "cannot open the root group");
}

}  // namespace moe::golden::h5
