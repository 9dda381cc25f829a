// The API-cost and transfer workloads. Each runs identically on any Side and returns its measures;
// fedcl_bench.cpp runs each on the backend and on fedcl and prints both and their ratio.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "bench_cl.h"
#include "bench_link_cost.h"

namespace bench {

struct Measure {
  std::string name;  // e.g. "enqueue_finish.median"; the side's label is appended when printed
  std::string unit;
  double value;
  LinkCost link = {};  // what the link adds at least, for the metric's floor
};
using Measures = std::vector<Measure>;

// How much work each workload does; --quick does a tenth in one round, for a smoke run.
struct Plan {
  bool quick = false;
  size_t max_transfer = size_t(256) << 20;  // raised to kLargestTransfer where the device holds it
  int count(int full) const { return quick ? std::max(1, full / 10) : full; }
};

// The largest transfer size, run where the device can hold it (holds_largest_transfer).
constexpr size_t kLargestTransfer = size_t(1) << 30;
bool holds_largest_transfer(const Side &side);

// The tiny kernel: one work-item adds one to a counter, so the count of runs can be checked.
extern const char *const kTinyKernelSource;

Measures measure_set_kernel_arg(Side &side, const Plan &plan);
Measures measure_ndrange_enqueue(Side &side, const Plan &plan);
Measures measure_tiny_throughput(Side &side, const Plan &plan);
Measures measure_enqueue_finish(Side &side, const Plan &plan);
// A dependency between two queues of the device, kept by the driver, and the same dependency kept
// through the host: the first kernel's completion callback sets a user event the second waits for.
// On the backend, their difference is what the driver alone costs to relay a dependency through the
// host, the least a dependency between daemons costs beside the network (federation_event.cpp).
Measures measure_event_relay(Side &side, const Plan &plan);
Measures measure_create_buffer(Side &side, const Plan &plan);
Measures measure_create_kernel(Side &side, const Plan &plan);
Measures measure_create_release(Side &side, const Plan &plan);
Measures measure_transfers(Side &side, const Plan &plan);

}  // namespace bench
