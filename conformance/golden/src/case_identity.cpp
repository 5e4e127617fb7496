#include "golden_rules.hpp"
#include "hdf5/h5_attributes.hpp"
#include "hdf5/h5_file.hpp"
#include "moe/golden/manifest.hpp"
#include "moe/golden/suite.hpp"

namespace moe::golden {

CaseIdentity identify_case(const std::string& file) {
    CaseIdentity id;
    id.file = file;
    {
        const h5::QuietHdf5 quiet;
        const h5::FileContext ctx{file};
        h5::OpenedFile f = h5::open_file_for_reading(ctx);
        h5::H5Id root = h5::open_root(f.file, ctx);
        const auto format = h5::read_string_attr(root.get(), "format", ctx, where_root_attr("format"));
        if (!format || *format != kFormatName) ctx.malformed(where_root_attr("format"), "not a golden file");
        const auto name = h5::read_string_attr(root.get(), "case", ctx, where_root_attr("case"));
        if (!name) ctx.malformed(where_root_attr("case"), "missing (required)");
        id.case_name = *name;
    }
    id.sha256 = sha256_file(file);
    return id;
}

}  // namespace moe::golden
