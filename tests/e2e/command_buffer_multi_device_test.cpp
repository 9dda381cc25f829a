// cl_khr_command_buffer_multi_device through fedcl: one command buffer over queues of devices on two
// daemons (and over two queues of one device), its sync points kept across daemons at every replay,
// remapped to other queues, and what the extension refuses.
#include <CL/cl_fedcl_command_buffer.h>

#include <string>
#include <vector>

#include "cl_harness.h"
#include "command_buffer_api.h"

using namespace fedcl_test;

namespace {

constexpr size_t n = 8192;

// x = value, after a while: a first step that a missing wait would let the next one overtake.
const char kSlowSetSource[] = R"(
__kernel void slow_set(__global int *x, int value) {
  uint state = get_global_id(0);
  for (int k = 0; k < 20000; k++) state = state * 1103515245u + 12345u;
  x[get_global_id(0)] = value + (state == 42u ? 1 : 0);
}
)";

struct MultiDeviceCommandBuffer : ::testing::Test {
  Cluster cluster{2};
  CommandBufferApi api;
  cl_context context = nullptr;
  cl_command_queue first = nullptr, second = nullptr;  // of the first daemon's device, of the second's
  cl_program program = nullptr, slow = nullptr;
  cl_mem a = nullptr, b = nullptr;
  std::vector<cl_kernel> kernels;

  void SetUp() override {
    cl_int err;
    context = clCreateContext(nullptr, 2, cluster.devices.data(), nullptr, nullptr, &err);
    ASSERT_CL_OK(err);
    first = create_queue(context, cluster.devices[0]);
    second = create_queue(context, cluster.devices[1]);
    program = build_program(context, kScaleSource);
    slow = build_program(context, kSlowSetSource);
    a = create_buffer(context, CL_MEM_READ_WRITE, n * sizeof(int));
    b = create_buffer(context, CL_MEM_READ_WRITE, n * sizeof(int));
  }

  void TearDown() override {
    for (cl_kernel kernel : kernels) clReleaseKernel(kernel);
    clReleaseMemObject(a);
    clReleaseMemObject(b);
    clReleaseProgram(program);
    clReleaseProgram(slow);
    clReleaseCommandQueue(first);
    clReleaseCommandQueue(second);
    clReleaseContext(context);
  }

  cl_kernel bound(const char *name, cl_mem mem, int value) {
    cl_kernel kernel = create_kernel(std::string(name) == "slow_set" ? slow : program, name);
    set_arg(kernel, 0, mem);
    set_arg(kernel, 1, value);
    kernels.push_back(kernel);
    return kernel;
  }

  cl_command_buffer_khr create(std::vector<cl_command_queue> queues, cl_command_buffer_flags_khr flags = 0) {
    cl_int err = CL_INVALID_VALUE;
    cl_command_buffer_properties_khr properties[] = {CL_COMMAND_BUFFER_FLAGS_KHR, flags, 0};
    cl_command_buffer_khr buffer = api.create(cl_uint(queues.size()), queues.data(), flags ? properties : nullptr, &err);
    EXPECT_CL(CL_SUCCESS, err);
    return buffer;
  }

  // a = 1 (on fill_on, filled, or set by the slow kernel) -> a += 2 (on add_on) -> a *= 5 (on fill_on)
  // -> copy a to b (on add_on), each waiting for the one before: b ends (1 + 2) * 5 = 15 only if every
  // step waited.
  void record_chain(cl_command_buffer_khr buffer, cl_command_queue fill_on, cl_command_queue add_on,
                    bool slow_start = false) {
    const int one = 1;
    cl_sync_point_khr filled = 0, added = 0, scaled = 0;
    if (slow_start)
      ASSERT_CL_OK(api.launch(buffer, fill_on, nullptr, bound("slow_set", a, 1), 1, nullptr, &n, nullptr, 0, nullptr,
                              &filled, nullptr));
    else
      ASSERT_CL_OK(api.fill(buffer, fill_on, nullptr, a, &one, sizeof one, 0, n * sizeof(int), 0, nullptr, &filled,
                            nullptr));
    ASSERT_CL_OK(api.launch(buffer, add_on, nullptr, bound("offset", a, 2), 1, nullptr, &n, nullptr, 1, &filled,
                            &added, nullptr));
    ASSERT_CL_OK(api.launch(buffer, fill_on, nullptr, bound("scale", a, 5), 1, nullptr, &n, nullptr, 1, &added,
                            &scaled, nullptr));
    ASSERT_CL_OK(api.copy(buffer, add_on, nullptr, a, b, 0, 0, n * sizeof(int), 1, &scaled, nullptr, nullptr));
  }

