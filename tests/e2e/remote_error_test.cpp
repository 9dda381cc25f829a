// A failure only the daemon's backend can see still reaches the application: as the event's
// negative status, as a message to the context's callback, and from the next clFinish.
#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <thread>
#include <mutex>

#include "cl_harness.h"

using namespace fedcl_test;

namespace {

// A by-value argument of the wrong size that only the backend sees: a compiled-and-linked program
// has no source for fedcld's metadata twin, so fedcl checks its arguments without metadata and the
// backend's clSetKernelArg refuses the value when the launch brings it.
const char kStoreSource[] = "__kernel void store(__global int *x, int v) { x[get_global_id(0)] = v; }";

struct Messages {
  std::mutex mutex;
  std::condition_variable cv;
  std::vector<std::string> received;
  std::chrono::milliseconds delay{0};  // a slow callback
  std::atomic<bool> entered{false}, left{false};

  static void CL_CALLBACK callback(const char *message, const void *, size_t, void *self) {
    auto *messages = static_cast<Messages *>(self);
    messages->entered = true;
    std::this_thread::sleep_for(messages->delay);
    {
      std::lock_guard<std::mutex> lock(messages->mutex);
      messages->received.push_back(message);
      messages->cv.notify_all();
    }
    messages->left = true;
  }
  bool wait_any() {
    std::unique_lock<std::mutex> lock(mutex);
    return cv.wait_for(lock, std::chrono::seconds(30), [&] { return !received.empty(); });
  }
};

// A PoCL kernel cache of the fixture's own for the daemon it starts (POCL_CACHE_DIR, inherited). The
// machine's cache is shared by every process, and PoCL's cache has races between processes
// (pocl/pocl#430): clLinkProgram failed here with CL_LINK_PROGRAM_FAILURE in three full runs while
// other tests built beside it, even with a source text of its own per test.
struct PrivatePoclCache {
  std::string dir;
  PrivatePoclCache() {
    char pattern[] = "/tmp/fedcl-pocl-cache-XXXXXX";
    if (mkdtemp(pattern)) dir = pattern;
    if (!dir.empty()) setenv("POCL_CACHE_DIR", dir.c_str(), 1);
  }
  ~PrivatePoclCache() {
    unsetenv("POCL_CACHE_DIR");
    std::error_code ignored;
    if (!dir.empty()) std::filesystem::remove_all(dir, ignored);
  }
};

struct RemoteError : ::testing::Test {
  PrivatePoclCache cache;  // before the cluster: its daemon reads the variable when it starts
  Cluster cluster{1};
  cl_device_id device = cluster.devices.at(0);
  Messages messages;
  cl_context context = nullptr;
  cl_command_queue queue = nullptr;
  cl_kernel kernel = nullptr;
  cl_mem mem = nullptr;
  cl_program object = nullptr, linked = nullptr;
  static constexpr size_t n = 64;

  void SetUp() override {
    cl_int err;
    context = clCreateContext(nullptr, 1, &device, Messages::callback, &messages, &err);
    ASSERT_CL_OK(err);
    queue = create_queue(context, device);
    mem = create_buffer(context, CL_MEM_READ_WRITE, n * sizeof(int));
    // Every test its own source text as well (these tests run side by side, ctest -j2).
    std::string source_text = std::string("// ") + ::testing::UnitTest::GetInstance()->current_test_info()->name() +
                              "\n" + kStoreSource;
    const char *source = source_text.c_str();
    object = clCreateProgramWithSource(context, 1, &source, nullptr, &err);
    ASSERT_CL_OK(clCompileProgram(object, 1, &device, "", 0, nullptr, nullptr, nullptr, nullptr));
    linked = clLinkProgram(context, 1, &device, "", 1, &object, nullptr, nullptr, &err);
    ASSERT_CL_OK(err);
    kernel = create_kernel(linked, "store");
    set_arg(kernel, 0, mem);
    const short too_short = 1;  // the kernel takes an int
    set_arg(kernel, 1, too_short);
  }

  // The context goes before the daemon does: otherwise losing the daemon at the end calls the
  // context's callback into a Messages already destroyed.
  void TearDown() override {
    if (kernel) clReleaseKernel(kernel);
    if (linked) clReleaseProgram(linked);
    if (object) clReleaseProgram(object);
    if (mem) clReleaseMemObject(mem);
    if (queue) clReleaseCommandQueue(queue);
    if (context) clReleaseContext(context);
  }

