// Migration of a buffer from node 0 to node 1: a kernel on node 0 writes the whole buffer, then a
// kernel on node 1 reads it (the first read migrates it; a second read, the buffer already valid
// there, is the baseline). See README.md.
#pragma once

#include "bench_workloads.h"
#include "federation_nodes.h"
#include "federation_plan.h"

namespace bench {

// migrate.<size>.time (ms), migrate.<size> (MiB/s), migrate.<size>.cold/.warm (ms) for 1 MiB to
// 1 GiB. Throws std::runtime_error on an OpenCL error or when a read saw other bytes than written.
Measures measure_migration(Federation &fed, const FederationPlan &plan);

}  // namespace bench
