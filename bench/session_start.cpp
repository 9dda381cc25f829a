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
#include <sys/wait.h>
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

// In a fresh child: the microseconds from the first OpenCL call to the device list, or -1.
double first_device_us(const std::string &name_part, bool is_fedcl) {
  int fds[2];
  if (pipe(fds) != 0) return -1;
  pid_t child = fork();
  if (child == 0) {
    close(fds[0]);
    auto start = std::chrono::steady_clock::now();
    double us = -1;
    try {
      cl_platform_id platform = bench::find_platform(name_part, is_fedcl, "see bench/README.md");
      cl_device_id device;
      if (clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, nullptr) == CL_SUCCESS)
        us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
    } catch (const std::exception &e) {
      std::fprintf(stderr, "fedcl_session_start: %s\n", e.what());
    }
    ssize_t ignored = write(fds[1], &us, sizeof us);
    (void)ignored;
    _exit(0);
  }
  close(fds[1]);
  double us = -1;
  if (read(fds[0], &us, sizeof us) != ssize_t(sizeof us)) us = -1;
  close(fds[0]);
  waitpid(child, nullptr, 0);
  return us;
}

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
    double d = want_direct ? first_device_us(backend, false) : 0, f = want_fedcl ? first_device_us("fedcl", true) : 0;
    if (d < 0 || f < 0) return 1;
    direct.push_back(d);
    fedcl.push_back(f);
    usleep(50000);  // the pool starts the next spare meanwhile, as between a node's sessions
  }
  if (want_direct) report("direct", direct);
  if (want_fedcl) report("fedcl", fedcl);
  return 0;
}
