// NBody as NVIDIA's oclNbody runs it: each step sets the kernel's nine arguments (the position and
// velocity buffers swap every step), launches the kernel and reads the new positions back.
#pragma once

#include <CL/cl.h>

#include "bench_workloads.h"

namespace bench {

extern const char *const kNbodyKernelSource;
constexpr const char *kNbodyKernelName = "integrate_bodies";
constexpr int kNbodyArgCount = 9;

size_t nbody_local_size(const Side &side);
// Sets all nine arguments, one clSetKernelArg each, in the sample's order.
void nbody_set_args(cl_kernel kernel, cl_mem pos_in, cl_mem vel_in, cl_mem pos_out, cl_mem vel_out, cl_int n,
                    size_t local_size);

Measures measure_nbody_1024(Side &side, const Plan &plan);
Measures measure_nbody_4096(Side &side, const Plan &plan);
Measures measure_nbody_16384(Side &side, const Plan &plan);
Measures measure_nbody_65536(Side &side, const Plan &plan);

}  // namespace bench
