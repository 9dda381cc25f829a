// The cost of an event that crosses nodes: a tiny kernel on node 1 waits for a tiny kernel's event
// on node 0, against the same chain between two queues of node 0. See README.md.
#pragma once

#include "bench_workloads.h"
#include "federation_nodes.h"
#include "federation_plan.h"

namespace bench {

// event.cross_node.median/.p99, event.same_node.median/.p99 and event.extra.median/.p99 (the
// differences), in microseconds. Throws std::runtime_error on an OpenCL error or a wrong count.
Measures measure_events(Federation &fed, const FederationPlan &plan);

}  // namespace bench