  // One launch on each daemon's queue with no sync point between them (two branches), finalized.
  void record_branches(cl_command_buffer_khr buffer, cl_kernel on_first, cl_kernel on_second) {
    ASSERT_CL_OK(api.launch(buffer, first, nullptr, on_first, 1, nullptr, &n, nullptr, 0, nullptr, nullptr, nullptr));
    ASSERT_CL_OK(api.launch(buffer, second, nullptr, on_second, 1, nullptr, &n, nullptr, 0, nullptr, nullptr, nullptr));
    ASSERT_CL_OK(api.finalize(buffer));
  }

  std::vector<int> read(cl_command_queue on, cl_mem mem) {
    std::vector<int> out(n, -1);
    EXPECT_CL(CL_SUCCESS, clEnqueueReadBuffer(on, mem, CL_TRUE, 0, n * sizeof(int), out.data(), 0, nullptr, nullptr));
    return out;
  }

  void clear(cl_mem mem) {
    const int zero = 0;
    ASSERT_CL_OK(clEnqueueFillBuffer(first, mem, &zero, sizeof zero, 0, n * sizeof(int), 0, nullptr, nullptr));
    ASSERT_CL_OK(clFinish(first));
  }
};

void expect_all(const std::vector<int> &values, int expected, const char *what) {
  for (size_t i = 0; i < values.size(); i++) ASSERT_EQ(expected, values[i]) << what << " at " << i;
}

}  // namespace

TEST_F(MultiDeviceCommandBuffer, AChainAcrossDaemonsKeepsItsOrderInEveryReplay) {
  cl_command_buffer_khr buffer = create({first, second});
  record_chain(buffer, first, second);
  ASSERT_CL_OK(api.finalize(buffer));
  for (int round = 0; round < 3; round++) {
    clear(a);
    clear(b);
    api.run_and_wait(buffer);
    expect_all(read(first, b), 15, "b, read on the first daemon");
    expect_all(read(second, a), 15, "a, read on the second daemon");
  }
  cl_uint count = 0;
  ASSERT_CL_OK(api.info(buffer, CL_COMMAND_BUFFER_NUM_QUEUES_KHR, sizeof count, &count, nullptr));
  EXPECT_EQ(2u, count);
  cl_command_queue queues[3] = {};
  size_t size = 0;
  ASSERT_CL_OK(api.info(buffer, CL_COMMAND_BUFFER_QUEUES_KHR, sizeof queues, queues, &size));
  EXPECT_EQ(2 * sizeof(cl_command_queue), size);
  EXPECT_EQ(first, queues[0]);
  EXPECT_EQ(second, queues[1]);
  ASSERT_CL_OK(api.release(buffer));
}

TEST_F(MultiDeviceCommandBuffer, TwoOutOfOrderQueuesOfOneDeviceFollowTheSyncPoints) {
  // One daemon, so no copy between daemons orders anything: only the sync points do.
  cl_command_queue other = create_queue(context, cluster.devices[0], CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE);
  cl_command_queue unordered = create_queue(context, cluster.devices[0], CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE);
  cl_command_buffer_khr buffer = create({unordered, other});
  record_chain(buffer, unordered, other, true);
  ASSERT_CL_OK(api.finalize(buffer));
  for (int round = 0; round < 3; round++) {
    clear(b);
    ASSERT_CL_OK(api.enqueue(0, nullptr, buffer, 0, nullptr, nullptr));
    ASSERT_CL_OK(clFinish(unordered));
    ASSERT_CL_OK(clFinish(other));
    expect_all(read(first, b), 15, "b");
  }
  ASSERT_CL_OK(api.release(buffer));
  clReleaseCommandQueue(unordered);
  clReleaseCommandQueue(other);
}

