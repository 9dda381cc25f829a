// The same node's targets (issue 49; docs/design-decisions.md, "Same node"): a program and its
// daemon on one host, the session over the daemon's local socket and shared memory, against the
// backend used directly in the same run.
#include "bench_targets.h"

#include <utility>

namespace bench {

namespace {

// A transfer's bandwidth through fedcl >= fraction x the backend's own.
Target of_direct(const std::string &prefix, const std::string &direction, const std::string &size,
                 const std::string &spoken, double fraction) {
  return {prefix + direction + "_" + size,
          spoken + " blocking " + direction + " >= " + std::to_string(int(fraction * 100 + 0.5)) + "% of backend",
          "x", false, metric(direction + "." + size + ".bandwidth.ratio"), constant(fraction)};
}

// M.fedcl <= M.direct + us.
Target within_us(const std::string &name, const std::string &goal, const std::string &m, double us) {
  return {name, goal, "us", true, metric(m + ".fedcl"), [=](const Results &r) { return result(r, m + ".direct") + us; }};
}

std::vector<Target> transfers(const std::string &prefix, double fraction, bool one_gib) {
  std::vector<Target> table;
  std::vector<std::pair<const char *, const char *>> sizes = {{"256MiB", "256 MiB"}};
  if (one_gib) sizes.push_back({"1GiB", "1 GiB"});
  for (const auto &[size, spoken] : sizes)
    for (const char *direction : {"read", "write"}) table.push_back(of_direct(prefix, direction, size, spoken, fraction));
  return table;
}

}  // namespace

const std::vector<Target> &same_node_pocl_targets() {
  static const std::vector<Target> table = transfers("same_node.", 0.6, false);
  return table;
}

const std::vector<Target> &same_node_gpu_targets() {
  static const std::vector<Target> table = [] {
    std::vector<Target> t = transfers("same_node.gpu.", 0.85, true);
    t.push_back(within_us("same_node.gpu.read_64B", "64 B blocking read <= backend + 10 us", "read.64B.time", 10));
    t.push_back(within_us("same_node.gpu.enqueue_finish", "enqueue+clFinish <= backend + 10 us (medians)",
                          "enqueue_finish.median", 10));
    t.push_back({"same_node.gpu.tiny_kernel_throughput", "tiny-kernel throughput >= 90% of backend", "x", false,
                 metric("tiny_kernel_throughput.ratio"), constant(0.9)});
    return t;
  }();
  return table;
}

}  // namespace bench