  // A launch that passes fedcl's checks and fails on the daemon.
  cl_int refused_launch(cl_event *event) {
    const size_t global = n;
    return clEnqueueNDRangeKernel(queue, kernel, 1, nullptr, &global, nullptr, 0, nullptr, event);
  }
};

}  // namespace

TEST_F(RemoteError, RefusedLaunchSurfacesAsynchronously) {
  cl_event event = nullptr;
  // fedcl cannot know the argument's type: the call itself succeeds.
  ASSERT_CL_OK(refused_launch(&event));
  EXPECT_CL(CL_INVALID_ARG_SIZE, clFinish(queue));
  cl_int status = 0;
  ASSERT_CL_OK(clGetEventInfo(event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr));
  EXPECT_CL(CL_INVALID_ARG_SIZE, status);
  EXPECT_CL(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST, clWaitForEvents(1, &event));
  ASSERT_TRUE(messages.wait_any()) << "the context callback never heard of the failure";
  {
    std::lock_guard<std::mutex> lock(messages.mutex);
    EXPECT_NE(std::string::npos, messages.received[0].find("clSetKernelArg")) << messages.received[0];
  }
  // The error is reported once; the queue goes on working.
  EXPECT_CL(CL_SUCCESS, clFinish(queue));
  set_arg(kernel, 1, 1);
  const size_t global = n;
  ASSERT_CL_OK(clEnqueueNDRangeKernel(queue, kernel, 1, nullptr, &global, nullptr, 0, nullptr, nullptr));
  std::vector<int> out(n, 0);
  ASSERT_CL_OK(clEnqueueReadBuffer(queue, mem, CL_TRUE, 0, n * sizeof(int), out.data(), 0, nullptr, nullptr));
  for (int value : out) ASSERT_EQ(1, value);
}

// The application may free the callback's data once clReleaseContext returns (the fixture does): a
// call under way ends first, and none starts after. fedcl's callback thread used to call on into
// freed data (ThreadSanitizer, and a segfault once in CommandWaitingOnTheFailedOneFails).
TEST_F(RemoteError, TheContextsReleaseWaitsForItsCallbackUnderWay) {
  messages.delay = std::chrono::milliseconds(500);
  ASSERT_CL_OK(refused_launch(nullptr));
  EXPECT_CL(CL_INVALID_ARG_SIZE, clFinish(queue));
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!messages.entered && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_TRUE(messages.entered) << "the context callback never heard of the failure";
  TearDown();
  kernel = nullptr, linked = object = nullptr, mem = nullptr, queue = nullptr, context = nullptr;
  EXPECT_TRUE(messages.left) << "clReleaseContext returned while the context's callback still ran";
}

TEST_F(RemoteError, RefusedLaunchWithoutAnEventStillFailsTheNextFinish) {
  ASSERT_CL_OK(refused_launch(nullptr));
  EXPECT_CL(CL_INVALID_ARG_SIZE, clFinish(queue));
  EXPECT_TRUE(messages.wait_any());
}

TEST_F(RemoteError, CommandWaitingOnTheFailedOneFails) {
  cl_event failed = nullptr, after = nullptr;
  ASSERT_CL_OK(refused_launch(&failed));
  EXPECT_CL(CL_INVALID_ARG_SIZE, clFinish(queue));  // the launch's own error, reported once
  ASSERT_CL_OK(clEnqueueMarkerWithWaitList(queue, 1, &failed, &after));
  EXPECT_CL(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST, clWaitForEvents(1, &after));
  cl_int status = 0;
  ASSERT_CL_OK(clGetEventInfo(after, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr));
  EXPECT_LT(status, 0);
  // The marker's failure is its event's: clFinish, which names no such error, reports none.
  EXPECT_CL(CL_SUCCESS, clFinish(queue));
}

TEST_F(RemoteError, ReadsBehindTheFailedCommandFail) {
  cl_event failed = nullptr, read = nullptr;
  ASSERT_CL_OK(refused_launch(&failed));
  std::vector<int> out(n);
  ASSERT_CL_OK(clEnqueueReadBuffer(queue, mem, CL_FALSE, 0, n * sizeof(int), out.data(), 1, &failed, &read));
  EXPECT_CL(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST, clWaitForEvents(1, &read));
  EXPECT_CL(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST,
            clEnqueueReadBuffer(queue, mem, CL_TRUE, 0, n * sizeof(int), out.data(), 1, &failed, nullptr));
}