TEST_F(MultiDeviceCommandBuffer, TheWaitListHoldsEveryBranchAndTheEventCompletesWithTheLast) {
  // Two branches with no sync point between them, one per daemon: both wait for the wait list.
  cl_command_buffer_khr buffer = create({first, second});
  record_branches(buffer, bound("offset", a, 1), bound("offset", b, 2));
  clear(a);
  clear(b);
  cl_int err;
  cl_event gate = clCreateUserEvent(context, &err);
  ASSERT_CL_OK(err);
  cl_event done = nullptr;
  ASSERT_CL_OK(api.enqueue(0, nullptr, buffer, 1, &gate, &done));
  cl_int status = CL_COMPLETE;
  ASSERT_CL_OK(clGetEventInfo(done, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr));
  EXPECT_NE(CL_COMPLETE, status);
  ASSERT_CL_OK(clSetUserEventStatus(gate, CL_COMPLETE));
  ASSERT_CL_OK(clWaitForEvents(1, &done));
  expect_all(read(second, a), 1, "a");
  expect_all(read(first, b), 2, "b");
  clReleaseEvent(done);
  clReleaseEvent(gate);
  ASSERT_CL_OK(api.release(buffer));
}

TEST_F(MultiDeviceCommandBuffer, TheReplaysEventWaitsForTheLastSegmentOfEveryDaemon) {
  // Two branches, the second daemon's a slow kernel that nothing in the buffer waits for: only the
  // replay's event orders it before what the application does next. A read on another queue of the
  // second daemon, which has no order with the replay's queue, then sees whether it had finished.
  cl_command_queue side = create_queue(context, cluster.devices[1]);
  cl_command_buffer_khr buffer = create({first, second});
  record_branches(buffer, bound("offset", a, 1), bound("slow_set", b, 7));
  for (int round = 0; round < 3; round++) {
    const int zero = 0;
    ASSERT_CL_OK(clEnqueueFillBuffer(side, b, &zero, sizeof zero, 0, n * sizeof(int), 0, nullptr, nullptr));
    ASSERT_CL_OK(clFinish(side));
    cl_event done = nullptr;
    ASSERT_CL_OK(api.enqueue(0, nullptr, buffer, 0, nullptr, &done));
    ASSERT_CL_OK(clWaitForEvents(1, &done));
    expect_all(read(side, b), 7, "b, read on another queue of the second daemon after the replay's event");
    clReleaseEvent(done);
  }
  ASSERT_CL_OK(api.release(buffer));
  clReleaseCommandQueue(side);
}

