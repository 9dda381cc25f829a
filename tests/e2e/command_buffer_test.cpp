// cl_khr_command_buffer through fedcl: recorded once, replayed by the daemon, with the results,
// the errors and the info the extension specifies.
#include <CL/cl_fedcl_command_buffer.h>

#include <vector>

#include "cl_harness.h"
#include "command_buffer_api.h"

using namespace fedcl_test;

namespace {

struct CommandBuffer : OneDeviceFixture {
  static constexpr size_t n = 4096;
  CommandBufferApi api;
  cl_program program = nullptr;
  cl_mem a = nullptr, b = nullptr;

  void SetUp() override {
    OneDeviceFixture::SetUp();
    program = build_program(context, kScaleSource);
    a = create_buffer(context, CL_MEM_READ_WRITE, n * sizeof(int));
    b = create_buffer(context, CL_MEM_READ_WRITE, n * sizeof(int));
  }

  cl_command_buffer_khr create(cl_command_queue on, cl_command_buffer_flags_khr flags = 0) {
    cl_int err = CL_INVALID_VALUE;
    cl_command_buffer_properties_khr properties[] = {CL_COMMAND_BUFFER_FLAGS_KHR, flags, 0};
    cl_command_buffer_khr buffer = api.create(1, &on, flags ? properties : nullptr, &err);
    EXPECT_CL(CL_SUCCESS, err);
    return buffer;
  }

  cl_kernel bound(const char *name, cl_mem mem, int value) {
    cl_kernel kernel = create_kernel(program, name);
    set_arg(kernel, 0, mem);
    set_arg(kernel, 1, value);
    return kernel;
  }

  std::vector<int> read(cl_mem mem) {
    std::vector<int> out(n, -1);
    EXPECT_CL(CL_SUCCESS, clEnqueueReadBuffer(queue, mem, CL_TRUE, 0, n * sizeof(int), out.data(), 0, nullptr, nullptr));
    return out;
  }
};

void expect_all(const std::vector<int> &values, int expected, const char *what) {
  for (size_t i = 0; i < values.size(); i++) ASSERT_EQ(expected, values[i]) << what << " at " << i;
}

}  // namespace

TEST_F(CommandBuffer, DevicesOfferVersion098) {
  std::string extensions = device_string(device, CL_DEVICE_EXTENSIONS);
  EXPECT_NE(std::string::npos, extensions.find("cl_khr_command_buffer")) << extensions;
  size_t size = 0;
  ASSERT_CL_OK(clGetDeviceInfo(device, CL_DEVICE_EXTENSIONS_WITH_VERSION, 0, nullptr, &size));
  std::vector<cl_name_version> versions(size / sizeof(cl_name_version));
  ASSERT_CL_OK(clGetDeviceInfo(device, CL_DEVICE_EXTENSIONS_WITH_VERSION, size, versions.data(), nullptr));
  int found = 0;
  for (const cl_name_version &entry : versions)
    if (std::string(entry.name) == "cl_khr_command_buffer") {
      found++;
      EXPECT_EQ(CL_MAKE_VERSION(0, 9, 8), entry.version);
    }
  EXPECT_EQ(1, found);
  cl_command_queue_properties supported = 0, required = 1;
  ASSERT_CL_OK(clGetDeviceInfo(device, CL_DEVICE_COMMAND_BUFFER_SUPPORTED_QUEUE_PROPERTIES_KHR, sizeof supported,
                               &supported, nullptr));
  ASSERT_CL_OK(clGetDeviceInfo(device, CL_DEVICE_COMMAND_BUFFER_REQUIRED_QUEUE_PROPERTIES_KHR, sizeof required,
                               &required, nullptr));
  EXPECT_TRUE(supported & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE);
  EXPECT_EQ(0u, required);
}

