// The device code of fedcl_federation_bench besides NBody (bench_nbody.cpp): a pattern writer and
// its checker for migrations, and a one-work-item counter for event chains.
#pragma once

#include <cstddef>
#include <cstdint>

namespace bench {

extern const char *const kFederationKernelSource;

// fed_fill(buf, n, seed): every uint i < n of buf becomes pattern_value(i, seed).
constexpr const char *kFillKernel = "fed_fill";
// fed_check(buf, n, seed, stats): stats[0] += how many of the n uints differ from the pattern,
// stats[1] += how many were looked at (n, once the kernel has touched the whole buffer).
constexpr const char *kCheckKernel = "fed_check";
// fed_bump(counter): counter[0] += 1 (global size 1).
constexpr const char *kBumpKernel = "fed_bump";

inline uint32_t pattern_value(uint64_t i, uint32_t seed) { return uint32_t(i) * 2654435761u + seed; }

// The work-items the fill and check kernels use: each strides through the buffer, so the launch is
// the same for every size and coalesced on a GPU.
inline size_t pattern_global_size(size_t n_uints) { return n_uints < (size_t(1) << 18) ? n_uints : size_t(1) << 18; }

}  // namespace bench
