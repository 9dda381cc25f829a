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

}  // namespace fedcld