TEST_F(CommandBuffer, ReplaysFillKernelsAndCopyEachTime) {
  cl_kernel offset = bound("offset", a, 2), scale = bound("scale", a, 5);
  cl_command_buffer_khr buffer = create(queue);
  const int one = 1;
  ASSERT_CL_OK(api.fill(buffer, nullptr, nullptr, a, &one, sizeof one, 0, n * sizeof(int), 0, nullptr, nullptr, nullptr));
  ASSERT_CL_OK(api.launch(buffer, nullptr, nullptr, offset, 1, nullptr, &n, nullptr, 0, nullptr, nullptr, nullptr));
  ASSERT_CL_OK(api.launch(buffer, nullptr, nullptr, scale, 1, nullptr, &n, nullptr, 0, nullptr, nullptr, nullptr));
  ASSERT_CL_OK(api.copy(buffer, nullptr, nullptr, a, b, 0, 0, n * sizeof(int), 0, nullptr, nullptr, nullptr));
  ASSERT_CL_OK(api.finalize(buffer));
  // Arguments set after recording leave the recorded launches alone.
  set_arg(scale, 1, 100);
  for (int round = 0; round < 3; round++) {
    const int zero = 0;
    ASSERT_CL_OK(clEnqueueFillBuffer(queue, b, &zero, sizeof zero, 0, n * sizeof(int), 0, nullptr, nullptr));
    ASSERT_CL_OK(api.enqueue(0, nullptr, buffer, 0, nullptr, nullptr));
    expect_all(read(b), (1 + 2) * 5, "b after a replay");
  }
  ASSERT_CL_OK(api.release(buffer));
}

TEST_F(CommandBuffer, ReplaysLeaveTheApplicationsKernelArgumentsAlone) {
  // The kernel runs directly first (its arguments reach the daemon), then recorded with others; the
  // next direct launch sends no argument again and must still find its own.
  cl_kernel scale = bound("scale", a, 3);
  const int two = 2;
  ASSERT_CL_OK(clEnqueueFillBuffer(queue, a, &two, sizeof two, 0, n * sizeof(int), 0, nullptr, nullptr));
  ASSERT_CL_OK(clEnqueueNDRangeKernel(queue, scale, 1, nullptr, &n, nullptr, 0, nullptr, nullptr));  // a = 6
  set_arg(scale, 0, b);
  set_arg(scale, 1, 7);
  cl_command_buffer_khr buffer = create(queue);
  ASSERT_CL_OK(api.launch(buffer, nullptr, nullptr, scale, 1, nullptr, &n, nullptr, 0, nullptr, nullptr, nullptr));
  ASSERT_CL_OK(api.finalize(buffer));
  set_arg(scale, 0, a);
  set_arg(scale, 1, 3);
  ASSERT_CL_OK(clEnqueueNDRangeKernel(queue, scale, 1, nullptr, &n, nullptr, 0, nullptr, nullptr));  // a = 18
  const int one = 1;
  ASSERT_CL_OK(clEnqueueFillBuffer(queue, b, &one, sizeof one, 0, n * sizeof(int), 0, nullptr, nullptr));
  ASSERT_CL_OK(api.enqueue(0, nullptr, buffer, 0, nullptr, nullptr));  // b = 7
  ASSERT_CL_OK(clEnqueueNDRangeKernel(queue, scale, 1, nullptr, &n, nullptr, 0, nullptr, nullptr));  // a = 54
  expect_all(read(a), 54, "a");
  expect_all(read(b), 7, "b");
  ASSERT_CL_OK(api.release(buffer));
}

TEST_F(CommandBuffer, SyncPointsAndBarriersOrderAnOutOfOrderQueue) {
  cl_command_queue unordered = create_queue(context, device, CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE);
  cl_kernel offset = bound("offset", a, 10), scale = bound("scale", b, 3);
  cl_command_buffer_khr buffer = create(unordered);
  const int four = 4;
  cl_sync_point_khr filled = 0, offsetted = 0, copied = 0, fence = 0;
  ASSERT_CL_OK(api.fill(buffer, nullptr, nullptr, a, &four, sizeof four, 0, n * sizeof(int), 0, nullptr, &filled, nullptr));
  ASSERT_CL_OK(api.launch(buffer, nullptr, nullptr, offset, 1, nullptr, &n, nullptr, 1, &filled, &offsetted, nullptr));
  ASSERT_CL_OK(api.copy(buffer, nullptr, nullptr, a, b, 0, 0, n * sizeof(int), 1, &offsetted, &copied, nullptr));
  EXPECT_EQ(1u, filled);
  EXPECT_EQ(2u, offsetted);
  EXPECT_EQ(3u, copied);
  // A barrier without sync points waits for everything before it; what follows waits for it.
  ASSERT_CL_OK(api.barrier(buffer, nullptr, nullptr, 0, nullptr, &fence, nullptr));
  ASSERT_CL_OK(api.launch(buffer, nullptr, nullptr, scale, 1, nullptr, &n, nullptr, 0, nullptr, nullptr, nullptr));
  ASSERT_CL_OK(api.finalize(buffer));
  for (int round = 0; round < 2; round++) {
    api.run_and_wait(buffer);
    expect_all(read(b), (4 + 10) * 3, "b");
  }
  ASSERT_CL_OK(api.release(buffer));
}