TEST_F(MultiDeviceCommandBuffer, ARemappedCopyRunsOnTheOtherQueuesWithTheUpdatesItHad) {
  cl_command_buffer_khr buffer = create({first, second}, CL_COMMAND_BUFFER_MUTABLE_KHR);
  cl_mutable_command_khr launch = nullptr;
  const int one = 1;
  cl_sync_point_khr filled = 0;
  ASSERT_CL_OK(api.fill(buffer, first, nullptr, a, &one, sizeof one, 0, n * sizeof(int), 0, nullptr, &filled, nullptr));
  ASSERT_CL_OK(api.launch(buffer, second, nullptr, bound("offset", a, 2), 1, nullptr, &n, nullptr, 1, &filled, nullptr,
                          &launch));
  ASSERT_CL_OK(api.finalize(buffer));
  auto set_offset = [&](cl_command_buffer_khr target, cl_mutable_command_khr command, int value) {
    fedcl_mutable_dispatch_arg_khr arg{1, sizeof value, &value};
    fedcl_mutable_dispatch_config_khr config{};
    config.command = command;
    config.num_args = 1;
    config.arg_list = &arg;
    const fedcl_command_buffer_update_type_khr type = FEDCL_STRUCTURE_TYPE_MUTABLE_DISPATCH_CONFIG;
    const void *configs[] = {&config};
    ASSERT_CL_OK(api.update(target, 1, &type, configs));
  };
  set_offset(buffer, launch, 4);
  // Explicitly, the other way round: the fill on the second daemon, the launch on the first.
  cl_command_queue swapped[] = {second, first};
  cl_mutable_command_khr copied = nullptr;
  cl_int err = CL_INVALID_VALUE;
  cl_command_buffer_khr remapped = api.remap(buffer, CL_FALSE, 2, swapped, 1, &launch, &copied, &err);
  ASSERT_CL_OK(err);
  ASSERT_NE(nullptr, copied);
  EXPECT_NE(launch, copied);
  cl_command_queue runs_on = nullptr;
  ASSERT_CL_OK(api.command_info(copied, CL_MUTABLE_COMMAND_COMMAND_QUEUE_KHR, sizeof runs_on, &runs_on, nullptr));
  EXPECT_EQ(first, runs_on);
  auto replay = [&](cl_command_buffer_khr which) {
    clear(a);
    ASSERT_CL_OK(api.enqueue(0, nullptr, which, 0, nullptr, nullptr));
    ASSERT_CL_OK(clFinish(first));
    ASSERT_CL_OK(clFinish(second));
  };
  replay(remapped);
  expect_all(read(first, a), 1 + 4, "a after the remapped copy, with the update it was copied with");
  set_offset(remapped, copied, 6);
  replay(remapped);
  expect_all(read(second, a), 1 + 6, "a after the remapped copy's own update");
  replay(buffer);
  expect_all(read(first, a), 1 + 4, "a after the original, which the copy's update left alone");
  // Automatically, onto one queue: both commands run there.
  cl_command_buffer_khr together = api.remap(buffer, CL_TRUE, 1, &second, 0, nullptr, nullptr, &err);
  ASSERT_CL_OK(err);
  cl_uint count = 0;
  ASSERT_CL_OK(api.info(together, CL_COMMAND_BUFFER_NUM_QUEUES_KHR, sizeof count, &count, nullptr));
  EXPECT_EQ(1u, count);
  replay(together);
  expect_all(read(first, a), 1 + 4, "a after the copy on one queue");
  ASSERT_CL_OK(api.release(together));
  ASSERT_CL_OK(api.release(remapped));
  ASSERT_CL_OK(api.release(buffer));
}

