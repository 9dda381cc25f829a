// Reference counts and the information fedcl keeps about its objects.
#include <atomic>
#include <chrono>
#include <thread>

#include "cl_harness.h"

using namespace fedcl_test;

namespace {

template <typename Handle, typename Query>
cl_uint count(Handle handle, Query query, cl_uint param) {
  cl_uint value = 0;
  EXPECT_CL(CL_SUCCESS, query(handle, param, sizeof value, &value, nullptr));
  return value;
}

// Retains twice and releases twice, checking the count after each step.
template <typename Handle, typename Query>
void expect_counting(Handle handle, Query query, cl_uint param, cl_int (*retain)(Handle), cl_int (*release)(Handle)) {
  EXPECT_EQ(1u, count(handle, query, param));
  EXPECT_CL(CL_SUCCESS, retain(handle));
  EXPECT_EQ(2u, count(handle, query, param));
  EXPECT_CL(CL_SUCCESS, retain(handle));
  EXPECT_EQ(3u, count(handle, query, param));
  EXPECT_CL(CL_SUCCESS, release(handle));
  EXPECT_EQ(2u, count(handle, query, param));
  EXPECT_CL(CL_SUCCESS, release(handle));
  EXPECT_EQ(1u, count(handle, query, param));
}

}  // namespace

TEST(Objects, ExactReferenceCounts) {
  Cluster cluster(1);
  cl_device_id device = cluster.devices.at(0);
  cl_int err;
  cl_context context = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &err);
  ASSERT_CL_OK(err);
  expect_counting(context, clGetContextInfo, CL_CONTEXT_REFERENCE_COUNT, clRetainContext, clReleaseContext);

  cl_command_queue queue = create_queue(context, device);
  expect_counting(queue, clGetCommandQueueInfo, CL_QUEUE_REFERENCE_COUNT, clRetainCommandQueue, clReleaseCommandQueue);
  cl_mem mem = create_buffer(context, CL_MEM_READ_WRITE, 1024);
  expect_counting(mem, clGetMemObjectInfo, CL_MEM_REFERENCE_COUNT, clRetainMemObject, clReleaseMemObject);
  cl_program program = build_program(context, kScaleSource);
  expect_counting(program, clGetProgramInfo, CL_PROGRAM_REFERENCE_COUNT, clRetainProgram, clReleaseProgram);
  cl_kernel kernel = create_kernel(program, "scale");
  expect_counting(kernel, clGetKernelInfo, CL_KERNEL_REFERENCE_COUNT, clRetainKernel, clReleaseKernel);
  cl_event user = clCreateUserEvent(context, &err);
  ASSERT_CL_OK(err);
  expect_counting(user, clGetEventInfo, CL_EVENT_REFERENCE_COUNT, clRetainEvent, clReleaseEvent);

  // A command's event: the application holds exactly one reference, even after completion.
  cl_event marker;
  ASSERT_CL_OK(clEnqueueMarkerWithWaitList(queue, 0, nullptr, &marker));
  ASSERT_CL_OK(clFinish(queue));
  expect_counting(marker, clGetEventInfo, CL_EVENT_REFERENCE_COUNT, clRetainEvent, clReleaseEvent);

  // Objects that other objects use keep the count the application gave them.
  EXPECT_EQ(1u, count(context, clGetContextInfo, CL_CONTEXT_REFERENCE_COUNT));
  EXPECT_EQ(1u, count(program, clGetProgramInfo, CL_PROGRAM_REFERENCE_COUNT));

  for (cl_event event : {marker, user}) ASSERT_CL_OK(clReleaseEvent(event));
  ASSERT_CL_OK(clReleaseKernel(kernel));
  ASSERT_CL_OK(clReleaseProgram(program));
  ASSERT_CL_OK(clReleaseMemObject(mem));
  ASSERT_CL_OK(clReleaseCommandQueue(queue));
  ASSERT_CL_OK(clReleaseContext(context));
}

TEST(Objects, DestructorCallbacksRunAfterTheLastRelease) {
  Cluster cluster(1);
  cl_device_id device = cluster.devices.at(0);
  cl_int err;
  cl_context context = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &err);
  ASSERT_CL_OK(err);
  static std::atomic<int> order{0};
  static std::atomic<int> mem_done{0}, context_done{0};
  cl_mem mem = create_buffer(context, CL_MEM_READ_WRITE, 64);
  ASSERT_CL_OK(clSetMemObjectDestructorCallback(mem, [](cl_mem, void *) { mem_done = ++order; }, nullptr));
  ASSERT_CL_OK(clSetContextDestructorCallback(context, [](cl_context, void *) { context_done = ++order; }, nullptr));
  ASSERT_CL_OK(clRetainMemObject(mem));
  ASSERT_CL_OK(clReleaseMemObject(mem));
  ASSERT_CL_OK(clReleaseContext(context));  // the buffer still uses the context
  EXPECT_EQ(0, mem_done.load());
  EXPECT_EQ(0, context_done.load());
  ASSERT_CL_OK(clReleaseMemObject(mem));
  // Callbacks may run on another thread: wait for them, within a bound.
  for (int i = 0; i < 1000 && context_done.load() == 0; i++) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(1, mem_done.load());
  EXPECT_EQ(2, context_done.load());
}

