// Writing golden files (spec/golden-format.md, "Writing"): the format's rules on top of the
// HDF5 layer in hdf5/.
#include <string_view>

#include "compressed_inputs.hpp"
#include "dataset_writing.hpp"
#include "golden_rules.hpp"
#include "hdf5/atomic_file.hpp"
#include "hdf5/h5_attributes.hpp"
#include "hdf5/h5_datasets.hpp"
#include "hdf5/h5_file.hpp"
#include "moe/golden/golden_file.hpp"

namespace moe::golden {

namespace {

using h5::FileContext;
using h5::H5Id;
using h5::Kind;

void write_root_string(hid_t root, const std::string& name, std::string_view value, const FileContext& ctx) {
    h5::write_string_attr(root, name, std::string(value), ctx, where_root_attr(name));
}
void write_root_i64(hid_t root, const std::string& name, std::int64_t v, const FileContext& ctx) {
    h5::write_i64_attr(root, name, v, ctx, where_root_attr(name));
}
void write_root_u64(hid_t root, const std::string& name, std::uint64_t v, const FileContext& ctx) {
    h5::write_u64_attr(root, name, v, ctx, where_root_attr(name));
}
void write_root_u8(hid_t root, const std::string& name, std::uint8_t v, const FileContext& ctx) {
    h5::write_u8_attr(root, name, v, ctx, where_root_attr(name));
}
void write_root_f64(hid_t root, const std::string& name, double v, const FileContext& ctx) {
    h5::write_f64_attr(root, name, v, ctx, where_root_attr(name));
}

void write_root_attributes(hid_t root, const GoldenCase& c, const ResolvedParams& r, const FileContext& ctx) {
    const OpAttributes& a = c.problem.attributes;
    write_root_string(root, "format", kFormatName, ctx);
    write_root_i64(root, "format_version", format_version_for(c.problem.inputs), ctx);
    write_root_string(root, "case", c.problem.name, ctx);
    write_root_string(root, "expert_type", expert_type_name(a.expert_type), ctx);
    write_root_string(root, "convention", convention_name(a.convention), ctx);
    write_root_f64(root, "expert_alpha", a.expert_alpha, ctx);
    write_root_f64(root, "expert_beta", a.expert_beta, ctx);
    if (a.gate_idx) write_root_i64(root, "gate_idx", *a.gate_idx, ctx);
    write_root_f64(root, "swish_beta", r.swish_beta, ctx);
    write_root_f64(root, "clamp_limit", r.clamp_limit, ctx);
    write_root_i64(root, "gate_lane", r.gate_lane, ctx);
    write_root_string(root, "weight_layout", weight_layout_name(r.weight_layout), ctx);
    write_root_string(root, "routing_layout", routing_layout_name(r.routing_layout), ctx);
    if (c.seed) write_root_u64(root, "seed", *c.seed, ctx);
    if (!c.generator.empty()) write_root_string(root, "generator", c.generator, ctx);
    if (!c.tier.empty()) write_root_string(root, "tier", c.tier, ctx);
    if (!c.description.empty()) write_root_string(root, "description", c.description, ctx);
    write_root_u8(root, "exact", c.exact ? 1 : 0, ctx);
}

void check_case_for_writing(const GoldenCase& c, const FileContext& ctx) {
    check_inputs_known(c.problem.inputs, ctx);
    check_outputs_f64(c.outputs, "/outputs", ctx);
    check_outputs_f64(c.stages, "/stages", ctx);
    for (const auto& [name, t] : c.outputs) check_dataset_name("/outputs", name, ctx);
    for (const auto& [name, t] : c.stages) check_dataset_name("/stages", name, ctx);
    check_output_shape(c, ctx);
}

void write_contents(const std::filesystem::path& tmp, const GoldenCase& c, const ResolvedParams& r,
                    const FileContext& ctx) {
    H5Id file = h5::create_file(tmp, ctx);
    {
        H5Id root = h5::open_root(file, ctx);
        write_root_attributes(root.get(), c, r, ctx);
        write_tensor_group(root.get(), kInputsGroup, c.problem.inputs, ctx, group_sizes(c.problem.inputs, ctx));
        if (!c.outputs.empty()) write_tensor_group(root.get(), kOutputsGroup, c.outputs, ctx);
        if (!c.stages.empty()) write_tensor_group(root.get(), kStagesGroup, c.stages, ctx);
    }
    if (!file.close())
        ctx.fail(Kind::unreadable, "file", "cannot finish writing '" + tmp.string() + "'" + h5::hdf5_detail());
}

}  // namespace

void write_golden(const std::filesystem::path& file, const GoldenCase& c) {
    const h5::QuietHdf5 quiet;
    const FileContext ctx{file};
    check_case_for_writing(c, ctx);
    const ResolvedParams r = resolve_or_fail(c.problem.attributes, ctx);

    AtomicFile out(file);
    write_contents(out.temp_path(), c, r, ctx);
    out.commit(ctx);
}

}  // namespace moe::golden
