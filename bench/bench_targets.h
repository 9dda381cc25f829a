// The performance targets, checked against the results of one run: the PoCL targets on
// every run, the GPU targets on a GPU (or when asked).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "bench_results.h"

namespace bench {

struct Target {
  std::string name;  // printed as target.<name>.value/.bound/.met
  std::string goal;  // as the issue states it
  std::string unit;
  bool at_most;      // met when value <= bound; otherwise when value >= bound
  std::function<double(const Results &)> value, bound;
};

// Helpers for the tables: one metric's value, and a fixed bound.
std::function<double(const Results &)> metric(const std::string &name);
std::function<double(const Results &)> constant(double value);

const std::vector<Target> &pocl_targets();  // bench_targets_pocl.cpp
const std::vector<Target> &gpu_targets();   // bench_targets_gpu.cpp
// The same node's (docs/design-decisions.md, "Same node"), against the backend directly: the
// 2-core machine's with PoCL, and a GPU node's (bench_targets_same_node.cpp).
const std::vector<Target> &same_node_pocl_targets();
const std::vector<Target> &same_node_gpu_targets();

// Prints target.<name>.value/.bound/.met lines and a readable summary headed by title; returns how
// many targets were not met or could not be evaluated.
int report_targets(const char *title, const std::vector<Target> &table, const Results &results);

}  // namespace bench
