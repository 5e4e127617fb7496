// Reading golden files (spec/golden-format.md): the format's rules on top of the HDF5 layer in
// hdf5/. Everything leaves as FileError, naming the file and the dataset or attribute at fault.
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "compressed_inputs.hpp"
#include "dataset_reading.hpp"
#include "golden_rules.hpp"
#include "hdf5/h5_attributes.hpp"
#include "hdf5/h5_datasets.hpp"
#include "hdf5/h5_file.hpp"
#include "hdf5/h5_storage.hpp"
#include "hdf5/h5_types.hpp"
#include "moe/golden/golden_file.hpp"
#include "moe/spec/error.hpp"

namespace moe::golden {

std::string shortest_decimal(double v) {
    char buf[40];
    for (int precision = 15; precision <= 17; ++precision) {
        std::snprintf(buf, sizeof buf, "%.*g", precision, v);
        if (std::strtod(buf, nullptr) == v) break;
    }
    return buf;
}

namespace {

using h5::FileContext;
using h5::H5Id;
using h5::Kind;

// ----------------------------------------------------------------------------------------------
// Root attributes

std::optional<std::int64_t> read_root_i64(hid_t root, const std::string& name, const FileContext& ctx) {
    return h5::read_i64_attr(root, name, ctx, where_root_attr(name));
}
std::optional<std::uint64_t> read_root_u64(hid_t root, const std::string& name, const FileContext& ctx) {
    return h5::read_u64_attr(root, name, ctx, where_root_attr(name));
}
std::optional<double> read_root_f64(hid_t root, const std::string& name, const FileContext& ctx) {
    return h5::read_f64_attr(root, name, ctx, where_root_attr(name));
}
std::optional<std::string> read_root_string(hid_t root, const std::string& name, const FileContext& ctx) {
    return h5::read_string_attr(root, name, ctx, where_root_attr(name));
}

std::string require_root_string(hid_t root, const std::string& name, const FileContext& ctx) {
    std::optional<std::string> v = read_root_string(root, name, ctx);
    if (!v) ctx.malformed(where_root_attr(name), "missing (required)");
    return *v;
}

template <class F>
auto parse_attr(const std::string& name, const std::string& value, F parse, const FileContext& ctx) {
    try {
        return parse(value);
    } catch (const InputError& e) {
        ctx.malformed(where_root_attr(name), e.what());
    }
}

std::int64_t check_format(hid_t root, const FileContext& ctx) {
    const std::optional<std::string> found = read_root_string(root, "format", ctx);
    if (!found) ctx.malformed(where_root_attr("format"), "missing (required; not a golden file?)");
    const std::string& format = *found;
    if (format != kFormatName)
        ctx.malformed(where_root_attr("format"),
                      "is '" + format + "', expected '" + kFormatName + "' (not a golden file)");
    const std::optional<std::int64_t> version = read_root_i64(root, "format_version", ctx);
    if (!version) ctx.malformed(where_root_attr("format_version"), "missing (required)");
    if (*version < 1 || *version > kFormatVersion)
        ctx.malformed(where_root_attr("format_version"),
                      "is " + std::to_string(*version) + "; this reader understands versions 1 to " +
                          std::to_string(kFormatVersion) + " only");
    return *version;
}

OpAttributes read_op_attributes(hid_t root, const FileContext& ctx) {
    const ExpertType type = parse_attr("expert_type", require_root_string(root, "expert_type", ctx),
                                       parse_expert_type, ctx);
    const Convention conv = parse_attr("convention", require_root_string(root, "convention", ctx),
                                       parse_convention, ctx);
    OpAttributes a = default_attributes(type, conv);
    a.gate_idx = read_root_i64(root, "gate_idx", ctx);  // absent means absent, not the default
    if (auto v = read_root_f64(root, "expert_alpha", ctx)) a.expert_alpha = *v;
    if (auto v = read_root_f64(root, "expert_beta", ctx)) a.expert_beta = *v;
    return a;
}

[[noreturn]] void fail_resolved(const std::string& name, const std::string& got, const std::string& expected,
                                const FileContext& ctx) {
    ctx.malformed(where_root_attr(name), "is " + got + " but the op attributes resolve to " + expected);
}

// The resolved-parameter attributes are a convenience for readers that do not implement
// resolve(); when present they must say what resolve() says.
void check_resolved(hid_t root, const OpAttributes& a, const FileContext& ctx) {
    const std::optional<double> swish = read_root_f64(root, "swish_beta", ctx);
    const std::optional<double> clamp = read_root_f64(root, "clamp_limit", ctx);
    const std::optional<std::int64_t> lane = read_root_i64(root, "gate_lane", ctx);
    const std::optional<std::string> wl = read_root_string(root, "weight_layout", ctx);
    const std::optional<std::string> rl = read_root_string(root, "routing_layout", ctx);
    if (!swish && !clamp && !lane && !wl && !rl) return;
    const ResolvedParams r = resolve_or_fail(a, ctx);
    if (swish && !(*swish == r.swish_beta))
        fail_resolved("swish_beta", shortest_decimal(*swish), shortest_decimal(r.swish_beta), ctx);
    if (clamp && !(*clamp == r.clamp_limit))
        fail_resolved("clamp_limit", shortest_decimal(*clamp), shortest_decimal(r.clamp_limit), ctx);
    if (lane && *lane != r.gate_lane)
        fail_resolved("gate_lane", std::to_string(*lane), std::to_string(r.gate_lane), ctx);
    if (wl && *wl != weight_layout_name(r.weight_layout))
        fail_resolved("weight_layout", "'" + *wl + "'", "'" + std::string(weight_layout_name(r.weight_layout)) + "'",
                      ctx);
    if (rl && *rl != routing_layout_name(r.routing_layout))
        fail_resolved("routing_layout", "'" + *rl + "'",
                      "'" + std::string(routing_layout_name(r.routing_layout)) + "'", ctx);
}

void read_case_metadata(hid_t root, GoldenCase& c, const FileContext& ctx) {
    c.seed = read_root_u64(root, "seed", ctx);
    c.generator = read_root_string(root, "generator", ctx).value_or("");
    c.tier = read_root_string(root, "tier", ctx).value_or("");
    c.description = read_root_string(root, "description", ctx).value_or("");
    const std::int64_t exact = read_root_i64(root, "exact", ctx).value_or(0);
    if (exact != 0 && exact != 1) ctx.malformed(where_root_attr("exact"), "must be 0 or 1, is " + std::to_string(exact));
    c.exact = exact == 1;
}

// ----------------------------------------------------------------------------------------------
// Datasets

std::optional<H5Id> open_group(hid_t root, const std::string& name, const FileContext& ctx) {
    return h5::open_group(root, name, ctx, "group /" + name);
}

bool require_output_missing(const ReadOptions& o, const std::vector<PlannedDataset>& outputs) {
    if (!o.require_output) return false;
    for (const PlannedDataset& p : outputs)
        if (p.name == kOutputName) return false;
    return true;
}

}  // namespace

std::uint64_t default_max_memory() {
    std::uint64_t budget = std::uint64_t{8} << 30;
    const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
    if (pages > 0 && page > 0) budget = std::min(budget, static_cast<std::uint64_t>(pages) / 4 * 3 * page);
    return budget;
}

std::string readable_bytes(double bytes) {
    constexpr double kKiB = 1024.0, kMiB = 1024.0 * kKiB, kGiB = 1024.0 * kMiB;
    char buf[64];
    if (bytes < kKiB)
        std::snprintf(buf, sizeof buf, "%.0f bytes", bytes);
    else if (bytes < kMiB)
        std::snprintf(buf, sizeof buf, "%.1f KiB", bytes / kKiB);
    else if (bytes < kGiB)
        std::snprintf(buf, sizeof buf, "%.1f MiB", bytes / kMiB);
    else
        std::snprintf(buf, sizeof buf, bytes < 0x1p63 ? "%.1f GiB" : "%.3g GiB", bytes / kGiB);
    return buf;
}

GoldenCase read_golden(const std::filesystem::path& file, bool require_output) {
    ReadOptions o;
    o.require_output = require_output;
    return read_golden(file, o);
}

GoldenCase read_golden(const std::filesystem::path& file, const ReadOptions& options) {
    const h5::QuietHdf5 quiet;
    const FileContext ctx{file};
    h5::OpenedFile f = h5::open_file_for_reading(ctx);
    H5Id root = h5::open_root(f.file, ctx);
    const std::int64_t version = check_format(root.get(), ctx);

    GoldenCase c;
    c.problem.name = require_root_string(root.get(), "case", ctx);
    // A case without a name could never be answered (a result file's `case` may not be empty) nor
    // told apart in reports, expectation files and repro lines.
    if (c.problem.name.empty()) ctx.malformed(where_root_attr("case"), "empty (required: the case's name)");
    c.problem.attributes = read_op_attributes(root.get(), ctx);
    check_resolved(root.get(), c.problem.attributes, ctx);
    read_case_metadata(root.get(), c, ctx);

    // Every dataset is checked (links, storage, filters, size) before any data is read.
    std::optional<H5Id> inputs = open_group(root.get(), kInputsGroup, ctx);
    if (!inputs) ctx.malformed("group /inputs", "missing (required)");
    std::vector<PlannedDataset> planned_inputs = plan_group(*inputs, kInputsGroup, f.bytes, ctx);
    std::vector<PlannedDataset> planned_outputs, planned_stages;
    if (std::optional<H5Id> outputs = open_group(root.get(), kOutputsGroup, ctx))
        planned_outputs = plan_group(*outputs, kOutputsGroup, f.bytes, ctx);
    if (std::optional<H5Id> stages = open_group(root.get(), kStagesGroup, ctx))
        planned_stages = plan_group(*stages, kStagesGroup, f.bytes, ctx);
    std::vector<const PlannedDataset*> all;
    for (const auto* group : {&planned_inputs, &planned_outputs, &planned_stages})
        for (const PlannedDataset& p : *group) all.push_back(&p);
    for (const PlannedDataset* p : all) {
        if (p->path.rfind("/inputs/", 0) == 0 && !is_known_input(p->name))
            ctx.malformed("dataset " + p->path, "unknown input name (expected one of " + known_inputs_list() + ")");
        if (p->path.rfind("/inputs/", 0) != 0 && p->dtype != DType::f64)
            ctx.malformed("dataset " + p->path, "must be f64, is " + std::string(dtype_name(p->dtype)));
    }
    if (require_output_missing(options, planned_outputs))
        ctx.malformed("dataset /outputs/output", "missing (required: the reference result)");
    check_memory(all, options.max_memory ? options.max_memory : default_max_memory(), ctx);
    if (options.storage) {
        options.storage->superblock_version = h5::superblock_version(f.file, ctx);
        options.storage->metadata_checksums = options.storage->superblock_version >= 2;
        options.storage->file_bytes = f.bytes;
        options.storage->datasets.clear();
        for (const PlannedDataset* p : all) options.storage->datasets.push_back(p->storage);
    }

    // A compressed weight's group_size, checked against the declared shapes before any data is
    // read; on an output or a stage it means nothing, and a writer that put it there is wrong.
    std::map<std::string, std::int64_t> declared_group_sizes;
    std::map<std::string, DeclaredInput> declared_inputs;
    for (const PlannedDataset& p : planned_inputs) {
        declared_inputs[p.name] = {p.dtype, p.shape};
        if (auto gs = h5::read_i64_attr(p.dset.get(), kGroupSizeAttr, ctx, where_attr(kGroupSizeAttr, p.path)))
            declared_group_sizes[p.name] = *gs;
    }
    check_group_sizes(declared_inputs, declared_group_sizes, ctx);
    for (const auto* group : {&planned_outputs, &planned_stages})
        for (const PlannedDataset& p : *group)
            if (h5::has_attr(p.dset.get(), kGroupSizeAttr, ctx, where_attr(kGroupSizeAttr, p.path)))
                ctx.malformed(where_attr(kGroupSizeAttr, p.path), "applies to compressed weights under /inputs only");

    c.problem.inputs = read_planned_group(planned_inputs, ctx);
    c.outputs = read_planned_group(planned_outputs, ctx);
    c.stages = read_planned_group(planned_stages, ctx);
    check_inputs_known(c.problem.inputs, ctx);
    check_inputs_for_version(c.problem.inputs, version, ctx);
    check_outputs_f64(c.outputs, "/outputs", ctx);
    check_outputs_f64(c.stages, "/stages", ctx);
    check_output_shape(c, ctx);
    return c;
}

}  // namespace moe::golden
