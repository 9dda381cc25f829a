// Kernel names read from OpenCL C source text, for backends that cannot be asked safely: NVIDIA's
// OpenCL corrupts its heap when it lists (clCreateKernelsInProgram, CL_PROGRAM_KERNEL_NAMES) kernels
// whose names are longer than about 256 characters, while clCreateKernel by name works.
#pragma once

#include <string>
#include <vector>

namespace fedcld {

// The length of the longest identifier in source, outside comments and string literals.
size_t longest_identifier(const std::string &source);

// The names of the functions source defines with the kernel or __kernel qualifier, in order. Kernels
// that macros make are not seen.
std::vector<std::string> scan_kernel_names(const std::string &source);

// The entry points a PTX text (what NVIDIA's OpenCL gives as a program's binary) defines, in order:
// the names after `.entry`, which for OpenCL C kernels are the kernels' own names.
std::vector<std::string> scan_ptx_entries(const std::string &ptx);

}  // namespace fedcld
