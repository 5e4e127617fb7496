#include "hdf5/h5_handles.hpp"

namespace moe::golden::h5 {

H5Id own(hid_t id, H5Id::Closer close, const FileContext& ctx, Kind kind, const std::string& where,
         const std::string& what) {
    if (id < 0) ctx.fail(kind, where, what + hdf5_detail());
    return H5Id(id, close);
}

void check(herr_t status, const FileContext& ctx, Kind kind, const std::string& where, const std::string& what) {
    if (status < 0) ctx.fail(kind, where, what + hdf5_detail());
}

bool link_exists(hid_t loc, const std::string& name) { return H5Lexists(loc, name.c_str(), H5P_DEFAULT) > 0; }

}  // namespace moe::golden::h5
