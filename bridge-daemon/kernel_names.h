// Kernel names read from OpenCL C source text, for backends that cannot be asked safely: NVIDIA's
// OpenCL corrupts its heap when it lists (clCreateKernelsInProgram, CL_PROGRAM_KERNEL_NAMES) kernels
// whose names are longer than about 256 characters, while clCreateKernel by name works.
#pragma once

#include <string>
#include <vector>

namespace fedcld {

// The length of the longest identifier in source, outside comments and string literals.
size_t longest_identifier(const std::string &source);

// A kernel as its OpenCL C text declares it: what the backend's binary may not say.
struct KernelText {
  std::string name;
  std::vector<bool> const_targets;  // per parameter: a pointer to const (or __constant) data
};

// The functions source defines with the kernel or __kernel qualifier, in order. Kernels and
// parameters that macros make are not seen as such.
std::vector<KernelText> scan_kernels(const std::string &source);

// The names of scan_kernels(source).
std::vector<std::string> scan_kernel_names(const std::string &source);

}  // namespace fedcld
