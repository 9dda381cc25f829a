// The targets of the issue that set up fedcl_bench: fedcld serving PoCL on the same machine.
#include "bench_targets.h"

namespace bench {

const std::vector<Target> &pocl_targets() {
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
       [](const Results &r) {
         return result(r, "enqueue_finish.median.direct") + 1.5 * result(r, "link.tcp_rtt.median");
       }},
      {"enqueue_finish.p99", "enqueue+clFinish <= backend + 1.5x raw TCP RTT (p99s)", "us", true,
       metric("enqueue_finish.p99.fedcl"),
       [](const Results &r) { return result(r, "enqueue_finish.p99.direct") + 1.5 * result(r, "link.tcp_rtt.p99"); }},
      {"create_buffer", "clCreateBuffer <= 5 us", "us", true, metric("create_buffer.median.fedcl"), constant(5.0)},
      {"create_kernel", "clCreateKernel <= 5 us", "us", true, metric("create_kernel.median.fedcl"), constant(5.0)},
      {"write_256MiB", "256 MiB blocking write >= 80% of raw TCP stream", "MiB/s", false,
       metric("write.256MiB.bandwidth.fedcl"), [](const Results &r) { return 0.8 * result(r, "link.tcp_upload"); }},
      {"read_256MiB", "256 MiB blocking read >= 80% of raw TCP stream", "MiB/s", false,
       metric("read.256MiB.bandwidth.fedcl"), [](const Results &r) { return 0.8 * result(r, "link.tcp_download"); }},
      {"nbody_4096", "NBody step within 3% of backend at N=4096", "x", true, metric("nbody.4096.step.ratio"),
       constant(1.03)},
  };
  return table;
}

}  // namespace bench
