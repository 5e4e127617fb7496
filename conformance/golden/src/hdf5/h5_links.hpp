#pragma once
// Links: a golden file's data lives in the file itself. Every object the reader opens is reached
// through links checked here first: hard links, or soft links whose target is in the same file.
// External links (and soft links that pass through one) and user-defined links are refused, and
// every traversal uses a link access list on which external links are never followed.
#include <hdf5.h>

#include <string>

#include "hdf5/h5_handles.hpp"

namespace moe::golden::h5 {

// At most this many soft links are followed in one traversal.
inline constexpr std::size_t kMaxSoftLinks = 8;

// A link access property list that never follows an external link (the traversal fails) and
// follows at most kMaxSoftLinks soft links.
H5Id in_file_link_access(const FileContext& ctx);

// Checks link `name` of `parent` (a single link name, no path): refused when it is an external
// or user-defined link, or a soft link that leaves the file; malformed when it dangles. Returns
// false when there is no link of that name.
bool check_link(hid_t parent, const std::string& name, const FileContext& ctx, const std::string& where);

// Opens the object link `name` of `parent` leads to, after check_link, never leaving the file.
H5Id open_in_file(hid_t parent, const std::string& name, const FileContext& ctx, const std::string& where);

}  // namespace moe::golden::h5
