// Lifetimes by the specification: work fedcl accepted (a command buffer's replays, remapped copies and
// updates) runs with every object it uses, whatever the application released right after recording
// or enqueueing it; where it cannot run, its event fails and the context's notify callback says why.
// Each test releases everything it may, then checks every result and every event's status.
#include <CL/cl_fedcl_command_buffer.h>
#include <CL/cl_fedcl_transfer.h>

#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cl_harness.h"
#include "command_buffer_api.h"

using namespace fedcl_test;

namespace {

constexpr size_t kFloats = 4096;

const char kAxpySource[] = R"(
__kernel void axpy(__global float *y, __global const float *x, float a) {
  size_t i = get_global_id(0);
  y[i] += a * x[i];
}
__kernel void axpy_image(__global float *y, read_only image2d_t x, sampler_t s, float a) {
  int i = get_global_id(0);
  y[i] += a * read_imagef(x, s, (int2)(i, 0)).x;
}
)";

// A context over the first `devices` devices of a cluster of as many daemons, with its notify
// callback's messages, a queue per device, and y (all 1) and x (all 2) for y += 0.5 * x.
struct Lifetime : ::testing::Test {
  explicit Lifetime(size_t devices = 1) : cluster(devices) {}
  Cluster cluster;
  CommandBufferApi api;
  ContextNotices notices;
  cl_context context = nullptr;
  std::vector<cl_command_queue> queues;  // one per device, released by the fixture
  cl_mem y = nullptr, x = nullptr;

  void SetUp() override {
    cl_int err;
    context = clCreateContext(nullptr, cl_uint(cluster.devices.size()), cluster.devices.data(), ContextNotices::callback,
                              &notices, &err);
    ASSERT_CL_OK(err);
    for (cl_device_id device : cluster.devices) queues.push_back(create_queue(context, device));
    y = filled(1.0f);
    x = filled(2.0f);
  }

  void TearDown() override {
    for (cl_mem mem : {y, x})
      if (mem) clReleaseMemObject(mem);
    for (cl_command_queue queue : queues) clReleaseCommandQueue(queue);
    if (context) clReleaseContext(context);
  }

  cl_event user_event() {
    cl_int err = CL_INVALID_VALUE;
    cl_event event = clCreateUserEvent(context, &err);
    EXPECT_CL(CL_SUCCESS, err);
    return event;
  }

  cl_mem filled(float value) {
    cl_mem mem = create_buffer(context, CL_MEM_READ_WRITE, kFloats * sizeof(float));
    EXPECT_CL(CL_SUCCESS, clEnqueueFillBuffer(queues[0], mem, &value, sizeof value, 0, kFloats * sizeof(float), 0, nullptr, nullptr));
    EXPECT_CL(CL_SUCCESS, clFinish(queues[0]));
    return mem;
  }

  // axpy(y, x, 0.5), from a program of its own: the caller may release both.
  void axpy_kernel(cl_program *program, cl_kernel *kernel) {
    *program = build_program(context, kAxpySource);
    *kernel = create_kernel(*program, "axpy");
    set_arg(*kernel, 0, y);
    set_arg(*kernel, 1, x);
    set_arg(*kernel, 2, 0.5f);
  }

  cl_command_buffer_khr created(cl_command_queue queue, bool mutable_launches = false) {
    cl_int err = CL_INVALID_VALUE;
    cl_command_buffer_properties_khr properties[] = {CL_COMMAND_BUFFER_FLAGS_KHR, CL_COMMAND_BUFFER_MUTABLE_KHR, 0};
    cl_command_buffer_khr buffer = api.create(1, &queue, mutable_launches ? properties : nullptr, &err);
    EXPECT_CL(CL_SUCCESS, err);
    return buffer;
  }

  // A command buffer on queue with one launch of y += 0.5 * x (its handle in *launch, if asked for),
  // finalized unless more is to be recorded; the kernel and its program are released right after
  // recording.
  cl_command_buffer_khr recorded_axpy(cl_command_queue queue, cl_mutable_command_khr *launch = nullptr,
                                      bool finalize = true) {
    cl_command_buffer_khr buffer = created(queue, launch != nullptr);
    cl_program program = nullptr;
    cl_kernel kernel = nullptr;
    axpy_kernel(&program, &kernel);
    EXPECT_CL(CL_SUCCESS, api.launch(buffer, nullptr, nullptr, kernel, 1, nullptr, &kFloats, nullptr, 0, nullptr,
                                     nullptr, launch));
    if (finalize) {
      EXPECT_CL(CL_SUCCESS, api.finalize(buffer));
    }
    EXPECT_CL(CL_SUCCESS, clReleaseKernel(kernel));
    EXPECT_CL(CL_SUCCESS, clReleaseProgram(program));
    return buffer;
  }

