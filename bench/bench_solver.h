// A solver-like loop: the same five kernels enqueued for many iterations, as iterative solvers do,
// once plainly and once as a command buffer (cl_khr_command_buffer) recorded once and enqueued each
// iteration, at a small and a large work size.
#pragma once

#include "bench_workloads.h"

namespace bench {

extern const char *const kSolverKernelSource;

// solver.<size>.plain and solver.<size>.command_buffer: microseconds per iteration (five kernels),
// and command_buffer_vs_plain, on each side. A side whose device lacks cl_khr_command_buffer 0.9.5
// or later reports its command-buffer time as nan.
Measures measure_solver_loop(Side &side, const Plan &plan);

}  // namespace bench
