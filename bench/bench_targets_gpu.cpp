// The targets for a GPU behind fedcl, each against the floor of its metric: what the backend does
// plus what the raw link costs at least (bench_floor.h).
#include "bench_targets.h"

#include <utility>

namespace bench {

namespace {

// M.fedcl <= M.direct + k round trips of the raw link (its median, or its p99 for a p99 metric).
Target within_round_trips(const std::string &name, const std::string &goal, const std::string &m, double k,
                          const std::string &rtt) {
  return {name, goal, "us", true, metric(m + ".fedcl"),
          [=](const Results &r) { return result(r, m + ".direct") + k * result(r, rtt); }};
}

// M.fedcl <= k x M.floor.
Target within_floor(const std::string &name, const std::string &goal, const std::string &m, double k) {
  return {name, goal, "us", true, metric(m + ".fedcl"), [=](const Results &r) { return k * result(r, m + ".floor"); }};
}

// A transfer's bandwidth through fedcl >= fraction x the raw TCP stream its bytes take. size: as in
// the metric's name ("256MiB"); spoken: as a person writes it ("256 MiB").
Target of_stream(const std::string &direction, const std::string &size, const std::string &spoken, double fraction) {
  std::string stream = direction == "read" ? "link.tcp_download" : "link.tcp_upload";
  return {"gpu." + direction + "_" + size,
          spoken + " blocking " + direction + " >= " + std::to_string(int(fraction * 100)) + "% of raw TCP stream",
          "MiB/s", false, metric(direction + "." + size + ".bandwidth.fedcl"),
          [=](const Results &r) { return fraction * result(r, stream); }};
}

std::vector<Target> make_table() {
  std::vector<Target> table = {
      within_round_trips("gpu.enqueue_finish.median", "enqueue+clFinish <= backend + 1.25x raw TCP RTT (medians)",
                         "enqueue_finish.median", 1.25, "link.tcp_rtt.median"),
      within_round_trips("gpu.enqueue_finish.p99", "enqueue+clFinish <= backend + 2x raw TCP RTT (p99s)",
                         "enqueue_finish.p99", 2, "link.tcp_rtt.p99"),
      within_round_trips("gpu.read_64B", "64 B blocking read <= backend + 1.25x raw TCP RTT", "read.64B.time", 1.25,
                         "link.tcp_rtt.median"),
      within_floor("gpu.read_1MiB", "1 MiB blocking read <= 1.2x (backend + 1 MiB at raw stream + RTT)",
                   "read.1MiB.time", 1.2),
      within_floor("gpu.write_1MiB", "1 MiB blocking write <= 1.2x (backend + 1 MiB at raw stream + RTT)",
                   "write.1MiB.time", 1.2),
  };
  for (const auto &[size, spoken] : {std::pair{"256MiB", "256 MiB"}, std::pair{"1GiB", "1 GiB"}})
    for (const char *direction : {"read", "write"}) table.push_back(of_stream(direction, size, spoken, 0.9));
  for (const char *n : {"4096", "16384", "65536"})
    table.push_back({std::string("gpu.nbody_") + n,
                     std::string("NBody step at N=") + n + ": overhead over backend <= 1.25x the floor's", "x", true,
                     metric(std::string("nbody.") + n + ".step.overhead_vs_floor"), constant(1.25)});
  table.push_back({"gpu.tiny_kernel_throughput", "tiny-kernel throughput >= 90% of backend", "x", false,
                   metric("tiny_kernel_throughput.ratio"), constant(0.9)});
  table.push_back({"gpu.create_release", "clCreateBuffer + clReleaseMemObject <= 1.5x backend", "x", true,
                   metric("create_release.median.ratio"), constant(1.5)});
  return table;
}

}  // namespace

const std::vector<Target> &gpu_targets() {
  static const std::vector<Target> table = make_table();
  return table;
}

}  // namespace bench
