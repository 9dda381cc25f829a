#include "bench_stats.h"

#include <cstdio>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace bench {

double quantile(std::vector<double> &samples, double q) {
  if (samples.empty()) throw std::runtime_error("quantile of no samples");
  size_t rank = static_cast<size_t>(std::ceil(q * samples.size()));
  size_t index = rank == 0 ? 0 : std::min(rank, samples.size()) - 1;
  std::nth_element(samples.begin(), samples.begin() + index, samples.end());
  return samples[index];
}

double load_average() {
  double load = -1;
  if (FILE *file = std::fopen("/proc/loadavg", "r")) {
    if (std::fscanf(file, "%lf", &load) != 1) load = -1;
    std::fclose(file);
  }
  return load;
}

std::string byte_label(size_t bytes) {
  static const char *const units[] = {"B", "KiB", "MiB", "GiB"};
  int unit = 0;
  while (unit < 3 && bytes >= 1024 && bytes % 1024 == 0) {
    bytes /= 1024;
    unit++;
  }
  return std::to_string(bytes) + units[unit];
}

}  // namespace bench
