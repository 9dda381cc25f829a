// fedcl_federation_bench: what a context spanning several fedcld nodes costs: buffer migration
// between nodes, events that cross nodes, and a computation split across nodes. One run measures
// one mode (direct peer links, or through the client when FEDCL_PEER_LINKS=0) and prints one
// "metric.<mode> value unit" line each; --report combines runs of both modes. See README.md.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_stats.h"
#include "federation_event.h"
#include "federation_migrate.h"
#include "federation_nodes.h"
#include "federation_plan.h"
#include "federation_report.h"
#include "federation_split.h"

using namespace bench;

namespace {

struct Workload {
  const char *name;
  Measures (*run)(Federation &, const FederationPlan &);
  size_t nodes_needed;
};

const Workload kWorkloads[] = {
    {"migrate", measure_migration, 2},
    {"event", measure_events, 2},
    {"shared", measure_shared_chains, 2},
    {"split", measure_split, 1},
};

bool selected(const std::string &only, const char *name) {
  return only.empty() || ("," + only + ",").find("," + std::string(name) + ",") != std::string::npos;
}

// The mode this process runs in, as the runtime reads it: FEDCL_PEER_LINKS=0 sends every migration
// and cross-node event through the client.
std::string mode_label() {
  const char *links = std::getenv("FEDCL_PEER_LINKS");
  return links && std::strcmp(links, "0") == 0 ? "client" : "direct";
}

std::string type_text(cl_device_type type) {
  if (type & CL_DEVICE_TYPE_GPU) return "GPU";
  if (type & CL_DEVICE_TYPE_CPU) return "CPU";
  if (type & CL_DEVICE_TYPE_ACCELERATOR) return "accelerator";
  return "other";
}

int usage() {
  std::fprintf(stderr,
               "usage: fedcl_federation_bench [--quick] [--only LIST] [--nodes N] [--split-nodes N] [--bodies N]\n"
               "                              [--steps N] [--event-reps N] [--max-migration MIB]\n"
               "       fedcl_federation_bench --report FILE...\n"
               "  --quick          fewer repetitions, migrations up to 256 MiB (a smoke run)\n"
               "  --only LIST      workloads among migrate,event,shared,split (default: all)\n"
               "  --nodes N        the first N devices of the fedcl platform are the nodes; fewer is an error\n"
               "                   (default: all)\n"
               "  --split-nodes N  split NBody over 1 .. N nodes (default: up to 3)\n"
               "  --bodies N       split NBody size (default: 8192 on CPU devices, 131072 on GPUs)\n"
               "  --steps N        timed split steps per node count (default 10; 3 with --quick)\n"
               "  --event-reps N   event chains timed of each kind (default 2000; 200 with --quick)\n"
               "  --shared-sizes LIST  the buffer sizes of the shared chains, in bytes (default 64,4096,65536)\n"
               "  --max-migration MIB  the largest migration, in MiB (default 1024; 256 with --quick): sizes\n"
               "                   go from 1 MiB by fours up to it\n"
               "  --report FILE... combine the outputs of runs (and fedcl_linkprobe's) into medians,\n"
               "                   ratios and the targets\n"
               "The mode is direct unless FEDCL_PEER_LINKS=0 (through the client). See bench/run_federation.sh.\n");
  return 2;
}

bool parse_count(const char *text, long *out) {
  char *end = nullptr;
  *out = std::strtol(text, &end, 10);
  return end != text && *end == '\0' && *out > 0;
}

}  // namespace

