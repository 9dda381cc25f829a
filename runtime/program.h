// Programs on the daemons: creating them, building, compiling and linking them, and taking in what
// each daemon reports back (per-device build state, kernel metadata).
//
// A program exists on every daemon that holds one of its devices, under the same id. Build, compile
// and link send one request to each of those daemons at once and wait for all; each daemon's
// BuildResult updates the program's per-device state and, once there is an executable, the kernel
// metadata that clCreateKernel and clSetKernelArg check against.
#pragma once

#include <string>
#include <vector>

#include "handles.h"

namespace fedcl {

// Creates program (its source) on every daemon of its context; returns the first failure.
cl_int program_create_with_source(cl_program program);

// Creates program from one binary per device of the program on each daemon concerned; statuses
// receives each device's verdict. Returns the first failure.
cl_int program_create_with_binaries(cl_program program, const size_t *lengths, const unsigned char **binaries,
                                    std::vector<cl_int> *statuses);

// Creates program from the built-in kernels names (';'-separated) on the daemons of its devices.
cl_int program_create_with_built_in_kernels(cl_program program, const std::string &names);

// Build, compile and link for devices, on every daemon concerned at once; each returns the first
// failure. Another operation still running for one of the devices makes it CL_INVALID_OPERATION.
cl_int program_build(cl_program program, const std::vector<cl_device_id> &devices, const char *options);
cl_int program_compile(cl_program program, const std::vector<cl_device_id> &devices, const char *options,
                       cl_uint num_headers, const cl_program *headers, const char **header_names);
// program: the new, linked one. unreported receives how many devices no daemon described: a link
// made no program there.
cl_int program_link(cl_program program, const std::vector<cl_device_id> &devices, const char *options,
                    cl_uint num_inputs, const cl_program *inputs, size_t *unreported);

// CL_PROGRAM_BINARY_SIZES and CL_PROGRAM_BINARIES, in the order of the program's devices.
// Whether program's source text (if it was created from source) calls printf.
bool program_calls_printf(cl_program program);

cl_int program_binaries(cl_program program, std::vector<std::vector<uint8_t>> *binaries);

// A build info the daemon answers (CL_PROGRAM_BUILD_GLOBAL_VARIABLE_TOTAL_SIZE).
cl_int program_build_info(cl_program program, cl_device_id device, cl_program_build_info param,
                          std::vector<uint8_t> *bytes);

}  // namespace fedcl
