// Daemons that are not there, or die: the application gets errors, never a hang.
#include <sys/wait.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <mutex>
#include <thread>

#include "cl_harness.h"
#include "recording_proxy.h"

using namespace fedcl_test;

TEST(DaemonFailure, NoDaemonRunningMeansNoDevicesAndOneWarning) {
  std::string endpoint = "127.0.0.1:" + std::to_string(closed_port());
  set_hosts(endpoint);
  cl_platform_id platform = fedcl_platform();
  StderrCapture capture;
  cl_int err = CL_SUCCESS;
  std::vector<cl_device_id> devices = fedcl_devices(platform, &err);
  cl_int again = CL_SUCCESS;
  fedcl_devices(platform, &again);  // the runtime does not retry (and warn) on every call
  std::string warnings = capture.text();
  EXPECT_CL(CL_DEVICE_NOT_FOUND, err);
  EXPECT_CL(CL_DEVICE_NOT_FOUND, again);
  EXPECT_TRUE(devices.empty());
  EXPECT_EQ(1u, count_occurrences(warnings, "warning")) << warnings;
  EXPECT_NE(std::string::npos, warnings.find(endpoint)) << warnings;
}

TEST(DaemonFailure, OneOfTwoDaemonsDownLeavesTheOtherWorking) {
  DaemonProcess alive({"--name", "alive"});
  std::string dead = "127.0.0.1:" + std::to_string(closed_port());
  set_hosts(dead + "," + alive.endpoint());
  cl_platform_id platform = fedcl_platform();
  StderrCapture capture;
  cl_int err;
  std::vector<cl_device_id> devices = fedcl_devices(platform, &err);
  std::string warnings = capture.text();
  ASSERT_CL_OK(err);
  ASSERT_EQ(1u, devices.size());
  EXPECT_NE(std::string::npos, device_string(devices[0], CL_DEVICE_NAME).find(" @ alive"));
  EXPECT_EQ(1u, count_occurrences(warnings, "warning")) << warnings;
  EXPECT_NE(std::string::npos, warnings.find(dead)) << warnings;
  cl_context context = clCreateContext(nullptr, 1, devices.data(), nullptr, nullptr, &err);
  ASSERT_CL_OK(err);
  expect_vector_add(context, create_queue(context, devices[0]), 5000);
}

TEST(DaemonFailure, KilledDaemonTurnsIntoErrors) {
  Cluster cluster(1);
  cl_device_id device = cluster.devices.at(0);
  ContextNotices notices;
  cl_int err;
  cl_context context = clCreateContext(nullptr, 1, &device, ContextNotices::callback, &notices, &err);
  ASSERT_CL_OK(err);
  cl_command_queue queue = create_queue(context, device);
  expect_vector_add(context, queue, 1000);  // the daemon worked until now

  // A kernel held back by a user event is pending on the daemon when it dies.
  cl_program program = build_program(context, kScaleSource);
  cl_kernel kernel = create_kernel(program, "scale");
  const size_t n = 1024;
  cl_mem mem = create_buffer(context, CL_MEM_READ_WRITE, n * sizeof(int));
  set_arg(kernel, 0, mem);
  set_arg(kernel, 1, 2);
  cl_event gate = clCreateUserEvent(context, &err);
  ASSERT_CL_OK(err);
  cl_event pending;
  ASSERT_CL_OK(clEnqueueNDRangeKernel(queue, kernel, 1, nullptr, &n, nullptr, 1, &gate, &pending));
  ASSERT_CL_OK(clFlush(queue));

  cluster.daemons[0]->kill();

  EXPECT_CL(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST, clWaitForEvents(1, &pending));
  cl_int status = 0;
  ASSERT_CL_OK(clGetEventInfo(pending, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr));
  EXPECT_LT(status, 0);
  EXPECT_NE(CL_SUCCESS, clFinish(queue));
  std::vector<int> host(n);
  EXPECT_NE(CL_SUCCESS, clEnqueueReadBuffer(queue, mem, CL_TRUE, 0, n * sizeof(int), host.data(), 0, nullptr, nullptr));
  EXPECT_NE(CL_SUCCESS, clEnqueueNDRangeKernel(queue, kernel, 1, nullptr, &n, nullptr, 0, nullptr, nullptr));
  cl_bool available = CL_TRUE;
  ASSERT_CL_OK(clGetDeviceInfo(device, CL_DEVICE_AVAILABLE, sizeof available, &available, nullptr));
  EXPECT_EQ(CL_FALSE, available);
  EXPECT_TRUE(notices.wait_for(cluster.daemons[0]->endpoint())) << "no context notice names the lost daemon";
  // Completing the gate now has nowhere to go, and must not hang or crash either.
  EXPECT_CL(CL_SUCCESS, clSetUserEventStatus(gate, CL_COMPLETE));
}