TEST(Objects, InfoQueriesAnswerWhatWasCreated) {
  Cluster cluster(1);
  cl_device_id device = cluster.devices.at(0);
  cl_int err;
  cl_context context = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &err);
  ASSERT_CL_OK(err);
  cl_command_queue queue = create_queue(context, device, CL_QUEUE_PROFILING_ENABLE);
  cl_mem mem = create_buffer(context, CL_MEM_READ_ONLY, 4096);
  size_t size = 0;
  cl_mem_flags flags = 0;
  cl_context owner = nullptr;
  ASSERT_CL_OK(clGetMemObjectInfo(mem, CL_MEM_SIZE, sizeof size, &size, nullptr));
  ASSERT_CL_OK(clGetMemObjectInfo(mem, CL_MEM_FLAGS, sizeof flags, &flags, nullptr));
  ASSERT_CL_OK(clGetMemObjectInfo(mem, CL_MEM_CONTEXT, sizeof owner, &owner, nullptr));
  EXPECT_EQ(4096u, size);
  EXPECT_EQ(cl_mem_flags(CL_MEM_READ_ONLY), flags);
  EXPECT_EQ(context, owner);
  cl_command_queue_properties properties = 0;
  cl_device_id queue_device = nullptr;
  ASSERT_CL_OK(clGetCommandQueueInfo(queue, CL_QUEUE_PROPERTIES, sizeof properties, &properties, nullptr));
  ASSERT_CL_OK(clGetCommandQueueInfo(queue, CL_QUEUE_DEVICE, sizeof queue_device, &queue_device, nullptr));
  EXPECT_EQ(cl_command_queue_properties(CL_QUEUE_PROFILING_ENABLE), properties);
  EXPECT_EQ(device, queue_device);

  cl_program program = build_program(context, kScaleSource);
  cl_kernel kernel = create_kernel(program, "offset");
  cl_uint args = 0;
  ASSERT_CL_OK(clGetKernelInfo(kernel, CL_KERNEL_NUM_ARGS, sizeof args, &args, nullptr));
  EXPECT_EQ(2u, args);
  char name[64] = {};
  ASSERT_CL_OK(clGetKernelInfo(kernel, CL_KERNEL_FUNCTION_NAME, sizeof name, name, nullptr));
  EXPECT_STREQ("offset", name);
  size_t names_size = 0;
  ASSERT_CL_OK(clGetProgramInfo(program, CL_PROGRAM_KERNEL_NAMES, 0, nullptr, &names_size));
  std::string names(names_size, '\0');
  ASSERT_CL_OK(clGetProgramInfo(program, CL_PROGRAM_KERNEL_NAMES, names_size, names.data(), nullptr));
  EXPECT_NE(std::string::npos, names.find("scale"));
  EXPECT_NE(std::string::npos, names.find("offset"));
  size_t work_group = 0;
  ASSERT_CL_OK(clGetKernelWorkGroupInfo(kernel, device, CL_KERNEL_WORK_GROUP_SIZE, sizeof work_group, &work_group, nullptr));
  EXPECT_GT(work_group, 0u);
}

// A daemon whose workers run the backend shim (tests/support/refusing_backend.c) with the variables
// start() is given, a context and an in-order queue on its device; each test ends with the session
// proved alive.
struct BackendDefects : ShimmedDeviceFixture {
  void start(const std::vector<std::pair<std::string, std::string>> &variables) {
    ShimmedDeviceFixture::start(FEDCL_REFUSING_BACKEND_PATH, variables);
  }
  void TearDown() override {
    ShimmedDeviceFixture::TearDown();
    if (cluster) expect_runtime_session_works(*cluster, 64);
  }
};