  // Replays buffer (on its own queues, behind wait_list), waits for the replay's event and checks
  // that it completed.
  void replay(cl_command_buffer_khr buffer, std::vector<cl_event> wait_list = {}) {
    cl_event done = nullptr;
    ASSERT_CL_OK(api.enqueue(0, nullptr, buffer, cl_uint(wait_list.size()), wait_list.empty() ? nullptr : wait_list.data(),
                             &done));
    EXPECT_CL(CL_SUCCESS, clWaitForEvents(1, &done));
    EXPECT_CL(CL_COMPLETE, command_status(done));
    clReleaseEvent(done);
  }

  std::vector<float> read(cl_mem mem, cl_command_queue on = nullptr) {
    std::vector<float> out(kFloats, -1.0f);
    EXPECT_CL(CL_SUCCESS, clEnqueueReadBuffer(on ? on : queues[0], mem, CL_TRUE, 0, kFloats * sizeof(float), out.data(), 0,
                                              nullptr, nullptr));
    return out;
  }

  // y (or mem) as it must be after `runs` launches of y += 0.5 * x from 1.
  void expect_y(size_t runs, const char *what, cl_command_queue on = nullptr, cl_mem mem = nullptr) {
    std::vector<float> values = read(mem ? mem : y, on);
    for (size_t i = 0; i < kFloats; i++) ASSERT_EQ(1.0f + float(runs), values[i]) << what << " at " << i;
  }

  void release_x_and_y() {
    ASSERT_CL_OK(clReleaseMemObject(x));
    ASSERT_CL_OK(clReleaseMemObject(y));
    x = y = nullptr;
  }
};

struct LifetimeTwoDaemons : Lifetime {
  LifetimeTwoDaemons() : Lifetime(2) {}

  // Remaps buffer onto the second daemon's queue, replays the copy there and then the original on
  // the first (y after one launch, then two), and releases both. copy_check: what the first check says.
  void expect_remap_runs_on_both(cl_command_buffer_khr buffer, const char *copy_check) {
    cl_int err = CL_INVALID_VALUE;
    cl_command_buffer_khr copy = api.remap(buffer, CL_FALSE, 1, &queues[1], 0, nullptr, nullptr, &err);
    ASSERT_CL_OK(err);
    replay(copy);
    expect_y(1, copy_check, queues[1]);
    replay(buffer);
    expect_y(2, "y after the original on the first daemon");
    ASSERT_CL_OK(api.release(copy));
    ASSERT_CL_OK(api.release(buffer));
  }
};

}  // namespace

// The issue's first defect: the remapped copy ran nothing once the kernel was released, with
// CL_SUCCESS everywhere.
TEST_F(Lifetime, ARemapRunsTheKernelTheApplicationReleased) {
  cl_command_buffer_khr buffer = recorded_axpy(queues[0]);
  cl_command_queue other = create_queue(context, cluster.devices[0]);
  cl_int err = CL_INVALID_VALUE;
  cl_command_buffer_khr copy = api.remap(buffer, CL_FALSE, 1, &other, 0, nullptr, nullptr, &err);
  ASSERT_CL_OK(err);
  replay(copy);
  expect_y(1, "y after the remapped copy");
  replay(buffer);
  expect_y(2, "y after the original");
  ASSERT_CL_OK(api.release(copy));
  ASSERT_CL_OK(api.release(buffer));
  clReleaseCommandQueue(other);
  EXPECT_EQ("", notices.all());
}

TEST_F(LifetimeTwoDaemons, ARemapOntoAnotherDaemonRunsTheKernelTheApplicationReleased) {
  cl_command_buffer_khr buffer = recorded_axpy(queues[0]);
  expect_remap_runs_on_both(buffer, "y after the copy on the second daemon");
  EXPECT_EQ("", notices.all());
}

