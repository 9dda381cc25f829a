// How much work one run of fedcl_federation_bench does.
#pragma once

#include <cstddef>
#include <vector>

namespace bench {

struct FederationPlan {
  bool quick = false;                  // fewer repetitions, no 1 GiB migration: a smoke run
  size_t max_migration = size_t(1) << 30;
  int event_reps = 2000;
  // The chains that share a buffer (event.shared.*): its sizes, in bytes.
  std::vector<size_t> shared_sizes = {64, 4096, 65536};
  int bodies = 0;                      // split NBody size; 0: by the device type (CPU 8192, GPU 131072)
  int split_steps = 10;                // timed steps per node count, after 2 warm-up steps
  size_t max_split_nodes = 3;

  int count(int full) const { return quick ? (full / 10 > 1 ? full / 10 : 1) : full; }
};

}  // namespace bench