// NVIDIA's release of a sub-buffer waits, holding the driver's lock, until its parent's commands are
// done: one released while a transfer of the parent was under way stood still the session's loop,
// which the transfer needed for its next chunks (examples/stencil3d's 6 GiB read-back on an H200, until
// the client gave the daemon up). fedcld holds sub-buffer releases while a transfer is under way; the
// shim in the daemon's workers aborts a sub-buffer's release while its parent is still mapped.
TEST_F(BackendDefects, ASubBufferIsNotReleasedWhileItsParentMoves) {
  ASSERT_NO_FATAL_FAILURE(start({{"FEDCL_TEST_SUB_BUFFER_RELEASE_WAITS", "1"}}));
  cl_int err = CL_SUCCESS;
  const size_t count = (32 * MiB) / sizeof(cl_int), page = 1024;
  std::vector<cl_int> values(count, 5);
  cl_mem parent = create_buffer(context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, count * sizeof(cl_int), values.data());
  cl_buffer_region region{0, page * sizeof(cl_int)};
  cl_mem sub = clCreateSubBuffer(parent, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &region, &err);
  ASSERT_CL_OK(err);
  cl_program program = build_program(context, kScaleSource);
  cl_kernel kernel = create_kernel(program, "offset");
  set_arg(kernel, 0, sub);
  set_arg(kernel, 1, cl_int(2));
  ASSERT_CL_OK(clEnqueueNDRangeKernel(queue, kernel, 1, nullptr, &page, nullptr, 0, nullptr, nullptr));
  ASSERT_CL_OK(clFinish(queue));
  clReleaseKernel(kernel);
  // A read this large streams the parent from its mapped chunks; the sub-buffer goes meanwhile.
  cl_event read = nullptr;
  ASSERT_CL_OK(clEnqueueReadBuffer(queue, parent, CL_FALSE, 0, count * sizeof(cl_int), values.data(), 0, nullptr, &read));
  ASSERT_CL_OK(clReleaseMemObject(sub));
  ASSERT_CL_OK(clWaitForEvents(1, &read));
  clReleaseEvent(read);
  EXPECT_EQ(7, values[0]);
  EXPECT_EQ(7, values[page - 1]);
  EXPECT_EQ(5, values[page]);
  EXPECT_EQ(5, values[count - 1]);
  clReleaseMemObject(parent);
  clReleaseProgram(program);
}

// NVIDIA's driver (580) crashes in clReleaseMemObject when a sub-buffer is destroyed while one made
// after it, overlapping it, lives on, once kernels used both: subbuffer_stencil on an H200, directly
// and through fedcld, in every release order the program has. fedcld releases a parent's sub-buffers
// on the backend newest first, each once the newer one is destroyed (a transfer may hold it past its
// release). The shim in the daemon's workers aborts where NVIDIA crashes, and destroys each
// sub-buffer 100 ms after its last release.
TEST_F(BackendDefects, SubBuffersAreDestroyedOnTheBackendNewestFirst) {
  ASSERT_NO_FATAL_FAILURE(
      start({{"FEDCL_TEST_SUB_BUFFER_DEFECT", "1"}, {"FEDCL_TEST_SUB_BUFFER_LATE_DESTRUCTION", "1"}}));
  cl_int err = CL_SUCCESS;
  const size_t page = 1024;  // ints: 4 KiB, a sub-buffer origin any device accepts
  std::vector<cl_int> values(3 * page, 0);
  cl_mem parent = create_buffer(context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, values.size() * sizeof(cl_int), values.data());
  // A = pages 0-1, B = pages 1-2 (overlapping A), C = page 2 (inside B); each gets its own addend.
  const size_t first_page[] = {0, 1, 2}, pages[] = {2, 2, 1};
  const cl_int addend[] = {1, 10, 100};
  cl_mem sub[3];
  cl_program program = build_program(context, kScaleSource);
  cl_kernel kernel = create_kernel(program, "offset");
  for (int i = 0; i < 3; i++) {
    cl_buffer_region region{first_page[i] * page * sizeof(cl_int), pages[i] * page * sizeof(cl_int)};
    sub[i] = clCreateSubBuffer(parent, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &region, &err);
    ASSERT_CL_OK(err);
    set_arg(kernel, 0, sub[i]);
    set_arg(kernel, 1, addend[i]);
    size_t global = pages[i] * page;
    ASSERT_CL_OK(clEnqueueNDRangeKernel(queue, kernel, 1, nullptr, &global, nullptr, 0, nullptr, nullptr));
  }
  ASSERT_CL_OK(clFinish(queue));
  clReleaseKernel(kernel);  // drops any reference the backend's kernel kept to its last argument
  // Oldest first, then the newest: the backend must destroy C, B, A, in that order.
  for (int i : {0, 2, 1}) ASSERT_CL_OK(clReleaseMemObject(sub[i]));
  ASSERT_CL_OK(clEnqueueReadBuffer(queue, parent, CL_TRUE, 0, values.size() * sizeof(cl_int), values.data(), 0, nullptr, nullptr));
  const cl_int expected[] = {1, 11, 110};
  for (size_t p = 0; p < 3; p++) {
    EXPECT_EQ(expected[p], values[p * page]) << "page " << p;
    EXPECT_EQ(expected[p], values[p * page + page - 1]) << "page " << p;
  }
  clReleaseMemObject(parent);
  clReleaseProgram(program);
}
