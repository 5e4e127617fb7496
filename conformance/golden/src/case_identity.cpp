#include <map>
#include <optional>

#include "golden_rules.hpp"
#include "hdf5/h5_attributes.hpp"
#include "hdf5/h5_file.hpp"
#include "moe/golden/manifest.hpp"
#include "moe/golden/suite.hpp"
#include "moe/spec/error.hpp"
#include "moe/spec/problem.hpp"

namespace moe::golden {

std::string read_case_name(const std::string& file) {
    const h5::QuietHdf5 quiet;
    const h5::FileContext ctx{file};
    h5::OpenedFile f = h5::open_file_for_reading(ctx);
    h5::H5Id root = h5::open_root(f.file, ctx);
    const auto format = h5::read_string_attr(root.get(), "format", ctx, where_root_attr("format"));
    if (!format || *format != kFormatName) ctx.malformed(where_root_attr("format"), "not a golden file");
    const auto name = h5::read_string_attr(root.get(), "case", ctx, where_root_attr("case"));
    if (!name) ctx.malformed(where_root_attr("case"), "missing (required)");
    if (name->empty()) ctx.malformed(where_root_attr("case"), "empty (required: the case's name)");  // as read_golden
    return *name;
}

CaseIdentity identify_case(const std::string& file) {
    CaseIdentity id;
    id.file = file;
    id.case_name = read_case_name(file);  // the file closed before it is hashed
    id.sha256 = sha256_file(file);
    return id;
}

std::vector<std::string> select_files(const std::vector<std::string>& files, const std::vector<std::string>& filters,
                                      const std::string& tier, std::vector<std::string>* names,
                                      const std::string& expert_type) {
    if (filters.empty() && tier.empty() && expert_type.empty() && !names) return files;
    std::vector<std::string> kept;
    if (names) names->clear();
    const auto keep_file = [&](const std::string& file, const std::string& name) {
        kept.push_back(file);
        if (names) names->push_back(name);
    };
    for (const auto& file : files) {
        std::optional<std::string> name, case_tier, case_type;
        try {
            const h5::QuietHdf5 quiet;
            const h5::FileContext ctx{file};
            h5::OpenedFile f = h5::open_file_for_reading(ctx);
            h5::H5Id root = h5::open_root(f.file, ctx);
            name = h5::read_string_attr(root.get(), "case", ctx, where_root_attr("case"));
            case_tier = h5::read_string_attr(root.get(), "tier", ctx, where_root_attr("tier"));
            if (!expert_type.empty())
                case_type = h5::read_string_attr(root.get(), "expert_type", ctx, where_root_attr("expert_type"));
        } catch (const std::exception&) {
            keep_file(file, "");  // unreadable: the full read names what is wrong
            continue;
        }
        if (!name) {
            keep_file(file, "");
            continue;
        }
        if (!tier.empty() && case_tier && !case_tier->empty() && !tier_includes(tier, *case_tier)) continue;
        // Another known type only: an unknown one stays in, for the full read to report.
        bool other_type = false;
        if (case_type) try {
                other_type = expert_type_name(parse_expert_type(*case_type)) != expert_type;
            } catch (const InputError&) {
            }
        if (other_type) continue;
        bool keep = filters.empty();
        // The name as stored, or as reports print it (printable): a name copied out of a report
        // or a repro line selects its case too.
        for (const auto& f : filters) keep = keep || case_glob_match(f, *name);
        if (keep) keep_file(file, printable(*name));
    }
    return kept;
}

std::optional<std::string> repeated_case_name(const std::vector<std::string>& files,
                                              const std::vector<std::string>& names) {
    std::map<std::string, std::string> first_file;
    for (std::size_t i = 0; i < files.size() && i < names.size(); ++i) {
        if (names[i].empty()) continue;  // unread: the full read reports the file
        const auto [at, fresh] = first_file.emplace(names[i], files[i]);
        if (!fresh)
            return "case name '" + names[i] + "' is in two files of the selection: '" + printable(at->second) + "' and '" +
                   printable(files[i]) + "' (each shard would run one, and their reports merge them)";
    }
    return std::nullopt;
}

}  // namespace moe::golden
