// Daemons that are not there, or die: the application gets errors, never a hang.
#include <sys/wait.h>

#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <mutex>
#include <thread>

#include "cl_harness.h"
#include "recording_proxy.h"

using namespace fedcl_test;

namespace {

// Collects the messages a context's notify callback receives.
struct Notices {
  std::mutex mutex;
  std::condition_variable cv;
  std::vector<std::string> messages;

  static void CL_CALLBACK callback(const char *message, const void *, size_t, void *self) {
    auto *notices = static_cast<Notices *>(self);
    std::lock_guard<std::mutex> lock(notices->mutex);
    notices->messages.push_back(message);
    notices->cv.notify_all();
  }
  // Waits (bounded) for a message containing text.
  bool wait_for(const std::string &text) {
    std::unique_lock<std::mutex> lock(mutex);
    return cv.wait_for(lock, std::chrono::seconds(30), [&] {
      for (const auto &message : messages)
        if (message.find(text) != std::string::npos) return true;
      return false;
    });
  }
};

}  // namespace

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
  Notices notices;
  cl_int err;
  cl_context context = clCreateContext(nullptr, 1, &device, Notices::callback, &notices, &err);
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