TEST_F(CommandBuffer, AReplayWaitsForItsWaitList) {
  cl_kernel offset = bound("offset", a, 1);
  cl_command_buffer_khr buffer = create(queue);
  ASSERT_CL_OK(api.launch(buffer, nullptr, nullptr, offset, 1, nullptr, &n, nullptr, 0, nullptr, nullptr, nullptr));
  ASSERT_CL_OK(api.finalize(buffer));
  const int zero = 0;
  ASSERT_CL_OK(clEnqueueFillBuffer(queue, a, &zero, sizeof zero, 0, n * sizeof(int), 0, nullptr, nullptr));
  cl_int err;
  cl_event gate = clCreateUserEvent(context, &err);
  ASSERT_CL_OK(err);
  cl_event done = nullptr;
  ASSERT_CL_OK(api.enqueue(0, nullptr, buffer, 1, &gate, &done));
  ASSERT_CL_OK(clFlush(queue));
  cl_int status = CL_COMPLETE;
  ASSERT_CL_OK(clGetEventInfo(done, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr));
  EXPECT_GT(status, CL_COMPLETE) << "ran before its wait list completed";
  ASSERT_CL_OK(clSetUserEventStatus(gate, CL_COMPLETE));
  ASSERT_CL_OK(clWaitForEvents(1, &done));
  expect_all(read(a), 1, "a");
  clReleaseEvent(done);
  clReleaseEvent(gate);
  ASSERT_CL_OK(api.release(buffer));
}

