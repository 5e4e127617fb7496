#include "hdf5/h5_links.hpp"

#include <vector>

namespace moe::golden::h5 {

namespace {

// H5L_elink_traverse_t: called before an external link's file would be opened. Refusing makes
// the traversal fail; `op_data` records that this is why.
herr_t refuse_external_link(const char*, const char*, const char*, const char*, unsigned*, hid_t, void* op_data) {
    if (op_data) *static_cast<bool*>(op_data) = true;
    return -1;
}

thread_local bool external_link_refused = false;

std::string external_target(hid_t parent, const std::string& name, std::size_t size) {
    std::vector<char> buf(size + 1, '\0');
    if (H5Lget_val(parent, name.c_str(), buf.data(), size, H5P_DEFAULT) < 0) return "(unreadable target)";
    const char* file = nullptr;
    const char* path = nullptr;
    unsigned flags = 0;
    if (H5Lunpack_elink_val(buf.data(), size, &flags, &file, &path) < 0 || !file || !path) return "(unreadable target)";
    return "'" + std::string(file) + "', object '" + std::string(path) + "'";
}

}  // namespace

H5Id in_file_link_access(const FileContext& ctx) {
    H5Id lapl = own(H5Pcreate(H5P_LINK_ACCESS), H5Pclose, ctx, Kind::unreadable, "file", "cannot create property list");
    check(H5Pset_elink_cb(lapl.get(), refuse_external_link, &external_link_refused), ctx, Kind::unreadable, "file",
          "cannot set link access");
    check(H5Pset_nlinks(lapl.get(), kMaxSoftLinks), ctx, Kind::unreadable, "file", "cannot set link access");
    return lapl;
}

bool check_link(hid_t parent, const std::string& name, const FileContext& ctx, const std::string& where) {
    const htri_t exists = H5Lexists(parent, name.c_str(), H5P_DEFAULT);
    if (exists < 0) ctx.malformed(where, "cannot look up the link" + hdf5_detail());
    if (exists == 0) return false;
    H5L_info_t info;
    check(H5Lget_info(parent, name.c_str(), &info, H5P_DEFAULT), ctx, Kind::malformed, where,
          "cannot read the link");
    switch (info.type) {
        case H5L_TYPE_HARD: return true;
        case H5L_TYPE_SOFT: {
            // The target must exist and be reachable without leaving the file.
            H5Id lapl = in_file_link_access(ctx);
            external_link_refused = false;
            const htri_t target = H5Oexists_by_name(parent, name.c_str(), lapl.get());
            if (external_link_refused)
                ctx.fail(Kind::refused, where, "is a soft link that leaves the file through an external link (" +
                                               std::string(ctx.role) + "s must hold their data themselves)");
            H5Eclear2(H5E_DEFAULT);
            if (target <= 0) ctx.malformed(where, "is a soft link whose target does not exist in the file");
            return true;
        }
        case H5L_TYPE_EXTERNAL:
            ctx.fail(Kind::refused, where, "is an external link to file " + external_target(parent, name, info.u.val_size) +
                                               " (" + std::string(ctx.role) + "s must hold their data themselves)");
        default:
            ctx.fail(Kind::refused, where, "is a user-defined link (type " + std::to_string(static_cast<int>(info.type)) +
                                               "); " + std::string(ctx.role) + "s use hard links only");
    }
}

H5Id open_in_file(hid_t parent, const std::string& name, const FileContext& ctx, const std::string& where) {
    H5Id lapl = in_file_link_access(ctx);
    external_link_refused = false;
    const hid_t id = H5Oopen(parent, name.c_str(), lapl.get());
    if (id < 0 && external_link_refused)
        ctx.fail(Kind::refused, where, "leads out of the file through an external link" + hdf5_detail());
    return own(id, H5Oclose, ctx, Kind::malformed, where, "cannot open");
}

}  // namespace moe::golden::h5