TEST_F(MultiDeviceCommandBuffer, RefusesWhatTheExtensionRefusesAndSaysWhatItOffers) {
  cl_platform_command_buffer_capabilities_khr platform_caps = 0;
  ASSERT_CL_OK(clGetPlatformInfo(cluster.platform, CL_PLATFORM_COMMAND_BUFFER_CAPABILITIES_KHR, sizeof platform_caps,
                                 &platform_caps, nullptr));
  EXPECT_EQ(cl_platform_command_buffer_capabilities_khr(CL_COMMAND_BUFFER_PLATFORM_REMAP_QUEUES_KHR |
                                                        CL_COMMAND_BUFFER_PLATFORM_AUTOMATIC_REMAP_KHR),
            platform_caps);
  cl_device_id device = cluster.devices[1];
  EXPECT_NE(std::string::npos, device_string(device, CL_DEVICE_EXTENSIONS).find("cl_khr_command_buffer_multi_device"));
  cl_device_command_buffer_capabilities_khr caps = 0;
  ASSERT_CL_OK(clGetDeviceInfo(device, CL_DEVICE_COMMAND_BUFFER_CAPABILITIES_KHR, sizeof caps, &caps, nullptr));
  EXPECT_TRUE(caps & CL_COMMAND_BUFFER_CAPABILITY_MULTIPLE_QUEUE_KHR);
  cl_uint syncs = 0;
  cl_device_id sync_device = nullptr;
  ASSERT_CL_OK(clGetDeviceInfo(device, CL_DEVICE_COMMAND_BUFFER_NUM_SYNC_DEVICES_KHR, sizeof syncs, &syncs, nullptr));
  ASSERT_CL_OK(clGetDeviceInfo(device, CL_DEVICE_COMMAND_BUFFER_SYNC_DEVICES_KHR, sizeof sync_device, &sync_device,
                               nullptr));
  EXPECT_EQ(1u, syncs);
  EXPECT_EQ(device, sync_device);

  cl_int err = CL_SUCCESS;
  cl_command_queue both[] = {first, second};
  cl_command_buffer_properties_khr device_side[] = {CL_COMMAND_BUFFER_FLAGS_KHR, CL_COMMAND_BUFFER_DEVICE_SIDE_SYNC_KHR,
                                                    0};
  EXPECT_EQ(nullptr, api.create(2, both, device_side, &err));
  EXPECT_CL(CL_INCOMPATIBLE_COMMAND_QUEUE_KHR, err);
  cl_command_buffer_khr alone = api.create(1, &first, device_side, &err);
  EXPECT_CL(CL_SUCCESS, err);
  ASSERT_CL_OK(api.release(alone));
  cl_context other = clCreateContext(nullptr, 1, &cluster.devices[1], nullptr, nullptr, &err);
  ASSERT_CL_OK(err);
  cl_command_queue foreign = create_queue(other, cluster.devices[1]);
  cl_command_queue mixed[] = {first, foreign};
  EXPECT_EQ(nullptr, api.create(2, mixed, nullptr, &err));
  EXPECT_CL(CL_INVALID_CONTEXT, err);

  cl_command_buffer_khr buffer = create({first, second});
  const int one = 1;
  // With two queues, a command names one of them.
  EXPECT_CL(CL_INVALID_COMMAND_QUEUE,
            api.fill(buffer, nullptr, nullptr, a, &one, sizeof one, 0, sizeof one, 0, nullptr, nullptr, nullptr));
  EXPECT_CL(CL_INVALID_COMMAND_QUEUE,
            api.fill(buffer, foreign, nullptr, a, &one, sizeof one, 0, sizeof one, 0, nullptr, nullptr, nullptr));
  ASSERT_CL_OK(api.fill(buffer, second, nullptr, a, &one, sizeof one, 0, sizeof one, 0, nullptr, nullptr, nullptr));
  ASSERT_CL_OK(api.finalize(buffer));
  // Replayed on its own queues, or on one substitute per queue, each of the same device.
  EXPECT_CL(CL_INVALID_VALUE, api.enqueue(1, &first, buffer, 0, nullptr, nullptr));
  cl_command_queue swapped[] = {second, first};
  EXPECT_CL(CL_INCOMPATIBLE_COMMAND_QUEUE_KHR, api.enqueue(2, swapped, buffer, 0, nullptr, nullptr));
  cl_command_queue substitute = create_queue(context, cluster.devices[1]);
  cl_command_queue substituted[] = {first, substitute};
  ASSERT_CL_OK(api.enqueue(2, substituted, buffer, 0, nullptr, nullptr));
  ASSERT_CL_OK(clFinish(substitute));
  // A remap names as many queues as the buffer has (unless fedcl chooses), of its context, and its
  // own launches only.
  EXPECT_EQ(nullptr, api.remap(buffer, CL_FALSE, 1, &first, 0, nullptr, nullptr, &err));
  EXPECT_CL(CL_INVALID_VALUE, err);
  cl_command_queue elsewhere[] = {first, foreign};
  EXPECT_EQ(nullptr, api.remap(buffer, CL_FALSE, 2, elsewhere, 0, nullptr, nullptr, &err));
  EXPECT_CL(CL_INVALID_CONTEXT, err);
  cl_mutable_command_khr not_a_launch = reinterpret_cast<cl_mutable_command_khr>(buffer), ret = nullptr;
  EXPECT_EQ(nullptr, api.remap(buffer, CL_FALSE, 2, both, 1, &not_a_launch, &ret, &err));
  EXPECT_CL(CL_INVALID_MUTABLE_COMMAND_KHR, err);
  ASSERT_CL_OK(api.release(buffer));
  clReleaseCommandQueue(substitute);
  clReleaseCommandQueue(foreign);
  clReleaseContext(other);
}

