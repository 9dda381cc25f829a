#include "bench_floor.h"

#include <stdexcept>

namespace bench {

namespace {

constexpr double kMiB = 1 << 20;

double us_per(const std::string &unit) {
  if (unit == "us") return 1;
  if (unit == "ms") return 1000;
  throw std::logic_error("no floor for a metric in " + unit);
}

// Microseconds the raw link adds to the work at least.
double link_us(const LinkCost &cost, const Results &results) {
  double us = result(results, cost.tail ? "link.tcp_rtt.p99" : "link.tcp_rtt.median");
  if (cost.stream != LinkCost::kNoStream) {
    double mib_s = result(results, cost.stream == LinkCost::kUpload ? "link.tcp_upload" : "link.tcp_download");
    us += cost.bytes / kMiB / mib_s * 1e6;
  }
  return us;
}

}  // namespace

Measures floor_measures(const Measure &direct, const Measure &fedcl, const Results &results) {
  if (!direct.link.crosses) return {};
  double added_us;
  try {
    added_us = link_us(direct.link, results);
  } catch (const std::out_of_range &) {
    return {};  // the link measurement failed, and said so
  }
  if (direct.unit == "MiB/s") {
    double floor_us = direct.link.bytes / kMiB / direct.value * 1e6 + added_us;
    return {{direct.name + ".floor", direct.unit, direct.link.bytes / kMiB / (floor_us * 1e-6)}};
  }
  double floor = direct.value + added_us / us_per(direct.unit);
  return {{direct.name + ".floor", direct.unit, floor},
          {direct.name + ".overhead_vs_floor", "x", (fedcl.value - direct.value) / (floor - direct.value)}};
}

}  // namespace bench
