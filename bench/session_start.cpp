// How long a program waits for its first fedcl device: a fresh process's clGetPlatformIDs and
// clGetDeviceIDs, beside the same on the backend platform directly. Through fedcl that is the ICD's
// start, a connection to each daemon, its handshake and its HelloReply, which fedcld's main process
// answers by handing the connection to a spare session worker (docs/design-decisions.md,
// "Processes"). Each sample is a process of its own (the runtime connects once per process), forked
// before this one touches OpenCL.
//
//   fedcl_session_start [--samples N] [--backend NAME] [--side both|fedcl|direct]
//
// Prints `session_start.<side>.median|p90 value us` lines; see bench/README.md. A side measured
// alone should be the only driver its loader sees (OCL_ICD_VENDORS or OCL_ICD_FILENAMES): a loader
// starts every driver it sees, and a CPU backend's start is most of a fresh process's first call.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench_platform.h"

namespace {


void report(const char *side, std::vector<double> samples) {
  std::sort(samples.begin(), samples.end());
  auto at = [&](double q) { return samples[std::min(samples.size() - 1, size_t(q * samples.size()))]; };
  std::printf("session_start.%s.median %.1f us\n", side, at(0.5));
  std::printf("session_start.%s.p90 %.1f us\n", side, at(0.9));
}

}  // namespace

int main(int argc, char **argv) {
  int samples = 30;
  std::string backend = "Portable Computing Language", side = "both";
  for (int i = 1; i < argc; i++) {
    if (!std::strcmp(argv[i], "--samples") && i + 1 < argc) samples = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--backend") && i + 1 < argc) backend = argv[++i];
    else if (!std::strcmp(argv[i], "--side") && i + 1 < argc) side = argv[++i];
    else {
      std::fprintf(stderr, "usage: fedcl_session_start [--samples N] [--backend NAME] [--side both|fedcl|direct]\n");
      return 2;
    }
  }
  bool want_direct = side != "fedcl", want_fedcl = side != "direct";
  std::vector<double> direct, fedcl;
  // Interleaved, so that both sides see the same machine. A fedcl sample's session ends with its
  // process, and its worker with it; the next one takes a spare.
  for (int i = 0; i < samples; i++) {
    double d = want_direct ? bench::first_device_us(backend, false) : 0, f = want_fedcl ? bench::first_device_us("fedcl", true) : 0;
    if (d < 0 || f < 0) return 1;
    direct.push_back(d);
    fedcl.push_back(f);
    usleep(50000);  // the pool starts the next spare meanwhile, as between a node's sessions
  }
  if (want_direct) report("direct", direct);
  if (want_fedcl) report("fedcl", fedcl);
  return 0;
}