TEST_F(MultiDeviceCommandBuffer, ADaemonLostMidReplayFailsTheReplayAndSparesTheOther) {
  cl_command_buffer_khr buffer = create({first, second});
  record_chain(buffer, first, second);
  ASSERT_CL_OK(api.finalize(buffer));
  // The survivor's part: a queue and a buffer of the first daemon that the lost replay never touched.
  cl_command_queue fresh = create_queue(context, cluster.devices[0]);
  cl_mem c = create_buffer(context, CL_MEM_READ_WRITE, n * sizeof(int));
  const int zero = 0;
  ASSERT_CL_OK(clEnqueueFillBuffer(fresh, c, &zero, sizeof zero, 0, n * sizeof(int), 0, nullptr, nullptr));
  ASSERT_CL_OK(clFinish(fresh));
  cl_command_buffer_khr alone = create({fresh});
  ASSERT_CL_OK(api.launch(alone, nullptr, nullptr, bound("offset", c, 3), 1, nullptr, &n, nullptr, 0, nullptr, nullptr,
                          nullptr));
  ASSERT_CL_OK(api.finalize(alone));
  cl_int err;
  cl_event gate = clCreateUserEvent(context, &err);
  ASSERT_CL_OK(err);
  cl_event done = nullptr;
  ASSERT_CL_OK(api.enqueue(0, nullptr, buffer, 1, &gate, &done));
  ASSERT_CL_OK(clFlush(first));
  ASSERT_CL_OK(clFlush(second));
  cluster.daemons[1]->kill();
  ASSERT_CL_OK(clSetUserEventStatus(gate, CL_COMPLETE));
  // The replay's event fails (the segments on the lost daemon never run); nothing hangs.
  EXPECT_CL(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST, clWaitForEvents(1, &done));
  cl_int status = 0;
  ASSERT_CL_OK(clGetEventInfo(done, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr));
  EXPECT_LT(status, 0);
  clReleaseEvent(done);
  // The first daemon's command buffers still run there.
  api.run_and_wait(alone);
  expect_all(read(fresh, c), 3, "c after a replay on the surviving daemon");
  // Replayed again (accepted while the client still waits for the lost daemon to come back, refused
  // once it gave up): then the queue of the first daemon that both replays used goes on. The second
  // replay's first segment waits for bytes from the lost daemon; this hung before those bytes' receive
  // event outlived the client's last reference to it.
  cl_event again = nullptr;
  if (api.enqueue(0, nullptr, buffer, 0, nullptr, &again) == CL_SUCCESS) {
    EXPECT_CL(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST, clWaitForEvents(1, &again));
    clReleaseEvent(again);
  }
  clear(b);
  cl_command_buffer_khr on_first = create({first});
  ASSERT_CL_OK(api.launch(on_first, nullptr, nullptr, bound("offset", b, 3), 1, nullptr, &n, nullptr, 0, nullptr,
                          nullptr, nullptr));
  ASSERT_CL_OK(api.finalize(on_first));
  api.run_and_wait(on_first);
  expect_all(read(first, b), 3, "b after a replay on the queue the lost replays used");
  clReleaseEvent(gate);
  ASSERT_CL_OK(api.release(on_first));
  ASSERT_CL_OK(api.release(alone));
  ASSERT_CL_OK(api.release(buffer));
  clReleaseMemObject(c);
  clReleaseCommandQueue(fresh);
}
