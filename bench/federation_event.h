// The cost of an event that crosses nodes: a tiny kernel on node 1 waits for a tiny kernel's event
// on node 0, against the same chain between two queues of node 0; and the same with a buffer that
// the first writes and the second reads. See README.md.
#pragma once

#include "bench_workloads.h"
#include "federation_nodes.h"
#include "federation_plan.h"

namespace bench {

// event.cross_node.median/.p99, event.same_node.median/.p99 and event.extra.median/.p99 (the
// differences), in microseconds. Throws std::runtime_error on an OpenCL error or a wrong count.
Measures measure_events(Federation &fed, const FederationPlan &plan);

// The same chain sharing a buffer, as programs' chains do: a kernel on node 0 writes it, a kernel on
// node 1 checks every word of it behind that kernel's event, then clFinish on node 1's queue; against
// the same on two queues of node 0. For each of plan.shared_sizes:
// event.shared.<size>.cross_node/.same_node/.extra .median/.p99, in microseconds.
Measures measure_shared_chains(Federation &fed, const FederationPlan &plan);

}  // namespace bench
