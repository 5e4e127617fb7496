#include "program_dump.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <stdexcept>
#include <system_error>
#include <unistd.h>

#include "environment_setting.hpp"
#include "whole_file.hpp"

namespace moe::backends::ocl {

namespace fs = std::filesystem;

namespace {

std::optional<std::string> dump_dir() { return environment_setting("MOE_OPENCL_DUMP_BINARIES"); }

// Which of the backend's programs a file list is (cl_runtime.cpp's lists, the autotune's trial).
std::string program_part(const std::vector<std::string>& files) {
    const auto has = [&](const char* f) { return std::find(files.begin(), files.end(), f) != files.end(); };
    if (has("gemm_compressed.cl")) return "compressed";
    if (has("f64.cl")) return "f64";
    if (has("swiglu.cl")) return "main";
    if (has("gemm_kernels.cl")) return "tune";
    return "program";
}

// FNV-1a: the same name for the same options on every run and build.
std::string options_hash(const std::string& options) {
    std::uint32_t h = 2166136261u;
    for (unsigned char c : options) h = (h ^ c) * 16777619u;
    char text[9];
    std::snprintf(text, sizeof text, "%08x", h);
    return text;
}

void write_whole(const fs::path& path, const std::string& bytes) {
    if (!write_whole_file(path, bytes)) throw std::runtime_error("MOE_OPENCL_DUMP_BINARIES: cannot write " + path.string());
}

// The program's binary for `device` (a program built for one device has one).
std::string program_binary(cl_program program, cl_device_id device) {
    cl_uint devices = 0;
    check(clGetProgramInfo(program, CL_PROGRAM_NUM_DEVICES, sizeof devices, &devices, nullptr),
          "clGetProgramInfo(CL_PROGRAM_NUM_DEVICES)");
    std::vector<cl_device_id> ids(devices);
    std::vector<std::size_t> sizes(devices);
    check(clGetProgramInfo(program, CL_PROGRAM_DEVICES, devices * sizeof(cl_device_id), ids.data(), nullptr),
          "clGetProgramInfo(CL_PROGRAM_DEVICES)");
    check(clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, devices * sizeof(std::size_t), sizes.data(), nullptr),
          "clGetProgramInfo(CL_PROGRAM_BINARY_SIZES)");
    std::vector<std::string> binaries(devices);
    std::vector<unsigned char*> pointers(devices);
    for (cl_uint i = 0; i < devices; ++i) {
        binaries[i].resize(sizes[i]);
        pointers[i] = reinterpret_cast<unsigned char*>(binaries[i].data());
    }
    check(clGetProgramInfo(program, CL_PROGRAM_BINARIES, devices * sizeof(unsigned char*), pointers.data(), nullptr),
          "clGetProgramInfo(CL_PROGRAM_BINARIES)");
    std::string b = devices ? binaries[0] : std::string();
    for (cl_uint i = 0; i < devices; ++i)
        if (ids[i] == device) b = binaries[i];
    // A text binary (PTX) comes with the C string's terminating NUL counted in its size: left
    // out, so that ptxas and other text tools read the file. A NUL inside marks a real binary.
    const std::size_t text_end = b.find('\0');
    if (text_end != std::string::npos && b.find_first_not_of('\0', text_end) == std::string::npos) b.resize(text_end);
    return b;
}

}  // namespace

std::string dump_dir_problem() {
    const auto dir = dump_dir();
    if (!dir) return "";
    const std::string what = "MOE_OPENCL_DUMP_BINARIES: " + *dir;
    std::error_code ec;
    if (!fs::is_directory(*dir, ec)) return what + " is not a folder (the built programs are written into it)";
    if (::access(dir->c_str(), W_OK) != 0) return what + " is a folder this process cannot write into";
    return "";
}

void dump_program_binary(cl_program program, cl_device_id device, const std::vector<std::string>& files,
                         const std::string& options) {
    const auto dir = dump_dir();
    if (!dir) return;
    const std::string name = program_part(files) + "-" + options_hash(options);
    std::string note = "sources:";
    for (const auto& f : files) note += " " + f;
    note += "\noptions: " + options + "\n";
    write_whole(fs::path(*dir) / (name + ".bin"), program_binary(program, device));
    write_whole(fs::path(*dir) / (name + ".txt"), note);
}

}  // namespace moe::backends::ocl
