// What a kernel argument must look like, from the metadata the daemon reported after the build;
// lets clSetKernelArg return the specified error without a round trip.
#pragma once

#include <string>

#include "handles.h"

namespace fedcl {

ArgClass kernel_arg_class(const KernelArgDesc &desc);

// The size in bytes of a by-value argument of OpenCL C type type_name ("float4", "uint", "size_t",
// "int3"...), or 0 when fedcl cannot tell (structs, unions, unknown types).
size_t kernel_arg_type_size(const std::string &type_name, cl_uint address_bits);

ArgCheck kernel_arg_check(const KernelArgDesc &desc, cl_uint address_bits);

}  // namespace fedcl