TEST_F(CommandBuffer, RefusesWhatTheExtensionRefuses) {
  cl_kernel offset = bound("offset", a, 1);
  cl_command_buffer_khr buffer = create(queue);
  cl_int err = CL_SUCCESS;
  EXPECT_EQ(nullptr, api.create(0, &queue, nullptr, &err));
  EXPECT_CL(CL_INVALID_VALUE, err);
  cl_command_queue one_invalid[] = {queue, nullptr};
  EXPECT_EQ(nullptr, api.create(2, one_invalid, nullptr, &err));
  EXPECT_CL(CL_INVALID_COMMAND_QUEUE, err);
  cl_command_buffer_properties_khr twice[] = {CL_COMMAND_BUFFER_FLAGS_KHR, 0, CL_COMMAND_BUFFER_FLAGS_KHR, 0, 0};
  EXPECT_EQ(nullptr, api.create(1, &queue, twice, &err));
  EXPECT_CL(CL_INVALID_VALUE, err);
  EXPECT_CL(CL_INVALID_OPERATION, api.enqueue(0, nullptr, buffer, 0, nullptr, nullptr));
  // A command names no queue, or the buffer's (multi-device): not another one of the device.
  cl_command_queue stranger = create_queue(context, device);
  EXPECT_CL(CL_INVALID_COMMAND_QUEUE,
            api.launch(buffer, stranger, nullptr, offset, 1, nullptr, &n, nullptr, 0, nullptr, nullptr, nullptr));
  clReleaseCommandQueue(stranger);
  // fedcl does not capture printf output in replays, and says so.
  cl_program printing = build_program(context, "__kernel void hello(void) { printf(\"hello\\n\"); }");
  cl_kernel hello = create_kernel(printing, "hello");
  const size_t one = 1;
  EXPECT_CL(CL_INVALID_OPERATION,
            api.launch(buffer, nullptr, nullptr, hello, 1, nullptr, &one, nullptr, 0, nullptr, nullptr, nullptr));
  clReleaseKernel(hello);
  clReleaseProgram(printing);
  cl_sync_point_khr later = 5;
  EXPECT_CL(CL_INVALID_SYNC_POINT_WAIT_LIST_KHR,
            api.launch(buffer, nullptr, nullptr, offset, 1, nullptr, &n, nullptr, 1, &later, nullptr, nullptr));
  EXPECT_CL(CL_INVALID_VALUE, api.copy(buffer, nullptr, nullptr, a, b, 0, 8, n * sizeof(int), 0, nullptr, nullptr, nullptr));
  EXPECT_CL(CL_INVALID_COMMAND_BUFFER_KHR, api.finalize(nullptr));
  cl_command_buffer_state_khr state = 99;
  ASSERT_CL_OK(api.info(buffer, CL_COMMAND_BUFFER_STATE_KHR, sizeof state, &state, nullptr));
  EXPECT_EQ(cl_command_buffer_state_khr(CL_COMMAND_BUFFER_STATE_RECORDING_KHR), state);
  ASSERT_CL_OK(api.finalize(buffer));
  ASSERT_CL_OK(api.info(buffer, CL_COMMAND_BUFFER_STATE_KHR, sizeof state, &state, nullptr));
  EXPECT_EQ(cl_command_buffer_state_khr(CL_COMMAND_BUFFER_STATE_EXECUTABLE_KHR), state);
  EXPECT_CL(CL_INVALID_OPERATION, api.finalize(buffer));
  EXPECT_CL(CL_INVALID_OPERATION,
            api.launch(buffer, nullptr, nullptr, offset, 1, nullptr, &n, nullptr, 0, nullptr, nullptr, nullptr));
  // A substitute queue must be of the buffer's device and context.
  cl_int created;
  cl_context other = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &created);
  ASSERT_CL_OK(created);
  cl_command_queue foreign = create_queue(other, device);
  EXPECT_CL(CL_INVALID_CONTEXT, api.enqueue(1, &foreign, buffer, 0, nullptr, nullptr));
  // Info.
  cl_command_queue queues[2] = {};
  size_t size = 0;
  ASSERT_CL_OK(api.info(buffer, CL_COMMAND_BUFFER_QUEUES_KHR, sizeof queues, queues, &size));
  EXPECT_EQ(sizeof(cl_command_queue), size);
  EXPECT_EQ(queue, queues[0]);
  cl_context owner = nullptr;
  ASSERT_CL_OK(api.info(buffer, CL_COMMAND_BUFFER_CONTEXT_KHR, sizeof owner, &owner, nullptr));
  EXPECT_EQ(context, owner);
  ASSERT_CL_OK(api.retain(buffer));
  cl_uint count = 0;
  ASSERT_CL_OK(api.info(buffer, CL_COMMAND_BUFFER_REFERENCE_COUNT_KHR, sizeof count, &count, nullptr));
  EXPECT_EQ(2u, count);
  ASSERT_CL_OK(api.release(buffer));
  ASSERT_CL_OK(api.release(buffer));
  EXPECT_CL(CL_INVALID_COMMAND_BUFFER_KHR, api.release(nullptr));
  clReleaseCommandQueue(foreign);
  clReleaseContext(other);
}

TEST_F(CommandBuffer, ALaunchWithoutLocalSizeRunsWithTheRequiredOne) {
  cl_program sized = build_program(context, R"(
__kernel __attribute__((reqd_work_group_size(4, 1, 1))) void size(__global int *out) {
  if (get_global_id(0) == 0) out[0] = (int)get_local_size(0);
})");
  cl_kernel kernel = create_kernel(sized, "size");
  set_arg(kernel, 0, a);
  cl_command_buffer_khr buffer = create(queue);
  const size_t global = 16;
  ASSERT_CL_OK(api.launch(buffer, nullptr, nullptr, kernel, 1, nullptr, &global, nullptr, 0, nullptr, nullptr, nullptr));
  ASSERT_CL_OK(api.finalize(buffer));
  ASSERT_CL_OK(api.enqueue(0, nullptr, buffer, 0, nullptr, nullptr));
  EXPECT_EQ(4, read(a)[0]);
  ASSERT_CL_OK(api.release(buffer));
  clReleaseKernel(kernel);
  clReleaseProgram(sized);
}

