// Kernel entry points read from PTX text, which is what NVIDIA's OpenCL gives as a program's
// binary. NVIDIA keeps kernel argument metadata to itself unless the program was built with
// -cl-kernel-arg-info, an option its compiler cannot always build with; the PTX declaration of
// each parameter says all that clSetKernelArg's checks need: the address space of a pointer,
// image, sampler, or the bytes of a value.
#pragma once

#include <CL/cl.h>

#include <string>
#include <vector>

namespace fedcld {

// What one `.param` of an entry says about the OpenCL argument it carries.
struct PtxParam {
  cl_kernel_arg_address_qualifier address = 0;  // 0: the declaration is not one fedcld understands
  cl_kernel_arg_access_qualifier access = CL_KERNEL_ARG_ACCESS_NONE;  // READ_ONLY for a .texref image
  bool image = false;                           // .texref or .surfref
  bool sampler = false;                         // .samplerref
  size_t value_size = 0;                        // bytes of a by-value argument; 0 otherwise
};

struct PtxEntry {
  std::string name;
  std::vector<PtxParam> params;
};

// The `.entry` definitions of a PTX text, in order, with their parameters. For OpenCL C kernels
// the entry's name is the kernel's and its parameters are the kernel's arguments, one for one.
std::vector<PtxEntry> scan_ptx_entries(const std::string &ptx);

// The meaning of one parameter declaration, e.g. ".param .u64 .ptr .global .align 4 k_param_0".
PtxParam ptx_param(const std::string &declaration);

}  // namespace fedcld
