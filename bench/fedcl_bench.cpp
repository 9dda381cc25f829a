// fedcl_bench: runs the same workloads on the backend platform ("direct") and on fedcl in one run,
// plus the raw TCP limits of the link between them, and prints one "metric value unit" line each.
// Lines starting with '#' are commentary. See README.md.
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "bench_cl.h"
#include "bench_link.h"
#include "bench_nbody.h"
#include "bench_stats.h"
#include "bench_targets.h"
#include "bench_workloads.h"

using namespace bench;

namespace {

struct Workload {
  const char *name;
  Measures (*run)(Side &, const Plan &);
};

const Workload kWorkloads[] = {
    {"set_kernel_arg", measure_set_kernel_arg},
    {"ndrange_enqueue", measure_ndrange_enqueue},
    {"tiny_kernel_throughput", measure_tiny_throughput},
    {"enqueue_finish", measure_enqueue_finish},
    {"create_buffer", measure_create_buffer},
    {"create_kernel", measure_create_kernel},
    {"transfers", measure_transfers},
    {"nbody_1024", measure_nbody_1024},
    {"nbody_4096", measure_nbody_4096},
};

void print(Results &results, const std::string &name, double value, const std::string &unit) {
  std::printf("%s %.6g %s\n", name.c_str(), value, unit.c_str());
  results[name] = value;
}

// Runs on one side; on failure says why and returns nothing.
bool run_on(const Workload &workload, Side &side, const Plan &plan, Measures *out) {
  try {
    *out = workload.run(side, plan);
    return true;
  } catch (const std::exception &e) {
    std::printf("# error: %s on %s: %s\n", workload.name, side.label.c_str(), e.what());
    return false;
  }
}

int usage() {
  std::fprintf(stderr,
               "usage: fedcl_bench [--quick] [--backend NAME]\n"
               "  --quick         a tenth of the iterations and transfers up to 16 MiB (a smoke run)\n"
               "  --backend NAME  the direct platform: a part of its name (default: Portable Computing Language)\n"
               "The fedcl platform must be reachable too: see bench/run.sh.\n");
  return 2;
}

}  // namespace

int main(int argc, char **argv) {
  Plan plan;
  std::string backend = "Portable Computing Language";
  for (int i = 1; i < argc; i++) {
    if (!std::strcmp(argv[i], "--quick")) {
      plan.quick = true;
      plan.max_transfer = size_t(16) << 20;
    } else if (!std::strcmp(argv[i], "--backend") && i + 1 < argc) {
      backend = argv[++i];
    } else {
      return usage();
    }
  }
  setvbuf(stdout, nullptr, _IOLBF, 0);
  double start = now_us();
  Results results;

  // The link first: the peer is forked before any OpenCL driver has started threads.
  std::printf("# raw link: TCP over loopback to a forked process, TCP_NODELAY\n");
  try {
    LinkPlan link_plan;
    link_plan.pings = plan.count(link_plan.pings);
    link_plan.stream_bytes = plan.max_transfer;
    LinkResult link = measure_link(link_plan);
    print(results, "link.tcp_rtt.median", link.rtt_median_us, "us");
    print(results, "link.tcp_rtt.p99", link.rtt_p99_us, "us");
    print(results, "link.tcp_upload", link.upload_mib_s, "MiB/s");
    print(results, "link.tcp_download", link.download_mib_s, "MiB/s");
  } catch (const std::exception &e) {
    std::printf("# error: link: %s\n", e.what());
  }

  std::unique_ptr<Side> direct, fedcl;
  try {
    direct = open_side("direct", backend, false);
    fedcl = open_side("fedcl", "fedcl", true);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "fedcl_bench: %s\n", e.what());
    return 1;
  }
  std::printf("# direct: %s\n# fedcl: %s\n# ratio = fedcl / direct\n", direct->description.c_str(),
              fedcl->description.c_str());

  int errors = 0;
  for (const Workload &workload : kWorkloads) {
    Measures on_direct, on_fedcl;
    bool ok = run_on(workload, *direct, plan, &on_direct);
    ok = run_on(workload, *fedcl, plan, &on_fedcl) && ok;
    if (!ok) {
      errors++;
      continue;
    }
    for (size_t i = 0; i < on_direct.size(); i++) {
      const Measure &d = on_direct[i], &f = on_fedcl[i];
      print(results, d.name + ".direct", d.value, d.unit);
      print(results, f.name + ".fedcl", f.value, f.unit);
      print(results, d.name + ".ratio", f.value / d.value, "x");
    }
  }

  int missed = report_targets(results);
  std::printf("run.duration %.1f s\n", (now_us() - start) * 1e-6);
  std::printf("# %d workload(s) failed, %d target(s) not met or not run\n", errors, missed);
  return errors ? 1 : 0;
}