TEST(DaemonFailure, BlockingReadInFlightWhenTheDaemonDies) {
  Cluster cluster(1);
  cl_device_id device = cluster.devices.at(0);
  cl_int err;
  cl_context context = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &err);
  ASSERT_CL_OK(err);
  cl_command_queue queue = create_queue(context, device);
  const size_t n = 1 << 20;
  cl_mem mem = create_buffer(context, CL_MEM_READ_WRITE, n);
  cl_event gate = clCreateUserEvent(context, &err);
  ASSERT_CL_OK(err);
  std::vector<char> host(n);
  // The read cannot be answered before the gate opens; the daemon dies first.
  std::thread killer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    cluster.daemons[0]->kill();
  });
  err = clEnqueueReadBuffer(queue, mem, CL_TRUE, 0, n, host.data(), 1, &gate, nullptr);
  killer.join();
  EXPECT_NE(CL_SUCCESS, err);
  EXPECT_NE(CL_SUCCESS, clFinish(queue));
}

TEST(DaemonFailure, SurvivingDaemonKeepsWorkingAfterTheOtherDies) {
  Cluster cluster(2);
  cl_int err;
  cl_context solo[2];
  for (int d = 0; d < 2; d++) {
    solo[d] = clCreateContext(nullptr, 1, &cluster.devices[d], nullptr, nullptr, &err);
    ASSERT_CL_OK(err);
  }
  cl_command_queue doomed = create_queue(solo[0], cluster.devices[0]);
  cl_command_queue survivor = create_queue(solo[1], cluster.devices[1]);
  expect_vector_add(solo[0], doomed, 256);
  cluster.daemons[0]->kill();
  EXPECT_NE(CL_SUCCESS, clFinish(doomed));
  expect_vector_add(solo[1], survivor, 4096);
}

TEST(DaemonFailure, DaemonStoppedWithSigtermExitsCleanlyAndClientsSeeErrors) {
  Cluster cluster(1);
  cl_device_id device = cluster.devices.at(0);
  cl_int err;
  cl_context context = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &err);
  ASSERT_CL_OK(err);
  cl_command_queue queue = create_queue(context, device);
  expect_vector_add(context, queue, 777);
  // A session is open while the daemon shuts down: it must still exit, and with status 0.
  int status = cluster.daemons[0]->stop();
  ASSERT_NE(-1, status) << "fedcld ignored SIGTERM";
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "wait status " << status;
  EXPECT_NE(CL_SUCCESS, clFinish(queue));
}

TEST(DaemonFailure, ConnectionCutInTheMiddleOfAReadsBytesFailsTheRead) {
  // Without resumption: a dropped connection loses the daemon at once (resume_test.cpp resumes it).
  DaemonProcess daemon({"--resume-window", "0"});
  RecordingProxy proxy(daemon.port());
  set_hosts(proxy.endpoint());
  cl_int err;
  std::vector<cl_device_id> devices = fedcl_devices(fedcl_platform(), &err);
  ASSERT_CL_OK(err);
  cl_context context = clCreateContext(nullptr, 1, devices.data(), nullptr, nullptr, &err);
  ASSERT_CL_OK(err);
  cl_command_queue queue = create_queue(context, devices[0]);
  const size_t n = 1 << 20;  // one reply (reads are cut into chunks above 2 MiB)
  cl_mem mem = create_buffer(context, CL_MEM_READ_WRITE, n);
  ASSERT_CL_OK(clFinish(queue));
  // Nothing else is under way, so half the read's size from now lands inside its reply's bytes.
  proxy.cut_daemon_stream_after(n / 2);
  std::vector<char> host(n);
  auto read = std::async(std::launch::async, [&] {
    return clEnqueueReadBuffer(queue, mem, CL_TRUE, 0, n, host.data(), 0, nullptr, nullptr);
  });
  if (read.wait_for(std::chrono::seconds(30)) != std::future_status::ready) {
    std::fprintf(stderr, "FAILURE: the blocking read did not return within 30 s of the cut\n");
    std::_Exit(1);  // the read's thread cannot be joined
  }
  EXPECT_CL(CL_DEVICE_NOT_AVAILABLE, read.get());
}

