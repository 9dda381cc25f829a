#include "federation_kernels.h"

namespace bench {

const char *const kFederationKernelSource = R"CLC(
#define FED_PATTERN(i, seed) ((uint)(i) * 2654435761u + (seed))

__kernel void fed_fill(__global uint *buf, uint n, uint seed) {
  for (uint i = get_global_id(0); i < n; i += get_global_size(0)) buf[i] = FED_PATTERN(i, seed);
}

__kernel void fed_check(__global const uint *buf, uint n, uint seed, __global uint *stats) {
  __local uint group_bad, group_seen;
  uint bad = 0, seen = 0;
  if (get_local_id(0) == 0) group_bad = group_seen = 0;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint i = get_global_id(0); i < n; i += get_global_size(0)) {
    bad += buf[i] != FED_PATTERN(i, seed);
    seen++;
  }
  atomic_add(&group_bad, bad);
  atomic_add(&group_seen, seen);
  barrier(CLK_LOCAL_MEM_FENCE);
  if (get_local_id(0) == 0) {
    atomic_add(&stats[0], group_bad);
    atomic_add(&stats[1], group_seen);
  }
}

__kernel void fed_bump(__global uint *counter) { counter[0] += 1; }
)CLC";

}  // namespace bench