// The issue's second defect: the replay's event failed with CL_INVALID_COMMAND_QUEUE once the
// application had released the buffer's queue.
TEST_F(Lifetime, AReplayRunsOnTheQueueTheApplicationReleased) {
  cl_command_queue own = create_queue(context, cluster.devices[0]);
  cl_command_buffer_khr buffer = recorded_axpy(own);
  ASSERT_CL_OK(clReleaseCommandQueue(own));
  replay(buffer);
  replay(buffer);
  expect_y(2, "y after two replays");
  ASSERT_CL_OK(api.release(buffer));
  EXPECT_EQ("", notices.all());
}

// What a daemon cannot record fails every replay of that command buffer, with a reason: success with
// nothing done is impossible. (The program is built for the first daemon's device only, so the
// second daemon has no such kernel to record a remapped launch of.)
TEST_F(LifetimeTwoDaemons, ARecordingTheDaemonRefusedFailsTheReplayAndSaysWhy) {
  cl_int err;
  const char *source = kAxpySource;
  cl_program program = clCreateProgramWithSource(context, 1, &source, nullptr, &err);
  ASSERT_CL_OK(err);
  ASSERT_CL_OK(clBuildProgram(program, 1, &cluster.devices[0], "", nullptr, nullptr));
  cl_kernel kernel = create_kernel(program, "axpy");
  set_arg(kernel, 0, y);
  set_arg(kernel, 1, x);
  set_arg(kernel, 2, 0.5f);
  cl_command_buffer_khr buffer = api.create(1, &queues[0], nullptr, &err);
  ASSERT_CL_OK(err);
  ASSERT_CL_OK(api.launch(buffer, nullptr, nullptr, kernel, 1, nullptr, &kFloats, nullptr, 0, nullptr, nullptr, nullptr));
  ASSERT_CL_OK(api.finalize(buffer));
  cl_command_buffer_khr copy = api.remap(buffer, CL_FALSE, 1, &queues[1], 0, nullptr, nullptr, &err);
  ASSERT_CL_OK(err);
  cl_event done = nullptr;
  ASSERT_CL_OK(api.enqueue(0, nullptr, copy, 0, nullptr, &done));
  EXPECT_CL(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST, clWaitForEvents(1, &done));
  EXPECT_LT(command_status(done), 0);
  clReleaseEvent(done);
  EXPECT_TRUE(notices.wait_for("kernel")) << notices.all();
  expect_y(0, "y, which no replay may have changed");
  ASSERT_CL_OK(api.release(copy));
  ASSERT_CL_OK(api.release(buffer));
  clReleaseKernel(kernel);
  clReleaseProgram(program);
}

// The second part of the audit: every kind of object a command buffer uses, released by the
// application right after recording (or enqueueing); then replayed, remapped or updated.

TEST_F(Lifetime, AReplayRunsWithTheArgumentsRecordedAfterTheKernelChangedAndWent) {
  cl_command_buffer_khr buffer = created(queues[0]);
  cl_program program = nullptr;
  cl_kernel kernel = nullptr;
  axpy_kernel(&program, &kernel);
  ASSERT_CL_OK(api.launch(buffer, nullptr, nullptr, kernel, 1, nullptr, &kFloats, nullptr, 0, nullptr, nullptr, nullptr));
  ASSERT_CL_OK(api.finalize(buffer));
  set_arg(kernel, 2, 10.0f);  // later arguments never reach the recorded launch
  set_arg(kernel, 0, x);
  ASSERT_CL_OK(clReleaseKernel(kernel));
  ASSERT_CL_OK(clReleaseProgram(program));
  replay(buffer);
  replay(buffer);
  expect_y(2, "y after two replays with the recorded arguments");
  ASSERT_CL_OK(api.release(buffer));
  EXPECT_EQ("", notices.all());
}

TEST_F(Lifetime, AReplayUsesTheMemoryObjectsTheApplicationReleased) {
  cl_mem kept = filled(0.0f);
  cl_command_buffer_khr buffer = recorded_axpy(queues[0], nullptr, false);
  cl_sync_point_khr launched = 0;
  ASSERT_CL_OK(api.barrier(buffer, nullptr, nullptr, 0, nullptr, &launched, nullptr));
  ASSERT_CL_OK(api.copy(buffer, nullptr, nullptr, y, kept, 0, 0, kFloats * sizeof(float), 1, &launched, nullptr, nullptr));
  ASSERT_CL_OK(api.finalize(buffer));
  release_x_and_y();
  replay(buffer);
  replay(buffer);
  expect_y(2, "the copy of y after two replays", nullptr, kept);
  ASSERT_CL_OK(api.release(buffer));
  clReleaseMemObject(kept);
  EXPECT_EQ("", notices.all());
}

