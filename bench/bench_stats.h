// Timing and the statistics the benchmark reports (medians and tails; the machines are noisy).
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

namespace bench {

// Microseconds on the monotonic clock since the first call (small values keep a double's precision).
inline double now_us() {
  static const auto origin = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - origin).count();
}

// The q-quantile (0..1) of the samples, by nearest rank; the samples are reordered.
double quantile(std::vector<double> &samples, double q);
inline double median(std::vector<double> &samples) { return quantile(samples, 0.5); }
inline double p99(std::vector<double> &samples) { return quantile(samples, 0.99); }

// A size as the metric names spell it: 64B, 4KiB, 16MiB, 1GiB (the largest unit that divides it).
std::string byte_label(size_t bytes);

// The machine's 1-minute load average (-1 if unknown), printed beside results: loaded machines move them.
double load_average();

}  // namespace bench
