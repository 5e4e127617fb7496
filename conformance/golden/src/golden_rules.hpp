#pragma once
// The format's names and the case-level rules that reader and writer share
// (spec/golden-format.md).
#include <map>
#include <string>

#include "hdf5/h5_error.hpp"
#include "moe/golden/golden_file.hpp"
#include "moe/spec/problem.hpp"

namespace moe::golden {

inline constexpr const char* kInputsGroup = "inputs";
inline constexpr const char* kOutputsGroup = "outputs";
inline constexpr const char* kStagesGroup = "stages";
inline constexpr const char* kOutputName = "output";
inline constexpr const char* kElementTypeAttr = "element_type";

std::string where_root_attr(const std::string& name);                              // "root attribute 'x'"
std::string where_attr(const std::string& name, const std::string& object_path);  // "attribute 'x' of /p"

bool is_known_input(const std::string& name);
std::string known_inputs_list();  // "hidden_states, routing_weights, ..."

// A dataset name usable as a single link in a group.
void check_dataset_name(const std::string& group_path, const std::string& name, const h5::FileContext& ctx);

// Every tensor of /outputs or /stages is f64.
void check_outputs_f64(const std::map<std::string, Tensor>& tensors, const std::string& group_path,
                       const h5::FileContext& ctx);

// Every /inputs name is one of the op's inputs.
void check_inputs_known(const std::map<std::string, Tensor>& inputs, const h5::FileContext& ctx);

// /outputs/output is the op's result, so it has the shape of hidden_states; /outputs/output_dense
// and /outputs/bound_* have the shape of /outputs/output.
void check_output_shape(const GoldenCase& c, const h5::FileContext& ctx);

// resolve(a), or malformed ("op attributes") when the attributes do not resolve.
ResolvedParams resolve_or_fail(const OpAttributes& a, const h5::FileContext& ctx);

}  // namespace moe::golden