TEST_F(Lifetime, ARemappedCopyRunsAfterTheApplicationReleasedTheOriginal) {
  cl_command_buffer_khr buffer = recorded_axpy(queues[0]);
  cl_command_queue other = create_queue(context, cluster.devices[0]);
  cl_int err = CL_INVALID_VALUE;
  cl_command_buffer_khr copy = api.remap(buffer, CL_FALSE, 1, &other, 0, nullptr, nullptr, &err);
  ASSERT_CL_OK(err);
  ASSERT_CL_OK(api.release(buffer));
  ASSERT_CL_OK(clReleaseCommandQueue(other));
  replay(copy);
  expect_y(1, "y after the copy of a released buffer, on a released queue");
  ASSERT_CL_OK(api.release(copy));
  EXPECT_EQ("", notices.all());
}

TEST_F(Lifetime, AnUpdateKeepsTheBufferItGaveAfterTheApplicationReleasedIt) {
  cl_mutable_command_khr launch = nullptr;
  cl_command_buffer_khr buffer = recorded_axpy(queues[0], &launch);
  cl_mem fours = filled(4.0f);
  fedcl_mutable_dispatch_arg_khr arg{1, sizeof(cl_mem), &fours};
  fedcl_mutable_dispatch_config_khr config{};
  config.command = launch;
  config.num_args = 1;
  config.arg_list = &arg;
  fedcl_command_buffer_update_type_khr type = FEDCL_STRUCTURE_TYPE_MUTABLE_DISPATCH_CONFIG;
  const void *configs[] = {&config};
  ASSERT_CL_OK(api.update(buffer, 1, &type, configs));
  ASSERT_CL_OK(clReleaseMemObject(fours));
  replay(buffer);
  expect_y(2, "y after a replay with the updated (and released) x of fours");
  cl_int err = CL_INVALID_VALUE;
  cl_command_buffer_khr copy = api.remap(buffer, CL_FALSE, 1, &queues[0], 0, nullptr, nullptr, &err);
  ASSERT_CL_OK(err);
  replay(copy);
  expect_y(4, "y after the remapped copy, with the update it was copied with");
  ASSERT_CL_OK(api.release(copy));
  ASSERT_CL_OK(api.release(buffer));
  EXPECT_EQ("", notices.all());
}

TEST_F(LifetimeTwoDaemons, ARemapOntoAnotherDaemonUsesTheSamplerAndImageTheApplicationReleased) {
  cl_int err;
  cl_image_format format{CL_R, CL_FLOAT};
  cl_image_desc desc{};
  desc.image_type = CL_MEM_OBJECT_IMAGE2D;
  desc.image_width = kFloats;
  desc.image_height = 1;
  std::vector<float> twos(kFloats, 2.0f);
  cl_mem image = clCreateImage(context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, &format, &desc, twos.data(), &err);
  ASSERT_CL_OK(err);
  cl_sampler sampler = clCreateSampler(context, CL_FALSE, CL_ADDRESS_CLAMP_TO_EDGE, CL_FILTER_NEAREST, &err);
  ASSERT_CL_OK(err);
  cl_program program = build_program(context, kAxpySource);
  cl_kernel kernel = create_kernel(program, "axpy_image");
  set_arg(kernel, 0, y);
  set_arg(kernel, 1, image);
  set_arg(kernel, 2, sampler);
  set_arg(kernel, 3, 0.5f);
  cl_command_buffer_khr buffer = created(queues[0]);
  ASSERT_CL_OK(api.launch(buffer, nullptr, nullptr, kernel, 1, nullptr, &kFloats, nullptr, 0, nullptr, nullptr, nullptr));
  ASSERT_CL_OK(api.finalize(buffer));
  for (cl_int released : {clReleaseKernel(kernel), clReleaseProgram(program), clReleaseSampler(sampler),
                          clReleaseMemObject(image)})
    ASSERT_CL_OK(released);
  expect_remap_runs_on_both(buffer, "y after the copy on the second daemon, sampling the image");
  EXPECT_EQ("", notices.all());
}

TEST_F(LifetimeTwoDaemons, ARemapOntoAnotherDaemonRunsAfterTheApplicationReleasedTheContext) {
  // x and y are on the first daemon only: the copy's launch creates them on the second, in the
  // context the application let go of.
  cl_command_buffer_khr buffer = recorded_axpy(queues[0]);
  ASSERT_CL_OK(clReleaseContext(context));
  context = nullptr;
  expect_remap_runs_on_both(buffer, "y after the copy on the second daemon");
}