int main(int argc, char **argv) {
  FederationPlan plan;
  std::string only;
  size_t max_nodes = 0;
  for (int i = 1; i < argc; i++) {
    std::string arg = argv[i];
    long n = 0;
    if (arg == "--report") {
      std::vector<std::string> files(argv + i + 1, argv + argc);
      if (files.empty()) return usage();
      int missed = report_federation(files);
      if (missed < 0) return 2;
      std::printf("# %d target(s) not met or not run\n", missed);
      return 0;
    } else if (arg == "--quick") {
      plan.quick = true;
      plan.max_migration = size_t(256) << 20;
    } else if (arg == "--only" && i + 1 < argc) {
      only = argv[++i];
      std::istringstream list(only);
      std::string name;
      while (std::getline(list, name, ',')) {
        bool known = false;
        for (const Workload &w : kWorkloads) known = known || name == w.name;
        if (!known) return usage();
      }
    } else if (arg == "--shared-sizes" && i + 1 < argc) {
      plan.shared_sizes.clear();
      std::istringstream list(argv[++i]);
      std::string size;
      while (std::getline(list, size, ',')) {
        long bytes = 0;
        if (!parse_count(size.c_str(), &bytes) || bytes % 4) return usage();  // whole words: the kernels' uints
        plan.shared_sizes.push_back(size_t(bytes));
      }
      if (plan.shared_sizes.empty()) return usage();
    } else if (i + 1 < argc && parse_count(argv[i + 1], &n) &&
               (arg == "--nodes" || arg == "--split-nodes" || arg == "--bodies" || arg == "--steps" ||
                arg == "--event-reps" || arg == "--max-migration")) {
      i++;
      if (arg == "--nodes") max_nodes = n;
      if (arg == "--split-nodes") plan.max_split_nodes = n;
      if (arg == "--bodies") plan.bodies = int(n);
      if (arg == "--steps") plan.split_steps = int(n);
      if (arg == "--event-reps") plan.event_reps = int(n);
      if (arg == "--max-migration") plan.max_migration = size_t(n) << 20;
    } else {
      return usage();
    }
  }
  setvbuf(stdout, nullptr, _IOLBF, 0);
  const double start = now_us();
  const std::string mode = mode_label();

  std::unique_ptr<Federation> fed;
  try {
    fed = open_federation(max_nodes);
    if (max_nodes && fed->nodes.size() < max_nodes)
      throw std::runtime_error("--nodes " + std::to_string(max_nodes) + ": the fedcl platform has only " +
                               std::to_string(fed->nodes.size()) + " device(s)");
  } catch (const std::exception &e) {
    std::fprintf(stderr, "fedcl_federation_bench: %s\n", e.what());
    return 1;
  }
  std::printf("# mode: %s (FEDCL_PEER_LINKS=%s)\n", mode.c_str(),
              std::getenv("FEDCL_PEER_LINKS") ? std::getenv("FEDCL_PEER_LINKS") : "unset");
  std::printf("# fedcl platform: %s; %zu node(s), one context over all\n", fed->platform_version.c_str(),
              fed->nodes.size());
  for (size_t j = 0; j < fed->nodes.size(); j++) {
    const Node &node = fed->nodes[j];
    std::printf("# node %zu: %s (%s, %u compute units)\n", j, node.name.c_str(), type_text(node.type).c_str(),
                node.compute_units);
  }
  for (size_t j = 0; j < fed->nodes.size(); j++)
    std::printf("node.%zu.compute_units.%s %u units\n", j, mode.c_str(), fed->nodes[j].compute_units);

  // The machine may be shared: the load at start and end says whether these numbers can be quoted.
  std::printf("host.load_1min.start.%s %.2f load\n", mode.c_str(), load_average());
  int errors = 0;
  for (const Workload &workload : kWorkloads) {
    if (!selected(only, workload.name)) continue;
    if (fed->nodes.size() < workload.nodes_needed) {
      std::printf("# %s: needs %zu nodes, have %zu: not run\n", workload.name, workload.nodes_needed,
                  fed->nodes.size());
      continue;
    }
    try {
      for (const Measure &m : workload.run(*fed, plan))
        std::printf("%s.%s %.6g %s\n", m.name.c_str(), mode.c_str(), m.value, m.unit.c_str());
    } catch (const std::exception &e) {
      std::printf("# error: %s (%s): %s\n", workload.name, mode.c_str(), e.what());
      errors++;
    }
  }
  std::printf("host.load_1min.end.%s %.2f load\n", mode.c_str(), load_average());
  std::printf("run.duration.%s %.1f s\n", mode.c_str(), (now_us() - start) * 1e-6);
  return errors ? 1 : 0;
}
