// Combines the outputs of several fedcl_federation_bench runs (both modes, several rounds) and of
// fedcl_linkprobe into one report: each metric's median over the runs, the derived ratios, and the
// issue's targets.
#pragma once

#include <string>
#include <vector>

namespace bench {

// Reads "metric value unit" lines (others ignored) from the files, prints the report; returns the
// number of targets not met or not run, or -1 if a file could not be read.
int report_federation(const std::vector<std::string> &files);

}  // namespace bench