// cl_khr_command_buffer_mutable_dispatch: a solver changes a recorded launch between replays.
TEST_F(CommandBuffer, UpdatesChangeWhatLaterReplaysLaunch) {
  cl_kernel offset = bound("offset", a, 1);
  cl_command_buffer_khr buffer = create(queue, CL_COMMAND_BUFFER_MUTABLE_KHR);
  cl_mutable_command_khr launch = nullptr;
  const size_t half = n / 2;
  ASSERT_CL_OK(api.launch(buffer, nullptr, nullptr, offset, 1, nullptr, &half, nullptr, 0, nullptr, nullptr, &launch));
  ASSERT_NE(nullptr, launch);
  fedcl_mutable_dispatch_config_khr config{};
  config.command = launch;
  const fedcl_command_buffer_update_type_khr type = FEDCL_STRUCTURE_TYPE_MUTABLE_DISPATCH_CONFIG;
  const void *configs[] = {&config};
  EXPECT_CL(CL_INVALID_OPERATION, api.update(buffer, 1, &type, configs));  // not finalized yet
  ASSERT_CL_OK(api.finalize(buffer));
  const int zero = 0;
  ASSERT_CL_OK(clEnqueueFillBuffer(queue, a, &zero, sizeof zero, 0, n * sizeof(int), 0, nullptr, nullptr));
  ASSERT_CL_OK(clEnqueueFillBuffer(queue, b, &zero, sizeof zero, 0, n * sizeof(int), 0, nullptr, nullptr));
  ASSERT_CL_OK(api.enqueue(0, nullptr, buffer, 0, nullptr, nullptr));
  // Now on b, adding 7, over all n items.
  const int seven = 7;
  fedcl_mutable_dispatch_arg_khr args[] = {{0, sizeof(cl_mem), &b}, {1, sizeof seven, &seven}};
  config.num_args = 2;
  config.arg_list = args;
  config.global_work_size = &n;
  ASSERT_CL_OK(api.update(buffer, 1, &type, configs));
  ASSERT_CL_OK(api.enqueue(0, nullptr, buffer, 0, nullptr, nullptr));
  std::vector<int> in_a = read(a), in_b = read(b);
  for (size_t i = 0; i < n; i++) {
    ASSERT_EQ(i < half ? 1 : 0, in_a[i]) << "a at " << i;
    ASSERT_EQ(7, in_b[i]) << "b at " << i;
  }
  size_t global = 0;
  ASSERT_CL_OK(api.command_info(launch, CL_MUTABLE_DISPATCH_GLOBAL_WORK_SIZE_KHR, sizeof global, &global, nullptr));
  EXPECT_EQ(n, global);
  // What the update checks: the kernel's own argument rules, the fields the launch allows, the handle.
  const int wrong = 1;
  fedcl_mutable_dispatch_arg_khr bad_size{1, 2, &wrong};
  config = {};
  config.command = launch;
  config.num_args = 1;
  config.arg_list = &bad_size;
  EXPECT_CL(CL_INVALID_ARG_SIZE, api.update(buffer, 1, &type, configs));
  config.command = reinterpret_cast<cl_mutable_command_khr>(buffer);
  EXPECT_CL(CL_INVALID_MUTABLE_COMMAND_KHR, api.update(buffer, 1, &type, configs));
  ASSERT_CL_OK(api.release(buffer));
}

