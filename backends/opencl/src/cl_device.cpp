#include "cl_device.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>

namespace moe::backends::ocl {

namespace {

std::string platform_string(cl_platform_id p, cl_platform_info what) {
    std::size_t n = 0;
    if (clGetPlatformInfo(p, what, 0, nullptr, &n) != CL_SUCCESS || n == 0) return "";
    std::string s(n, '\0');
    clGetPlatformInfo(p, what, n, s.data(), nullptr);
    while (!s.empty() && s.back() == '\0') s.pop_back();
    return s;
}

std::string device_string(cl_device_id d, cl_device_info what) {
    std::size_t n = 0;
    if (clGetDeviceInfo(d, what, 0, nullptr, &n) != CL_SUCCESS || n == 0) return "";
    std::string s(n, '\0');
    clGetDeviceInfo(d, what, n, s.data(), nullptr);
    while (!s.empty() && s.back() == '\0') s.pop_back();
    return s;
}

template <class T>
T device_value(cl_device_id d, cl_device_info what) {
    T v{};
    clGetDeviceInfo(d, what, sizeof v, &v, nullptr);
    return v;
}

std::string lower(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return s;
}

std::string type_name(cl_device_type t) {
    if (t & CL_DEVICE_TYPE_GPU) return "GPU";
    if (t & CL_DEVICE_TYPE_CPU) return "CPU";
    if (t & CL_DEVICE_TYPE_ACCELERATOR) return "accelerator";
    return "other";
}

}  // namespace

Devices enumerate_devices() {
    Devices out;
    cl_uint np = 0;
    const cl_int rc = clGetPlatformIDs(0, nullptr, &np);
    if (rc != CL_SUCCESS || np == 0) {
        out.error = "no OpenCL platform found (clGetPlatformIDs returned " +
                    (rc != CL_SUCCESS ? cl_error_name(rc) : std::string("0 platforms")) + ")";
        return out;
    }
    std::vector<cl_platform_id> platforms(np);
    check(clGetPlatformIDs(np, platforms.data(), nullptr), "clGetPlatformIDs");
    for (std::size_t pi = 0; pi < platforms.size(); ++pi) {
        cl_uint nd = 0;
        if (clGetDeviceIDs(platforms[pi], CL_DEVICE_TYPE_ALL, 0, nullptr, &nd) != CL_SUCCESS || nd == 0) continue;
        std::vector<cl_device_id> devices(nd);
        check(clGetDeviceIDs(platforms[pi], CL_DEVICE_TYPE_ALL, nd, devices.data(), nullptr), "clGetDeviceIDs");
        for (std::size_t di = 0; di < devices.size(); ++di) {
            DeviceInfo d;
            d.platform = platforms[pi];
            d.device = devices[di];
            d.platform_index = pi;
            d.device_index = di;
            d.platform_name = platform_string(platforms[pi], CL_PLATFORM_NAME);
            d.name = device_string(devices[di], CL_DEVICE_NAME);
            d.version = device_string(devices[di], CL_DEVICE_VERSION);
            d.driver_version = device_string(devices[di], CL_DRIVER_VERSION);
            d.type = device_value<cl_device_type>(devices[di], CL_DEVICE_TYPE);
            d.compute_units = device_value<cl_uint>(devices[di], CL_DEVICE_MAX_COMPUTE_UNITS);
            d.max_work_group = device_value<std::size_t>(devices[di], CL_DEVICE_MAX_WORK_GROUP_SIZE);
            clGetDeviceInfo(devices[di], CL_DEVICE_MAX_WORK_ITEM_SIZES, sizeof d.max_item_sizes, d.max_item_sizes, nullptr);
            d.local_mem = device_value<cl_ulong>(devices[di], CL_DEVICE_LOCAL_MEM_SIZE);
            d.global_mem = device_value<cl_ulong>(devices[di], CL_DEVICE_GLOBAL_MEM_SIZE);
            d.float_vector_width = device_value<cl_uint>(devices[di], CL_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT);
            const std::string ext = " " + device_string(devices[di], CL_DEVICE_EXTENSIONS) + " ";
            d.fp16 = ext.find(" cl_khr_fp16 ") != std::string::npos;
            d.fp64 = ext.find(" cl_khr_fp64 ") != std::string::npos;
            out.list.push_back(std::move(d));
        }
    }
    if (out.list.empty()) {
        out.error = "no OpenCL device found on " + std::to_string(platforms.size()) + " platform(s)";
        // PoCL offers no device at all when it cannot make its kernel cache (a container whose
        // HOME cannot be written), which otherwise reads as a machine without one.
        for (cl_platform_id p : platforms)
            if (platform_string(p, CL_PLATFORM_NAME).find("Portable Computing Language") != std::string::npos)
                out.error += " (PoCL finds none where it cannot write its kernel cache under $HOME/.cache: set "
                             "POCL_CACHE_DIR to a writable folder; POCL_DEBUG=1 says why)";
    }
    return out;
}

std::optional<DeviceInfo> select_device(const Devices& d, const std::string& spec, std::string& why) {
    if (d.list.empty()) {
        why = d.error;
        return std::nullopt;
    }
    if (spec.empty()) {
        for (const auto& x : d.list)
            if (x.type & CL_DEVICE_TYPE_GPU) return x;
        return d.list.front();
    }
    const auto colon = spec.find(':');
    const bool numeric = colon != std::string::npos && colon > 0 && colon + 1 < spec.size() &&
                         std::all_of(spec.begin(), spec.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)) || c == ':'; }) &&
                         spec.find(':', colon + 1) == std::string::npos;
    if (numeric) {
        // from_chars, not stoul: an index past 2^64 made stoul throw std::out_of_range, which the
        // tools reported as "internal error: stoul" (exit 3). Such an index matches no device, as
        // 9:9 does not: the message below names the devices found.
        std::size_t p = 0, dev = 0;
        const char* const first = spec.data();
        const bool p_ok = std::from_chars(first, first + colon, p).ec == std::errc();
        const bool dev_ok = std::from_chars(first + colon + 1, first + spec.size(), dev).ec == std::errc();
        for (const auto& x : d.list)
            if (p_ok && dev_ok && x.platform_index == p && x.device_index == dev) return x;
    } else {
        const std::string want = lower(spec);
        for (const auto& x : d.list)
            if (lower(x.name).find(want) != std::string::npos) return x;
        for (const auto& x : d.list)
            if (lower(x.platform_name).find(want) != std::string::npos) return x;
    }
    why = "no OpenCL device matches '" + spec + "' (devices found:";
    for (const auto& x : d.list)
        why += " " + std::to_string(x.platform_index) + ":" + std::to_string(x.device_index) + " " + x.name + " (" +
               x.platform_name + ");";
    why.back() = ')';
    return std::nullopt;
}

std::string describe(const DeviceInfo& d) {
    return std::to_string(d.platform_index) + ":" + std::to_string(d.device_index) + " " + d.name + " (platform " +
           d.platform_name + "), " + d.version + ", driver " + d.driver_version + ", " + type_name(d.type) + ", " + std::to_string(d.compute_units) +
           " compute units, max work-group " + std::to_string(d.max_work_group) + ", local memory " +
           std::to_string(d.local_mem / 1024) + " KiB, fp16 " + (d.fp16 ? "yes" : "no") + ", fp64 " +
           (d.fp64 ? "yes" : "no");
}

}  // namespace moe::backends::ocl
