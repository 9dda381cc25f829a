#include "bench_targets.h"

#include <cstdio>
#include <functional>
#include <stdexcept>
#include <vector>

namespace bench {

namespace {

struct Target {
  const char *name;
  const char *goal;  // as the issue states it
  const char *unit;
  bool at_most;      // met when value <= bound; otherwise when value >= bound
  std::function<double(const Results &)> value, bound;
};

double get(const Results &results, const std::string &name) {
  auto it = results.find(name);
  if (it == results.end()) throw std::out_of_range(name);
  return it->second;
}

std::function<double(const Results &)> metric(const std::string &name) {
  return [name](const Results &r) { return get(r, name); };
}

std::function<double(const Results &)> constant(double value) {
  return [value](const Results &) { return value; };
}

const std::vector<Target> &targets() {
  static const std::vector<Target> table = {
      {"set_kernel_arg", "clSetKernelArg <= 1.5x backend", "x", true, metric("set_kernel_arg.ratio"), constant(1.5)},
      {"ndrange_enqueue", "non-blocking clEnqueueNDRangeKernel returns in <= 3 us (back to back)", "us", true,
       metric("ndrange_enqueue.median.fedcl"), constant(3.0)},
      {"ndrange_enqueue.after_finish", "non-blocking clEnqueueNDRangeKernel returns in <= 3 us (after clFinish)",
       "us", true, metric("ndrange_enqueue.after_finish.median.fedcl"), constant(3.0)},
      {"tiny_kernel_throughput", "tiny-kernel throughput >= 50% of backend", "x", false,
       metric("tiny_kernel_throughput.ratio"), constant(0.5)},
      {"enqueue_finish.median", "enqueue+clFinish <= backend + 1.5x raw TCP RTT (medians)", "us", true,
       metric("enqueue_finish.median.fedcl"),
       [](const Results &r) { return get(r, "enqueue_finish.median.direct") + 1.5 * get(r, "link.tcp_rtt.median"); }},
      {"enqueue_finish.p99", "enqueue+clFinish <= backend + 1.5x raw TCP RTT (p99s)", "us", true,
       metric("enqueue_finish.p99.fedcl"),
       [](const Results &r) { return get(r, "enqueue_finish.p99.direct") + 1.5 * get(r, "link.tcp_rtt.p99"); }},
      {"create_buffer", "clCreateBuffer <= 5 us", "us", true, metric("create_buffer.median.fedcl"), constant(5.0)},
      {"create_kernel", "clCreateKernel <= 5 us", "us", true, metric("create_kernel.median.fedcl"), constant(5.0)},
      {"write_256MiB", "256 MiB blocking write >= 80% of raw TCP stream", "MiB/s", false,
       metric("write.256MiB.bandwidth.fedcl"), [](const Results &r) { return 0.8 * get(r, "link.tcp_upload"); }},
      {"read_256MiB", "256 MiB blocking read >= 80% of raw TCP stream", "MiB/s", false,
       metric("read.256MiB.bandwidth.fedcl"), [](const Results &r) { return 0.8 * get(r, "link.tcp_download"); }},
      {"nbody_4096", "NBody step within 3% of backend at N=4096", "x", true, metric("nbody.4096.step.ratio"),
       constant(1.03)},
  };
  return table;
}

}  // namespace

int report_targets(const Results &results) {
  int failed = 0;
  std::vector<std::string> summary;
  for (const Target &target : targets()) {
    char line[256];
    try {
      double value = target.value(results), bound = target.bound(results);
      bool met = target.at_most ? value <= bound : value >= bound;
      std::printf("target.%s.value %.6g %s\n", target.name, value, target.unit);
      std::printf("target.%s.bound %.6g %s\n", target.name, bound, target.unit);
      std::printf("target.%s.met %d bool\n", target.name, met ? 1 : 0);
      std::snprintf(line, sizeof line, "#   %-8s %-29s %10.4g %s %-10.4g %-6s %s", met ? "MET" : "NOT MET", target.name,
                    value, target.at_most ? "<=" : ">=", bound, target.unit, target.goal);
      failed += !met;
    } catch (const std::out_of_range &missing) {
      std::snprintf(line, sizeof line, "#   %-8s %-29s (no result for %s) %s", "NOT RUN", target.name, missing.what(),
                    target.goal);
      failed++;
    }
    summary.push_back(line);
  }
  // Reported, not a target: what NBody pays per step through fedcl at each size.
  for (const char *n : {"1024", "4096"}) {
    auto it = results.find(std::string("nbody.") + n + ".step.ratio");
    if (it != results.end()) std::printf("nbody.%s.overhead %.6g %%\n", n, (it->second - 1) * 100);
  }
  std::printf("# targets (value, bound, goal):\n");
  for (const std::string &line : summary) std::printf("%s\n", line.c_str());
  return failed;
}

}  // namespace bench