TEST_F(CommandBuffer, ALaunchMayWaitForItsArgumentsUntilAnUpdate) {
  cl_kernel offset = create_kernel(program, "offset");
  set_arg(offset, 1, 3);  // argument 0 comes with the update
  cl_command_buffer_khr buffer = create(queue, CL_COMMAND_BUFFER_MUTABLE_KHR);
  cl_mutable_command_khr launch = nullptr;
  ASSERT_CL_OK(api.launch(buffer, nullptr, nullptr, offset, 1, nullptr, &n, nullptr, 0, nullptr, nullptr, &launch));
  ASSERT_CL_OK(api.finalize(buffer));
  cl_command_buffer_state_khr state = 99;
  ASSERT_CL_OK(api.info(buffer, CL_COMMAND_BUFFER_STATE_KHR, sizeof state, &state, nullptr));
  EXPECT_EQ(cl_command_buffer_state_khr(FEDCL_COMMAND_BUFFER_STATE_FINALIZED), state);
  EXPECT_CL(CL_INVALID_OPERATION, api.enqueue(0, nullptr, buffer, 0, nullptr, nullptr));
  fedcl_mutable_dispatch_arg_khr arg{0, sizeof(cl_mem), &a};
  fedcl_mutable_dispatch_config_khr config{};
  config.command = launch;
  config.num_args = 1;
  config.arg_list = &arg;
  const fedcl_command_buffer_update_type_khr type = FEDCL_STRUCTURE_TYPE_MUTABLE_DISPATCH_CONFIG;
  const void *configs[] = {&config};
  ASSERT_CL_OK(api.update(buffer, 1, &type, configs));
  ASSERT_CL_OK(api.info(buffer, CL_COMMAND_BUFFER_STATE_KHR, sizeof state, &state, nullptr));
  EXPECT_EQ(cl_command_buffer_state_khr(CL_COMMAND_BUFFER_STATE_EXECUTABLE_KHR), state);
  const int zero = 0;
  ASSERT_CL_OK(clEnqueueFillBuffer(queue, a, &zero, sizeof zero, 0, n * sizeof(int), 0, nullptr, nullptr));
  ASSERT_CL_OK(api.enqueue(0, nullptr, buffer, 0, nullptr, nullptr));
  expect_all(read(a), 3, "a");
  ASSERT_CL_OK(api.release(buffer));
}

TEST_F(CommandBuffer, AnEmptyBufferOrdersAndCompletes) {
  cl_command_buffer_khr buffer = create(queue);
  ASSERT_CL_OK(api.finalize(buffer));
  cl_event done = nullptr;
  ASSERT_CL_OK(api.enqueue(0, nullptr, buffer, 0, nullptr, &done));
  ASSERT_CL_OK(clWaitForEvents(1, &done));
  clReleaseEvent(done);
  ASSERT_CL_OK(api.release(buffer));
}

// A command buffer on one daemon whose buffer was last written on the other: the replay finds it
// current, and the other daemon sees what the replay wrote.
TEST(CommandBufferTwoDaemons, BuffersAreCurrentBeforeAndAfterAReplay) {
  Cluster cluster{2};
  CommandBufferApi api;
  const size_t n = 8192;
  cl_int err;
  cl_context context = clCreateContext(nullptr, 2, cluster.devices.data(), nullptr, nullptr, &err);
  ASSERT_CL_OK(err);
  cl_command_queue first = create_queue(context, cluster.devices[0]);
  cl_command_queue second = create_queue(context, cluster.devices[1]);
  cl_program program = build_program(context, kScaleSource);
  cl_mem x = create_buffer(context, CL_MEM_READ_WRITE, n * sizeof(int));
  cl_kernel offset = create_kernel(program, "offset");
  set_arg(offset, 0, x);
  set_arg(offset, 1, 5);
  cl_command_buffer_khr buffer = api.create(1, &second, nullptr, &err);
  ASSERT_CL_OK(err);
  ASSERT_CL_OK(api.launch(buffer, nullptr, nullptr, offset, 1, nullptr, &n, nullptr, 0, nullptr, nullptr, nullptr));
  ASSERT_CL_OK(api.finalize(buffer));
  std::vector<int> values(n);
  for (size_t i = 0; i < n; i++) values[i] = int(i);
  for (int round = 0; round < 2; round++) {
    ASSERT_CL_OK(clEnqueueWriteBuffer(first, x, CL_TRUE, 0, n * sizeof(int), values.data(), 0, nullptr, nullptr));
    ASSERT_CL_OK(api.enqueue(0, nullptr, buffer, 0, nullptr, nullptr));
    ASSERT_CL_OK(clFinish(second));
    std::vector<int> out(n, -1);
    ASSERT_CL_OK(clEnqueueReadBuffer(first, x, CL_TRUE, 0, n * sizeof(int), out.data(), 0, nullptr, nullptr));
    for (size_t i = 0; i < n; i++) ASSERT_EQ(int(i) + 5, out[i]) << "round " << round << " at " << i;
  }
  ASSERT_CL_OK(api.release(buffer));
  clReleaseMemObject(x);
  clReleaseKernel(offset);
  clReleaseProgram(program);
  clReleaseCommandQueue(first);
  clReleaseCommandQueue(second);
  clReleaseContext(context);
}
