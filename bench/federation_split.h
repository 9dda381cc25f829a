// One NBody step split across 1, 2 and 3 nodes: each node integrates its share of the bodies from
// its own copy of all positions; then every node gathers the others' new positions (migrations
// every step). See README.md.
#pragma once

#include "bench_workloads.h"
#include "federation_nodes.h"
#include "federation_plan.h"

namespace bench {

// split.bodies, and split.<k>.step (ms), split.<k>.speedup and split.<k>.efficiency for k = 1 ..
// min(nodes, plan.max_split_nodes). Throws std::runtime_error on an OpenCL error, or when the
// positions after the last step differ from the one-node run's (or its first step from the host's).
Measures measure_split(Federation &fed, const FederationPlan &plan);

}  // namespace bench