TEST_F(LifetimeTwoDaemons, AReplayWaitsForAnEventOfAnotherDaemonTheApplicationReleased) {
  cl_command_buffer_khr buffer = recorded_axpy(queues[1]);
  cl_event gate = user_event();
  const float four = 4.0f;
  cl_event filled_x = nullptr, done = nullptr;
  ASSERT_CL_OK(clEnqueueFillBuffer(queues[0], x, &four, sizeof four, 0, kFloats * sizeof(float), 1, &gate, &filled_x));
  ASSERT_CL_OK(api.enqueue(0, nullptr, buffer, 1, &filled_x, &done));
  ASSERT_CL_OK(clReleaseEvent(filled_x));
  ASSERT_CL_OK(clSetUserEventStatus(gate, CL_COMPLETE));
  EXPECT_CL(CL_SUCCESS, clWaitForEvents(1, &done));
  EXPECT_CL(CL_COMPLETE, command_status(done));
  expect_y(2, "y after the replay behind the fill of x with fours", queues[1]);
  clReleaseEvent(done);
  clReleaseEvent(gate);
  ASSERT_CL_OK(api.release(buffer));
  EXPECT_EQ("", notices.all());
}

// Beyond command buffers: what runs after the call that enqueued it returned.

TEST_F(Lifetime, AnEventOfAReleasedQueueCompletesWhenWaitedForAndAskedAbout) {
  cl_command_queue own = create_queue(context, cluster.devices[0]);
  cl_program program = nullptr;
  cl_kernel kernel = nullptr;
  axpy_kernel(&program, &kernel);
  cl_event gate = user_event();
  cl_event first = nullptr, second = nullptr;
  ASSERT_CL_OK(clEnqueueNDRangeKernel(own, kernel, 1, nullptr, &kFloats, nullptr, 1, &gate, &first));
  ASSERT_CL_OK(clEnqueueNDRangeKernel(own, kernel, 1, nullptr, &kFloats, nullptr, 0, nullptr, &second));
  for (cl_int released : {clReleaseKernel(kernel), clReleaseProgram(program), clReleaseCommandQueue(own)})
    ASSERT_CL_OK(released);
  ASSERT_CL_OK(clSetUserEventStatus(gate, CL_COMPLETE));
  EXPECT_CL(CL_SUCCESS, clWaitForEvents(1, &second));
  EXPECT_CL(CL_COMPLETE, command_status(second));
  // Asked about rather than waited for (a status query's own request).
  cl_int status = CL_QUEUED;
  for (int i = 0; i < 3000 && status != CL_COMPLETE; i++) {
    status = command_status(first);
    if (status != CL_COMPLETE) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_CL(CL_COMPLETE, status);
  expect_y(2, "y after both launches on the released queue");
  clReleaseEvent(first);
  clReleaseEvent(second);
  clReleaseEvent(gate);
  EXPECT_EQ("", notices.all());
}

TEST_F(Lifetime, AnEventCallbackComesAfterTheApplicationReleasedTheEventAndItsQueue) {
  struct Called {
    std::mutex mutex;
    std::condition_variable cv;
    std::vector<cl_int> statuses;
  } called;
  cl_command_queue own = create_queue(context, cluster.devices[0]);
  cl_program program = nullptr;
  cl_kernel kernel = nullptr;
  axpy_kernel(&program, &kernel);
  cl_event gate = user_event();
  cl_event launched = nullptr;
  ASSERT_CL_OK(clEnqueueNDRangeKernel(own, kernel, 1, nullptr, &kFloats, nullptr, 1, &gate, &launched));
  auto callback = [](cl_event, cl_int status, void *data) {
    auto *c = static_cast<Called *>(data);
    std::lock_guard<std::mutex> lock(c->mutex);
    c->statuses.push_back(status);
    c->cv.notify_all();
  };
  ASSERT_CL_OK(clSetEventCallback(launched, CL_COMPLETE, callback, &called));
  for (cl_int released : {clReleaseEvent(launched), clReleaseKernel(kernel), clReleaseProgram(program),
                          clReleaseCommandQueue(own)})
    ASSERT_CL_OK(released);
  ASSERT_CL_OK(clSetUserEventStatus(gate, CL_COMPLETE));
  {
    std::unique_lock<std::mutex> lock(called.mutex);
    ASSERT_TRUE(called.cv.wait_for(lock, std::chrono::seconds(30), [&] { return !called.statuses.empty(); }))
        << "the callback never came";
    EXPECT_EQ(std::vector<cl_int>{CL_COMPLETE}, called.statuses);
  }
  expect_y(1, "y after the launch whose event was released");
  clReleaseEvent(gate);
}

TEST_F(Lifetime, FileCommandsRunAfterTheApplicationReleasedTheirQueueAndBuffer) {
  auto write_from_file = reinterpret_cast<clEnqueueWriteBufferFromStdioFile_fn>(
      clGetExtensionFunctionAddressForPlatform(cluster.platform, "clEnqueueWriteBufferFromStdioFile"));
  auto read_to_file = reinterpret_cast<clEnqueueReadBufferToStdioFile_fn>(
      clGetExtensionFunctionAddressForPlatform(cluster.platform, "clEnqueueReadBufferToStdioFile"));
  ASSERT_TRUE(write_from_file && read_to_file);
  std::vector<float> threes(kFloats, 3.0f);
  FILE *in = std::tmpfile(), *out = std::tmpfile();
  ASSERT_TRUE(in && out);
  ASSERT_EQ(kFloats, std::fwrite(threes.data(), sizeof(float), kFloats, in));
  std::rewind(in);
  cl_command_queue own = create_queue(context, cluster.devices[0]);
  cl_mem mem = create_buffer(context, CL_MEM_READ_WRITE, kFloats * sizeof(float));
  cl_event gate = user_event();
  cl_event written = nullptr, saved = nullptr;
  ASSERT_CL_OK(write_from_file(own, mem, CL_FALSE, 0, kFloats * sizeof(float), in, 1, &gate, &written));
  ASSERT_CL_OK(read_to_file(own, mem, CL_FALSE, 0, kFloats * sizeof(float), out, 0, nullptr, &saved));
  ASSERT_CL_OK(clReleaseMemObject(mem));
  ASSERT_CL_OK(clReleaseCommandQueue(own));
  ASSERT_CL_OK(clSetUserEventStatus(gate, CL_COMPLETE));
  cl_event both[] = {written, saved};
  EXPECT_CL(CL_SUCCESS, clWaitForEvents(2, both));
  EXPECT_CL(CL_COMPLETE, command_status(written));
  EXPECT_CL(CL_COMPLETE, command_status(saved));
  std::rewind(out);
  std::vector<float> back(kFloats, -1.0f);
  EXPECT_EQ(kFloats, std::fread(back.data(), sizeof(float), kFloats, out));
  EXPECT_EQ(threes, back);
  for (cl_event event : {written, saved, gate}) clReleaseEvent(event);
  std::fclose(in);
  std::fclose(out);
  EXPECT_EQ("", notices.all());
}

TEST_F(LifetimeTwoDaemons, ACollectiveRunsAfterTheApplicationReleasedItsQueuesAndSource) {
  auto broadcast = reinterpret_cast<clEnqueueBroadcastBuffer_fn>(
      clGetExtensionFunctionAddressForPlatform(cluster.platform, "clEnqueueBroadcastBuffer"));
  ASSERT_NE(nullptr, broadcast);
  cl_mem copy = filled(0.0f);
  cl_command_queue own[] = {create_queue(context, cluster.devices[0]), create_queue(context, cluster.devices[1])};
  cl_mem buffers[] = {y, copy};
  cl_event gate = user_event();
  cl_event done[2] = {};
  ASSERT_CL_OK(broadcast(2, own, 0, buffers, nullptr, kFloats * sizeof(float), 1, &gate, done));
  release_x_and_y();
  for (cl_command_queue queue : own) ASSERT_CL_OK(clReleaseCommandQueue(queue));
  ASSERT_CL_OK(clSetUserEventStatus(gate, CL_COMPLETE));
  EXPECT_CL(CL_SUCCESS, clWaitForEvents(2, done));
  for (cl_event event : done) EXPECT_CL(CL_COMPLETE, command_status(event));
  expect_y(0, "the second participant's copy of y", queues[1], copy);
  for (cl_event event : done) clReleaseEvent(event);
  clReleaseEvent(gate);
  clReleaseMemObject(copy);
  EXPECT_EQ("", notices.all());
}
