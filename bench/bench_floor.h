// The floor of a metric: the backend's own figure plus what the raw link costs at least (one TCP
// round trip and, for a transfer, its bytes at the raw stream's rate). A remote driver that did
// nothing but carry the work over the link would reach it; fedcl's distance from the backend is
// compared with the floor's.
#pragma once

#include "bench_results.h"
#include "bench_workloads.h"

namespace bench {

// For a time metric M (us or ms): M.floor and M.overhead_vs_floor = (fedcl - direct) / (floor -
// direct). For a bandwidth (MiB/s): M.floor, the bandwidth of the floor's time. Nothing when the
// metric does not cross the link or the link was not measured. Reads link.* from results.
Measures floor_measures(const Measure &direct, const Measure &fedcl, const Results &results);

}  // namespace bench
