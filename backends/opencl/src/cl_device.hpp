#pragma once
// Finding OpenCL devices and picking one from a user's device string.
#include <optional>
#include <string>
#include <vector>

#include "cl_common.hpp"

namespace moe::backends::ocl {

struct DeviceInfo {
    cl_platform_id platform = nullptr;
    cl_device_id device = nullptr;
    std::size_t platform_index = 0, device_index = 0;
    std::string platform_name, name, version, driver_version;  // driver: CL_DRIVER_VERSION
    cl_device_type type = 0;
    cl_uint compute_units = 0;
    std::size_t max_work_group = 0;
    std::size_t max_item_sizes[3] = {0, 0, 0};
    cl_ulong local_mem = 0, global_mem = 0;
    cl_uint float_vector_width = 1;  // CL_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT
    bool fp16 = false, fp64 = false;
};

struct Devices {
    std::vector<DeviceInfo> list;
    std::string error;  // set when list is empty: why ("no OpenCL platform found (...)")
};

Devices enumerate_devices();

// spec "": the first GPU, else the first device; "P:D": platform P, device D; otherwise a
// case-insensitive substring of the device or platform name. No match: nullopt and `why`.
std::optional<DeviceInfo> select_device(const Devices& d, const std::string& spec, std::string& why);

// "0:0 pthread-... (Portable Computing Language), OpenCL 3.0 ..., CPU, 2 compute units, ..."
std::string describe(const DeviceInfo& d);

}  // namespace moe::backends::ocl
