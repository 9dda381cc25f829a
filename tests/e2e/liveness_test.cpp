// Liveness at the protocol level: a daemon that stops answering without closing its connections
// (frozen with SIGSTOP, as a hung node or a stalled VM would be) is detected by the missing
// heartbeat within FEDCL_DAEMON_TIMEOUT, its work fails, and the other daemons' work completes; a
// long kernel on a healthy daemon is never taken for a dead daemon. Each TEST is its own process,
// so the short timeout set here is the runtime's.
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "cl_harness.h"

using namespace fedcl_test;

namespace {

const char kSpinSource[] = R"(
__kernel void spin(__global float *x, long n) {
  float v = x[get_global_id(0)];
  for (long i = 0; i < n; i++) v = v * 0.999999f + 0.5f;
  x[get_global_id(0)] = v;
}
)";

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// A one-work-item kernel that runs for about `seconds` on this machine (measured on a short run).
struct Spinner {
  cl_command_queue queue;
  cl_kernel kernel;
  cl_mem buffer;
  Spinner(cl_context context, cl_command_queue queue) : queue(queue) {
    kernel = create_kernel(build_program(context, kSpinSource), "spin");
    float zero = 0;
    buffer = create_buffer(context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof zero, &zero);
    clSetKernelArg(kernel, 0, sizeof buffer, &buffer);
  }
  ~Spinner() {
    clReleaseMemObject(buffer);
    clReleaseKernel(kernel);
  }
  cl_int enqueue(cl_long iterations) {
    size_t one = 1;
    clSetKernelArg(kernel, 1, sizeof iterations, &iterations);
    return clEnqueueNDRangeKernel(queue, kernel, 1, nullptr, &one, nullptr, 0, nullptr, nullptr);
  }
  cl_long iterations_for(double seconds) {
    const cl_long probe = 20000000;
    auto start = std::chrono::steady_clock::now();
    if (enqueue(probe) != CL_SUCCESS || clFinish(queue) != CL_SUCCESS) return 0;
    return cl_long(probe * seconds / std::max(seconds_since(start), 1e-3));
  }
};

struct OneQueue {
  cl_context context = nullptr;
  cl_command_queue queue = nullptr;
  explicit OneQueue(cl_device_id device) {
    cl_int err;
    context = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &err);
    queue = create_queue(context, device);
  }
  ~OneQueue() {
    clReleaseCommandQueue(queue);
    clReleaseContext(context);
  }
};

}  // namespace

TEST(Liveness, AFrozenDaemonFailsItsWorkWithinTheTimeoutAndTheOtherFinishes) {
  setenv("FEDCL_DAEMON_TIMEOUT", "2", 1);
  Cluster cluster(2);
  ASSERT_EQ(2u, cluster.devices.size());
  OneQueue frozen(cluster.devices[0]), healthy(cluster.devices[1]);
  Spinner spinner(frozen.context, frozen.queue);
  cl_long second = spinner.iterations_for(1.0);
  ASSERT_GT(second, 0);

  // Mid-program: a kernel is running when the daemon freezes.
  ASSERT_CL_OK(spinner.enqueue(second));
  ASSERT_CL_OK(clFlush(frozen.queue));
  cluster.daemons[0]->signal_all(SIGSTOP);  // the whole node: its main process and its session workers
  auto start = std::chrono::steady_clock::now();
  cl_int finished = clFinish(frozen.queue);
  double waited = seconds_since(start);
  std::printf("a frozen daemon was given up after %.1f s (FEDCL_DAEMON_TIMEOUT=2)\n", waited);
  EXPECT_CL(CL_DEVICE_NOT_AVAILABLE, finished);
  EXPECT_LT(waited, 20.0) << "the frozen daemon was not detected in a bounded time";
  // Later commands on it fail at once; the other daemon's work completes.
  float value = 0;
  EXPECT_CL(CL_DEVICE_NOT_AVAILABLE,
            clEnqueueReadBuffer(frozen.queue, spinner.buffer, CL_TRUE, 0, sizeof value, &value, 0, nullptr, nullptr));
  expect_vector_add(healthy.context, healthy.queue, 1 << 16);
  cluster.daemons[0]->signal_all(SIGCONT);
}

// Per commit: a 6 s kernel, three times a 2 s timeout. `ctest -L long` runs the issue's own case,
// 60 s under the default 10 s (FEDCL_TEST_LONG_KERNEL_SECONDS=60, test liveness.kernel_60s).
TEST(Liveness, ALongKernelOnAHealthyDaemonIsNotMistakenForADeadOne) {
  const char *asked = std::getenv("FEDCL_TEST_LONG_KERNEL_SECONDS");
  const double seconds = asked ? std::atof(asked) : 6.0;
  if (!asked) setenv("FEDCL_DAEMON_TIMEOUT", "2", 1);
  const char *timeout = std::getenv("FEDCL_DAEMON_TIMEOUT");
  Cluster cluster(1);
  OneQueue one(cluster.devices[0]);
  Spinner spinner(one.context, one.queue);
  cl_long iterations = spinner.iterations_for(seconds);
  ASSERT_GT(iterations, 0);
  auto start = std::chrono::steady_clock::now();
  ASSERT_CL_OK(spinner.enqueue(iterations));
  ASSERT_CL_OK(clFinish(one.queue));
  std::printf("the kernel ran for %.1f s with FEDCL_DAEMON_TIMEOUT=%s\n", seconds_since(start),
              timeout ? timeout : "unset (10)");
  float value = 0;
  ASSERT_CL_OK(clEnqueueReadBuffer(one.queue, spinner.buffer, CL_TRUE, 0, sizeof value, &value, 0, nullptr, nullptr));
  EXPECT_GT(value, 0.0f);
}
