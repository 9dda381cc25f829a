// What fedcl_collective_bench and fedcl_collective_mpi_bench share: the sizes, the repetitions and
// the result lines, so that their lines pair up (bench/run_collectives.sh).
#pragma once

#include <cstdio>
#include <string>
#include <vector>

namespace bench {

// The collectives, by the names the lines use.
inline const std::vector<std::string> &collective_kinds() {
  static const std::vector<std::string> kinds{"broadcast", "scatter",    "gather",    "all_gather",
                                              "reduce",    "all_reduce", "all_to_all"};
  return kinds;
}

struct CollectiveOptions {
  bool quick = false;
  size_t max_mib = 256;
  std::string only;  // collectives by name, separated by commas; empty: all
};

// Each participant's buffer: 4 KiB, 1 MiB and 256 MiB (64 MiB with --quick; at most --max-mib).
inline std::vector<size_t> collective_sizes(const CollectiveOptions &o) {
  std::vector<size_t> out{4 << 10, 1 << 20};
  size_t large = size_t(o.quick ? 64 : 256) << 20;
  if (large > (o.max_mib << 20)) large = o.max_mib << 20;
  if (large > out.back()) out.push_back(large);
  return out;
}

inline int collective_repetitions(size_t size, const CollectiveOptions &o) {
  int reps = size <= (64 << 10) ? 50 : size <= (8 << 20) ? 20 : 3;
  return o.quick ? (reps / 5 > 2 ? reps / 5 : 2) : reps;
}

// "collective.<impl>.<kind>.n<N>.<size> <us> us <MiB/s> MiB/s"
inline void print_collective(const char *impl, const std::string &kind, int participants, size_t size, double us) {
  std::string label = size >= (1 << 20) ? std::to_string(size >> 20) + "MiB" : std::to_string(size >> 10) + "KiB";
  std::printf("collective.%s.%s.n%d.%s %.1f us %.1f MiB/s\n", impl, kind.c_str(), participants, label.c_str(), us,
              double(size) / (1 << 20) / (us / 1e6));
  std::fflush(stdout);
}

// Reads --quick, --max-mib M and --only KIND[,KIND...]; false on anything else.
inline bool parse_collective_options(int argc, char **argv, CollectiveOptions *o) {
  for (int i = 1; i < argc; i++) {
    std::string arg = argv[i];
    if (arg == "--quick") o->quick = true;
    else if (arg == "--max-mib" && i + 1 < argc) o->max_mib = std::stoul(argv[++i]);
    else if (arg == "--only" && i + 1 < argc) o->only = argv[++i];
    else return false;
  }
  return true;
}

inline bool collective_selected(const CollectiveOptions &o, const std::string &kind) {
  return o.only.empty() || ("," + o.only + ",").find("," + kind + ",") != std::string::npos;
}

}  // namespace bench
