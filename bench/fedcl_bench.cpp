// fedcl_bench: runs the same workloads on the backend platform ("direct") and on fedcl in one run,
// plus the raw TCP limits of the link between them, and prints one "metric value unit" line each.
// Lines starting with '#' are commentary. See README.md.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "bench_cl.h"
#include "bench_floor.h"
#include "bench_link.h"
#include "bench_nbody.h"
#include "bench_solver.h"
#include "bench_stats.h"
#include "bench_targets.h"
#include "bench_workloads.h"

using namespace bench;

namespace {

struct Workload {
  const char *name;
  Measures (*run)(Side &, const Plan &);
  int rounds;  // alternations between the sides; long workloads take more, shorter, rounds
  bool gpu_only = false;  // seconds a step on a CPU: not run there
};

const Workload kWorkloads[] = {
    {"set_kernel_arg", measure_set_kernel_arg, 3},
    {"ndrange_enqueue", measure_ndrange_enqueue, 3},
    {"tiny_kernel_throughput", measure_tiny_throughput, 3},
    {"enqueue_finish", measure_enqueue_finish, 3},
    {"event_relay", measure_event_relay, 3},
    {"create_buffer", measure_create_buffer, 3},
    {"create_kernel", measure_create_kernel, 3},
    {"create_release", measure_create_release, 3},
    {"transfers", measure_transfers, 3},
    {"nbody_1024", measure_nbody_1024, 5},
    {"nbody_4096", measure_nbody_4096, 7},
    {"nbody_16384", measure_nbody_16384, 3},
    {"nbody_65536", measure_nbody_65536, 3, true},
    {"solver_loop", measure_solver_loop, 3},
};

bool selected(const std::string &only, const char *name) {
  if (only.empty()) return true;
  std::string list = "," + only + ",";
  return list.find("," + std::string(name) + ",") != std::string::npos;
}

// The first name in the comma-separated list that names no workload, or "".
std::string unknown_workload(const std::string &only) {
  std::istringstream list(only);
  std::string name;
  while (std::getline(list, name, ',')) {
    bool known = false;
    for (const Workload &workload : kWorkloads) known = known || name == workload.name;
    if (!known) return name.empty() ? "(empty)" : name;
  }
  return {};
}

void print(Results &results, const std::string &name, double value, const std::string &unit) {
  std::printf("%s %.6g %s\n", name.c_str(), value, unit.c_str());
  results[name] = value;
}

// Runs on one side; on failure says why and returns false.
bool run_on(const Workload &workload, Side &side, const Plan &plan, Measures *out) {
  try {
    *out = workload.run(side, plan);
    return true;
  } catch (const std::exception &e) {
    std::printf("# error: %s on %s: %s\n", workload.name, side.label.c_str(), e.what());
    return false;
  }
}

// Each value of several rounds: the median, measure by measure.
Measures median_of_rounds(std::vector<Measures> &rounds) {
  Measures combined = rounds.front();
  for (size_t i = 0; i < combined.size(); i++) {
    std::vector<double> values;
    for (const Measures &round : rounds) values.push_back(round.at(i).value);
    combined[i].value = median(values);
  }
  return combined;
}

// Runs the workload for some rounds, alternating which side goes first so that neither always
// meets the machine in the same state, and prints each metric with its floor (from the link's
// results); false if it failed on either side.
bool compare(const Workload &workload, Side &direct, Side &fedcl, const Plan &plan, Results &results) {
  const int rounds = plan.quick ? 1 : workload.rounds;
  std::vector<Measures> on_direct(rounds), on_fedcl(rounds);
  for (int r = 0; r < rounds; r++) {
    Side &first = r % 2 ? fedcl : direct, &second = r % 2 ? direct : fedcl;
    Measures &first_out = r % 2 ? on_fedcl[r] : on_direct[r], &second_out = r % 2 ? on_direct[r] : on_fedcl[r];
    if (!run_on(workload, first, plan, &first_out) || !run_on(workload, second, plan, &second_out)) return false;
  }
  Measures d = median_of_rounds(on_direct), f = median_of_rounds(on_fedcl);
  for (size_t i = 0; i < d.size(); i++) {
    print(results, d[i].name + ".direct", d[i].value, d[i].unit);
    print(results, f[i].name + ".fedcl", f[i].value, f[i].unit);
    print(results, d[i].name + ".ratio", f[i].value / d[i].value, "x");
    for (const Measure &floor : floor_measures(d[i], f[i], results)) print(results, floor.name, floor.value, floor.unit);
  }
  return true;
}

// Reported, not a target: what NBody pays per step through fedcl at each size run.
void print_nbody_overheads(const Results &results) {
  for (const char *n : {"1024", "4096", "16384", "65536"}) {
    auto it = results.find(std::string("nbody.") + n + ".step.ratio");
    if (it != results.end()) std::printf("nbody.%s.overhead %.6g %%\n", n, (it->second - 1) * 100);
  }
}

// What relaying a dependency through the host adds on each side (a difference of medians: no
// ratio, which would mean nothing for a difference).
void print_event_relay_extra(const Results &results) {
  for (const char *side : {"direct", "fedcl"}) {
    auto host = results.find(std::string("event_relay.host.median.") + side);
    auto driver = results.find(std::string("event_relay.driver.median.") + side);
    if (host != results.end() && driver != results.end())
      std::printf("event_relay.extra.median.%s %.6g us\n", side, host->second - driver->second);
  }
}

// The solver loop's throughput across the two ways of enqueueing it: fedcl's command buffer against
// the backend's plain loop and against the backend's own command buffer (issue targets: >= 1.0x and
// >= 0.9x). Times per iteration, so a ratio is the other side's time over fedcl's.
void print_solver_ratios(Results &results) {
  for (const char *size : {"small", "large"}) {
    std::string base = std::string("solver.") + size;
    auto fedcl = results.find(base + ".command_buffer.fedcl");
    if (fedcl == results.end()) continue;
    for (const char *against : {"plain", "command_buffer"}) {
      auto direct = results.find(base + "." + against + ".direct");
      if (direct != results.end())
        print(results, base + ".fedcl_command_buffer_vs_direct_" + against, direct->second / fedcl->second, "x");
    }
  }
}

int usage() {
  std::fprintf(stderr,
               "usage: fedcl_bench [--quick] [--backend NAME] [--only WORKLOAD,...] [--targets auto|gpu]\n"
               "  --quick         one round, a tenth of the iterations, transfers up to 16 MiB (a smoke run)\n"
               "  --backend NAME  the direct platform: a part of its name (default: Portable Computing Language)\n"
               "  --only LIST     run only these workloads (names as in README.md); the link is always measured\n"
               "  --targets T     auto: the GPU targets too where the device is a GPU (default); gpu: always\n"
               "The fedcl platform must be reachable too: see bench/run.sh.\n");
  return 2;
}

struct Options {
  Plan plan;
  std::string backend = "Portable Computing Language", only;
  bool gpu_targets = false;  // checked whatever the device
};

// False on a malformed command line.
bool parse_options(int argc, char **argv, Options *options) {
  for (int i = 1; i < argc; i++) {
    bool has_value = i + 1 < argc;
    if (!std::strcmp(argv[i], "--quick")) {
      options->plan.quick = true;
      options->plan.max_transfer = size_t(16) << 20;
    } else if (!std::strcmp(argv[i], "--backend") && has_value) {
      options->backend = argv[++i];
    } else if (!std::strcmp(argv[i], "--only") && has_value) {
      options->only = argv[++i];
      std::string unknown = unknown_workload(options->only);
      if (!unknown.empty()) {
        std::fprintf(stderr, "fedcl_bench: no workload named '%s'\n", unknown.c_str());
        return false;
      }
    } else if (!std::strcmp(argv[i], "--targets") && has_value && (!std::strcmp(argv[i + 1], "auto") ||
                                                                    !std::strcmp(argv[i + 1], "gpu"))) {
      options->gpu_targets = !std::strcmp(argv[++i], "gpu");
    } else {
      return false;
    }
  }
  return true;
}

// The full run adds 1 GiB to the transfers where both sides' device can hold it.
void choose_largest_transfer(const Side &direct, const Side &fedcl, Plan *plan) {
  if (plan->quick) return;
  if (holds_largest_transfer(direct) && holds_largest_transfer(fedcl)) {
    plan->max_transfer = kLargestTransfer;
    std::printf("# transfers up to 1 GiB\n");
  } else {
    std::printf("# transfers up to 256 MiB: the device cannot hold 1 GiB (largest allocation %.3g GiB, memory %.3g GiB)\n",
                direct.max_mem_alloc / double(kLargestTransfer), direct.global_mem / double(kLargestTransfer));
  }
}

}  // namespace