// A backend out of contexts (NVIDIA's answer once a GPU holds as many as it can, seen in the CTS's
// multiples context_multiple_contexts_same_device): clCreateContext itself fails with the backend's
// error, and the contexts made before go on working. Before, the create was not waited for, and the
// application learnt of it as a CL_INVALID_PROGRAM from its next build.
TEST(BackendRefusal, AContextTheBackendRefusesFailsInClCreateContext) {
  auto cluster = cluster_with_shim(FEDCL_REFUSING_BACKEND_PATH, {{"FEDCL_TEST_CONTEXTS_BEFORE_REFUSAL", "2"}});
  ASSERT_TRUE(cluster);
  cl_device_id device = cluster->devices.at(0);
  cl_int err = CL_SUCCESS;
  cl_context made[2];
  for (cl_context &context : made) {
    context = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &err);
    ASSERT_CL_OK(err);
  }
  err = CL_SUCCESS;
  cl_context refused = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &err);
  EXPECT_EQ(nullptr, refused);
  EXPECT_CL(CL_OUT_OF_HOST_MEMORY, err);

  // The ones made before still build and run.
  for (cl_context context : made) {
    cl_command_queue queue = create_queue(context, device);
    cl_program program = build_program(context, kStoreSource);
    cl_kernel kernel = create_kernel(program, "store");
    cl_mem mem = create_buffer(context, CL_MEM_READ_WRITE, sizeof(int));
    set_arg(kernel, 0, mem);
    set_arg(kernel, 1, cl_int(42));
    const size_t one = 1;
    ASSERT_CL_OK(clEnqueueNDRangeKernel(queue, kernel, 1, nullptr, &one, nullptr, 0, nullptr, nullptr));
    cl_int value = 0;
    ASSERT_CL_OK(clEnqueueReadBuffer(queue, mem, CL_TRUE, 0, sizeof value, &value, 0, nullptr, nullptr));
    EXPECT_EQ(42, value);
    clReleaseMemObject(mem);
    clReleaseKernel(kernel);
    clReleaseProgram(program);
    clReleaseCommandQueue(queue);
    clReleaseContext(context);
  }
}

// A queue of a GPU lends its reads page-locked memory (staging_pool.h), which keeps the queue's
// context alive until it comes back. The memory of a read's reply came back only once the client
// acknowledged the bytes (for a resumption), so a program that made and released contexts in a loop,
// reading a little in each, left every context alive in fedcld until much later: the CTS's
// repeated_setup_cleanup filled an H100 with them, and the next programs' contexts were refused.
// With --page-locked-reads yes, PoCL's queues lend it too; a preloaded shim counts the contexts the
// worker still holds a reference to.
TEST(BackendRefusal, ContextsReleasedAfterPageLockedReadsAreGoneOnTheBackend) {
  std::string live_file = ::testing::TempDir() + "fedcl-contexts-live-" + std::to_string(getpid());
  auto cluster = cluster_with_shim(FEDCL_REFUSING_BACKEND_PATH, {{"FEDCL_TEST_CONTEXTS_LIVE", live_file}},
                                   {"--page-locked-reads", "yes"});
  ASSERT_TRUE(cluster);
  cl_device_id device = cluster->devices.at(0);
  auto live = [&] {
    std::ifstream in(live_file);
    int count = -1;
    in >> count;
    return count;
  };
  cl_int err;
  cl_context kept = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &err);
  ASSERT_CL_OK(err);
  cl_command_queue kept_queue = create_queue(kept, device);
  for (int round = 0; round < 8; round++) {
    cl_context context = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &err);
    ASSERT_CL_OK(err);
    cl_command_queue queue = create_queue(context, device);
    cl_mem mem = create_buffer(context, CL_MEM_READ_WRITE, 4096);
    std::vector<uint8_t> bytes(4096);
    ASSERT_CL_OK(clEnqueueReadBuffer(queue, mem, CL_TRUE, 0, bytes.size(), bytes.data(), 0, nullptr, nullptr));
    clReleaseMemObject(mem);
    clReleaseCommandQueue(queue);
    clReleaseContext(context);
  }
  ASSERT_CL_OK(clFinish(kept_queue));  // after every release above, in the daemon's order
  int count = live();
  for (int attempt = 0; attempt < 50 && count > 1; attempt++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    count = live();
  }
  EXPECT_EQ(1, count) << "the worker still holds contexts the client released";
  clReleaseCommandQueue(kept_queue);
  clReleaseContext(kept);
  std::remove(live_file.c_str());
}
