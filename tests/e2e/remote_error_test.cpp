// A failure only the daemon's backend can see still reaches the application: as the event's
// negative status, as a message to the context's callback, and from the next clFinish.
#include <condition_variable>
#include <mutex>

#include "cl_harness.h"

using namespace fedcl_test;

namespace {

// The backend requires work-groups of 16: a launch with 8 passes fedcl's own checks but not PoCL's.
const char kFixedGroupSource[] = R"(
__kernel __attribute__((reqd_work_group_size(16, 1, 1))) void fixed(__global int *x) { x[get_global_id(0)] = 1; }
)";

struct Messages {
  std::mutex mutex;
  std::condition_variable cv;
  std::vector<std::string> received;

  static void CL_CALLBACK callback(const char *message, const void *, size_t, void *self) {
    auto *messages = static_cast<Messages *>(self);
    std::lock_guard<std::mutex> lock(messages->mutex);
    messages->received.push_back(message);
    messages->cv.notify_all();
  }
  bool wait_any() {
    std::unique_lock<std::mutex> lock(mutex);
    return cv.wait_for(lock, std::chrono::seconds(30), [&] { return !received.empty(); });
  }
};

struct RemoteError : ::testing::Test {
  Cluster cluster{1};
  cl_device_id device = cluster.devices.at(0);
  Messages messages;
  cl_context context = nullptr;
  cl_command_queue queue = nullptr;
  cl_kernel kernel = nullptr;
  cl_mem mem = nullptr;
  static constexpr size_t n = 64;

  void SetUp() override {
    cl_int err;
    context = clCreateContext(nullptr, 1, &device, Messages::callback, &messages, &err);
    ASSERT_CL_OK(err);
    queue = create_queue(context, device);
    mem = create_buffer(context, CL_MEM_READ_WRITE, n * sizeof(int));
    kernel = create_kernel(build_program(context, kFixedGroupSource), "fixed");
    set_arg(kernel, 0, mem);
  }
};

}  // namespace

TEST_F(RemoteError, RefusedLaunchSurfacesAsynchronously) {
  const size_t global = n, local = 8;
  cl_event event = nullptr;
  // fedcl cannot know the kernel's required size: the call itself succeeds.
  ASSERT_CL_OK(clEnqueueNDRangeKernel(queue, kernel, 1, nullptr, &global, &local, 0, nullptr, &event));
  EXPECT_CL(CL_INVALID_WORK_GROUP_SIZE, clFinish(queue));
  cl_int status = 0;
  ASSERT_CL_OK(clGetEventInfo(event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr));
  EXPECT_CL(CL_INVALID_WORK_GROUP_SIZE, status);
  EXPECT_CL(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST, clWaitForEvents(1, &event));
  ASSERT_TRUE(messages.wait_any()) << "the context callback never heard of the failure";
  {
    std::lock_guard<std::mutex> lock(messages.mutex);
    EXPECT_NE(std::string::npos, messages.received[0].find("clEnqueueNDRangeKernel")) << messages.received[0];
  }
  // The error is reported once; the queue goes on working.
  EXPECT_CL(CL_SUCCESS, clFinish(queue));
  const size_t good = 16;
  ASSERT_CL_OK(clEnqueueNDRangeKernel(queue, kernel, 1, nullptr, &global, &good, 0, nullptr, nullptr));
  std::vector<int> out(n, 0);
  ASSERT_CL_OK(clEnqueueReadBuffer(queue, mem, CL_TRUE, 0, n * sizeof(int), out.data(), 0, nullptr, nullptr));
  for (int value : out) ASSERT_EQ(1, value);
}

TEST_F(RemoteError, RefusedLaunchWithoutAnEventStillFailsTheNextFinish) {
  const size_t global = n, local = 8;
  ASSERT_CL_OK(clEnqueueNDRangeKernel(queue, kernel, 1, nullptr, &global, &local, 0, nullptr, nullptr));
  EXPECT_CL(CL_INVALID_WORK_GROUP_SIZE, clFinish(queue));
  EXPECT_TRUE(messages.wait_any());
}

TEST_F(RemoteError, CommandWaitingOnTheFailedOneFails) {
  const size_t global = n, local = 8;
  cl_event failed = nullptr, after = nullptr;
  ASSERT_CL_OK(clEnqueueNDRangeKernel(queue, kernel, 1, nullptr, &global, &local, 0, nullptr, &failed));
  ASSERT_CL_OK(clEnqueueMarkerWithWaitList(queue, 1, &failed, &after));
  EXPECT_CL(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST, clWaitForEvents(1, &after));
  cl_int status = 0;
  ASSERT_CL_OK(clGetEventInfo(after, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr));
  EXPECT_LT(status, 0);
}

TEST_F(RemoteError, ReadsBehindTheFailedCommandFail) {
  const size_t global = n, local = 8;
  cl_event failed = nullptr, read = nullptr;
  ASSERT_CL_OK(clEnqueueNDRangeKernel(queue, kernel, 1, nullptr, &global, &local, 0, nullptr, &failed));
  std::vector<int> out(n);
  ASSERT_CL_OK(clEnqueueReadBuffer(queue, mem, CL_FALSE, 0, n * sizeof(int), out.data(), 1, &failed, &read));
  EXPECT_CL(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST, clWaitForEvents(1, &read));
  EXPECT_CL(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST,
            clEnqueueReadBuffer(queue, mem, CL_TRUE, 0, n * sizeof(int), out.data(), 1, &failed, nullptr));
}