namespace {

// The status of event once it has one, or CL_QUEUED if it has none within the time: a hang is
// reported, not suffered.
cl_int settled_status(cl_event event, std::chrono::seconds within = std::chrono::seconds(30)) {
  auto deadline = std::chrono::steady_clock::now() + within;
  cl_int status = CL_QUEUED;
  while (std::chrono::steady_clock::now() < deadline) {
    if (clGetEventInfo(event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr) != CL_SUCCESS)
      return CL_QUEUED;
    if (status <= CL_COMPLETE) return status;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return CL_QUEUED;
}

}  // namespace

// Bytes on their way from a daemon that is lost: the commands that wait for them fail, and their
// queue on the surviving daemon goes on. The survivor fails the receives it has when its peer link
// to the lost daemon closes; a receive queued after that fails only when the client relays the
// sender's failure (once the resume window is over). The second copy to the survivor takes the
// first one's place in the client's bookkeeping, so the client let go of the first receive's event
// before that; the survivor must still know the event then (before the fix it had forgotten it,
// and its in-order queue waited forever).
TEST(DaemonFailure, CommandsWaitingForBytesFromALostDaemonFailAndTheirQueueGoesOn) {
  OutputCapture warnings(stderr);
  Cluster cluster(2, {"--resume-window", "5"});
  cl_int err;
  cl_context context = clCreateContext(nullptr, 2, cluster.devices.data(), nullptr, nullptr, &err);
  ASSERT_CL_OK(err);
  cl_command_queue here = create_queue(context, cluster.devices[0]);
  cl_command_queue doomed = create_queue(context, cluster.devices[1]);
  cl_program program = build_program(context, kScaleSource);
  constexpr size_t n = 4096;
  cl_mem shared = create_buffer(context, CL_MEM_READ_WRITE, n * sizeof(int));
  cl_mem probe = create_buffer(context, CL_MEM_READ_WRITE, n * sizeof(int));
  std::vector<cl_kernel> kernels;
  auto kernel = [&](const char *name, cl_mem mem) {
    kernels.push_back(create_kernel(program, name));
    set_arg(kernels.back(), 0, mem);
    set_arg(kernels.back(), 1, 2);
    return kernels.back();
  };
  const int one = 1;
  for (cl_mem mem : {shared, probe})
    ASSERT_CL_OK(clEnqueueFillBuffer(here, mem, &one, sizeof one, 0, n * sizeof(int), 0, nullptr, nullptr));
  ASSERT_CL_OK(clFinish(here));
  cl_event gate = clCreateUserEvent(context, &err);
  ASSERT_CL_OK(err);
  cl_event added = nullptr, probe_added = nullptr, probe_scaled = nullptr;
  ASSERT_CL_OK(clEnqueueNDRangeKernel(doomed, kernel("offset", shared), 1, nullptr, &n, nullptr, 1, &gate, &added));
  ASSERT_CL_OK(clEnqueueNDRangeKernel(doomed, kernel("offset", probe), 1, nullptr, &n, nullptr, 1, &gate, &probe_added));
  ASSERT_CL_OK(clEnqueueNDRangeKernel(here, kernel("scale", probe), 1, nullptr, &n, nullptr, 1, &probe_added,
                                      &probe_scaled));
  ASSERT_CL_OK(clFlush(doomed));
  ASSERT_CL_OK(clFlush(here));
  cluster.daemons[1]->kill();
  // The survivor has seen its link close: the receive it had failed.
  ASSERT_LT(settled_status(probe_scaled), 0);
  // Within the resume window the client still queues work for the lost daemon. No wait lists: the
  // commands here wait only for the bytes (were they to wait for the lost daemon's events too, the
  // failure of those would fail them whatever became of the bytes).
  cl_event scaled = nullptr, added_again = nullptr, scaled_again = nullptr;
  ASSERT_CL_OK(clEnqueueNDRangeKernel(here, kernel("scale", shared), 1, nullptr, &n, nullptr, 0, nullptr, &scaled));
  ASSERT_CL_OK(clEnqueueNDRangeKernel(doomed, kernel("offset", shared), 1, nullptr, &n, nullptr, 0, nullptr,
                                      &added_again));
  ASSERT_CL_OK(clEnqueueNDRangeKernel(here, kernel("scale", shared), 1, nullptr, &n, nullptr, 0, nullptr,
                                      &scaled_again));
  ASSERT_CL_OK(clFlush(here));
  ASSERT_CL_OK(clSetUserEventStatus(gate, CL_COMPLETE));
  ASSERT_LT(settled_status(scaled), 0);
  ASSERT_LT(settled_status(scaled_again), 0);
  // The queue goes on: a marker behind both, then a buffer of its own filled and read back.
  cl_event marker = nullptr;
  ASSERT_CL_OK(clEnqueueMarkerWithWaitList(here, 0, nullptr, &marker));
  ASSERT_CL_OK(clFlush(here));
  ASSERT_NE(CL_QUEUED, settled_status(marker)) << "the surviving daemon's queue is blocked";
  cl_mem fresh = create_buffer(context, CL_MEM_READ_WRITE, n * sizeof(int));
  const int seven = 7;
  ASSERT_CL_OK(clEnqueueFillBuffer(here, fresh, &seven, sizeof seven, 0, n * sizeof(int), 0, nullptr, nullptr));
  std::vector<int> out(n, 0);
  ASSERT_CL_OK(clEnqueueReadBuffer(here, fresh, CL_TRUE, 0, n * sizeof(int), out.data(), 0, nullptr, nullptr));
  for (size_t i = 0; i < n; i++) ASSERT_EQ(7, out[i]) << "at " << i;
  // The daemon is gone, not the link between the two: no warning says that the link failed.
  EXPECT_EQ(std::string::npos, warnings.so_far().find("the peer link between daemons")) << warnings.so_far();
  for (cl_event event : {gate, added, probe_added, probe_scaled, scaled, added_again, scaled_again, marker})
    clReleaseEvent(event);
  for (cl_kernel k : kernels) clReleaseKernel(k);
  for (cl_mem mem : {fresh, shared, probe}) clReleaseMemObject(mem);
  clReleaseProgram(program);
  clReleaseCommandQueue(here);
  clReleaseCommandQueue(doomed);
  clReleaseContext(context);
}
