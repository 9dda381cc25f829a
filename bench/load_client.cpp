// fedcl_load_client: one client of bench/load_test.sh. For a given time it runs a checked workload on
// the first device of the fedcl platform, over and over: buffers of a random size are created,
// written (one blocking, one not), combined by a kernel, read back and compared word for word with
// what the host computes, then released. Several threads (--threads) share one context, each with a
// queue and kernel of its own, as a threaded application would.
//
// Prints `load_client.runs_checked N runs` and `load_client.failures N runs` at the end.
// Exit status: 0 every result was right, 1 a result was wrong, 3 an OpenCL call failed (the message
// names it: the load test expects this when it kills the daemon), 2 bad usage. A client still
// running --give-up seconds after it started (default: --seconds + 120) is ended by SIGALRM, so a
// hang shows as its own status instead of a stuck test.
#include <CL/cl.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include "bench_platform.h"

namespace {

const char kSource[] = R"(
__kernel void combine(__global const uint *a, __global const uint *b, __global uint *c, uint factor) {
  size_t i = get_global_id(0);
  c[i] = a[i] * factor + b[i] + (uint)i;
}
)";

// Words per buffer: from a single word to 12 MiB, which the runtime sends as a train of chunks.
const size_t kSizes[] = {1, 17, 1000, 4096, 65536, 262144, 1 << 20, 3 << 20};

struct ClError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void check(cl_int err, const char *what) {
  if (err != CL_SUCCESS) throw ClError(std::string(what) + " failed with " + std::to_string(err));
}

struct Totals {
  std::atomic<uint64_t> checked{0}, failures{0};
};

// One thread's share: its own queue and kernel, runs until the deadline.
void run_workload(cl_context context, cl_device_id device, cl_program program, uint32_t seed,
                  std::chrono::steady_clock::time_point deadline, Totals &totals) {
  cl_int err;
  cl_command_queue queue = clCreateCommandQueue(context, device, 0, &err);
  check(err, "clCreateCommandQueue");
  cl_kernel kernel = clCreateKernel(program, "combine", &err);
  check(err, "clCreateKernel");
  std::mt19937 random(seed);
  std::vector<uint32_t> a, b, c;
  while (std::chrono::steady_clock::now() < deadline) {
    size_t n = kSizes[random() % (sizeof kSizes / sizeof kSizes[0])];
    size_t bytes = n * sizeof(uint32_t);
    uint32_t factor = random();
    a.resize(n);
    b.resize(n);
    c.assign(n, 0);
    for (size_t i = 0; i < n; i++) a[i] = random(), b[i] = uint32_t(i) * 2654435761u ^ factor;
    cl_mem buffers[3];
    for (cl_mem &buffer : buffers) {
      buffer = clCreateBuffer(context, CL_MEM_READ_WRITE, bytes, nullptr, &err);
      check(err, "clCreateBuffer");
    }
    check(clEnqueueWriteBuffer(queue, buffers[0], CL_TRUE, 0, bytes, a.data(), 0, nullptr, nullptr),
          "clEnqueueWriteBuffer (blocking)");
    check(clEnqueueWriteBuffer(queue, buffers[1], CL_FALSE, 0, bytes, b.data(), 0, nullptr, nullptr),
          "clEnqueueWriteBuffer");
    for (cl_uint i = 0; i < 3; i++) check(clSetKernelArg(kernel, i, sizeof(cl_mem), &buffers[i]), "clSetKernelArg");
    check(clSetKernelArg(kernel, 3, sizeof factor, &factor), "clSetKernelArg");
    check(clEnqueueNDRangeKernel(queue, kernel, 1, nullptr, &n, nullptr, 0, nullptr, nullptr),
          "clEnqueueNDRangeKernel");
    check(clEnqueueReadBuffer(queue, buffers[2], CL_TRUE, 0, bytes, c.data(), 0, nullptr, nullptr),
          "clEnqueueReadBuffer");
    for (cl_mem buffer : buffers) check(clReleaseMemObject(buffer), "clReleaseMemObject");
    size_t wrong = 0;
    for (size_t i = 0; i < n; i++)
      if (c[i] != a[i] * factor + b[i] + uint32_t(i)) wrong++;
    if (wrong) {
      std::fprintf(stderr, "fedcl_load_client: %zu of %zu words wrong (seed %u)\n", wrong, n, seed);
      totals.failures++;
    }
    totals.checked++;
  }
  check(clFinish(queue), "clFinish");
  clReleaseKernel(kernel);
  clReleaseCommandQueue(queue);
}

}  // namespace

int main(int argc, char **argv) {
  double seconds = 10;
  uint32_t seed = 1;
  unsigned threads = 1;
  double give_up = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--seconds") == 0) seconds = std::atof(argv[i + 1]);
    else if (std::strcmp(argv[i], "--seed") == 0) seed = uint32_t(std::strtoul(argv[i + 1], nullptr, 10));
    else if (std::strcmp(argv[i], "--threads") == 0) threads = unsigned(std::atoi(argv[i + 1]));
    else if (std::strcmp(argv[i], "--give-up") == 0) give_up = std::atof(argv[i + 1]);
    else argc = 0;
  }
  if (argc % 2 == 0 || seconds <= 0 || threads == 0) {
    std::fprintf(stderr, "usage: fedcl_load_client [--seconds S] [--seed N] [--threads T] [--give-up S]\n");
    return 2;
  }
  alarm(unsigned(give_up > 0 ? give_up : seconds + 120));
  Totals totals;
  std::atomic<bool> cl_failed{false};
  try {
    cl_platform_id platform = bench::find_platform("fedcl", true, "is OCL_ICD_VENDORS set?");
    cl_device_id device;
    check(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, nullptr), "clGetDeviceIDs");
    cl_int err;
    cl_context context = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &err);
    check(err, "clCreateContext");
    const char *text = kSource;
    cl_program program = clCreateProgramWithSource(context, 1, &text, nullptr, &err);
    check(err, "clCreateProgramWithSource");
    check(clBuildProgram(program, 0, nullptr, "", nullptr, nullptr), "clBuildProgram");
    auto deadline = std::chrono::steady_clock::now() +
                    std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(seconds));
    std::vector<std::thread> workers;
    for (unsigned t = 0; t < threads; t++)
      workers.emplace_back([&, t] {
        try {
          run_workload(context, device, program, seed * 1000 + t, deadline, totals);
        } catch (const ClError &e) {
          std::fprintf(stderr, "fedcl_load_client: %s\n", e.what());
          cl_failed = true;
        }
      });
    for (auto &worker : workers) worker.join();
    if (!cl_failed) {
      clReleaseProgram(program);
      clReleaseContext(context);
    }
  } catch (const std::exception &e) {  // OpenCL's failures, and no fedcl platform
    std::fprintf(stderr, "fedcl_load_client: %s\n", e.what());
    cl_failed = true;
  }
  std::printf("load_client.runs_checked %llu runs\nload_client.failures %llu runs\n",
              (unsigned long long)totals.checked.load(), (unsigned long long)totals.failures.load());
  if (totals.failures) return 1;
  return cl_failed ? 3 : 0;
}