int main(int argc, char **argv) {
  Options options;
  if (!parse_options(argc, argv, &options)) return usage();
  Plan &plan = options.plan;
  setvbuf(stdout, nullptr, _IOLBF, 0);
  double start = now_us();
  Results results;
  int errors = 0;

  // The links first: the peer is forked before any OpenCL driver has started threads.
  std::printf("# raw link: TCP over loopback to a forked process, TCP_NODELAY (link.tcp_*), and a Unix socket "
              "pair to one (link.unix_*: how a program reaches a daemon of its host, FEDCL_LOCAL)\n");
  for (bool local : {false, true}) {
    std::string prefix = local ? "link.unix_" : "link.tcp_";
    try {
      LinkPlan link_plan;
      link_plan.pings = plan.count(link_plan.pings);
      link_plan.stream_bytes = plan.max_transfer;
      link_plan.local = local;
      LinkResult link = measure_link(link_plan);
      print(results, prefix + "rtt.median", link.rtt_median_us, "us");
      print(results, prefix + "rtt.p99", link.rtt_p99_us, "us");
      print(results, prefix + "upload", link.upload_mib_s, "MiB/s");
      print(results, prefix + "download", link.download_mib_s, "MiB/s");
    } catch (const std::exception &e) {
      std::printf("# error: link: %s\n", e.what());
      errors++;
    }
  }
  // Which way this run's fedcl side reaches its daemon (the targets of the same node apply to the local one).
  const char *local_mode = std::getenv("FEDCL_LOCAL");
  bool same_node = !local_mode || std::strcmp(local_mode, "off") != 0;
  std::printf("# fedcl's session: %s (FEDCL_LOCAL=%s)\n", same_node ? "the daemon's local socket and shared memory" : "TCP",
              local_mode ? local_mode : "auto");

  std::unique_ptr<Side> direct, fedcl;
  try {
    direct = open_side("direct", options.backend, false);
    fedcl = open_side("fedcl", "fedcl", true);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "fedcl_bench: %s\n", e.what());
    return 1;
  }
  const bool gpu = direct->is_gpu();
  std::printf("# direct: %s\n# fedcl: %s\n# device type: %s\n# ratio = fedcl / direct\n",
              direct->description.c_str(), fedcl->description.c_str(), gpu ? "GPU" : "not a GPU");
  std::printf("# floor = direct + one raw TCP round trip (p99 metrics: its p99) + the bytes moved at the raw TCP "
              "stream's rate; overhead_vs_floor = (fedcl - direct) / (floor - direct)\n");
  if (selected(options.only, "transfers")) choose_largest_transfer(*direct, *fedcl, &plan);

  std::printf("# each value: the median over rounds (sides alternating) of the workload's own median\n");
  print(results, "host.load_1min.start", load_average(), "load");
  for (const Workload &workload : kWorkloads) {
    if (!selected(options.only, workload.name)) continue;
    if (workload.gpu_only && !gpu)
      std::printf("# %s not run: the device is not a GPU (a step takes seconds on a CPU)\n", workload.name);
    else if (!compare(workload, *direct, *fedcl, plan, results))
      errors++;
  }
  print(results, "host.load_1min.end", load_average(), "load");

  print_nbody_overheads(results);
  print_event_relay_extra(results);
  print_solver_ratios(results);
  int missed = report_targets("targets", pocl_targets(), results);
  if (gpu || options.gpu_targets) missed += report_targets("GPU targets", gpu_targets(), results);
  if (same_node)
    missed += report_targets("same-node targets (issue 49)", gpu || options.gpu_targets ? same_node_gpu_targets()
                                                                                          : same_node_pocl_targets(),
                             results);
  std::printf("run.duration %.1f s\n", (now_us() - start) * 1e-6);
  std::printf("# %d measurement(s) failed, %d target(s) not met or not run\n", errors, missed);
  return errors ? 1 : 0;
}
