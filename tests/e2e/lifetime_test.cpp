// Lifetimes by the specification: work fedcl accepted (a command buffer's replays, remapped copies and
// updates) runs with every object it uses, whatever the application released right after recording
// or enqueueing it; where it cannot run, its event fails and the context's notify callback says why.
// Each test releases everything it may, then checks every result and every event's status.
#include <CL/cl_fedcl_command_buffer.h>

#include <string>
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
    clReleaseContext(context);
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

  // A command buffer on queue with one launch of y += 0.5 * x, finalized; the kernel and its program
  // are released right after recording.
  cl_command_buffer_khr recorded_axpy(cl_command_queue queue) {
    cl_int err = CL_INVALID_VALUE;
    cl_command_buffer_khr buffer = api.create(1, &queue, nullptr, &err);
    EXPECT_CL(CL_SUCCESS, err);
    cl_program program = nullptr;
    cl_kernel kernel = nullptr;
    axpy_kernel(&program, &kernel);
    EXPECT_CL(CL_SUCCESS, api.launch(buffer, nullptr, nullptr, kernel, 1, nullptr, &kFloats, nullptr, 0, nullptr, nullptr, nullptr));
    EXPECT_CL(CL_SUCCESS, api.finalize(buffer));
    EXPECT_CL(CL_SUCCESS, clReleaseKernel(kernel));
    EXPECT_CL(CL_SUCCESS, clReleaseProgram(program));
    return buffer;
  }

  // Replays buffer (on its own queues), waits for the replay's event and checks that it completed.
  void replay(cl_command_buffer_khr buffer) {
    cl_event done = nullptr;
    ASSERT_CL_OK(api.enqueue(0, nullptr, buffer, 0, nullptr, &done));
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

  // y as it must be after `runs` launches of y += 0.5 * x from 1.
  void expect_y(size_t runs, const char *what, cl_command_queue on = nullptr) {
    std::vector<float> values = read(y, on);
    for (size_t i = 0; i < kFloats; i++) ASSERT_EQ(1.0f + float(runs), values[i]) << what << " at " << i;
  }
};

struct LifetimeTwoDaemons : Lifetime {
  LifetimeTwoDaemons() : Lifetime(2) {}
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
  cl_int err = CL_INVALID_VALUE;
  cl_command_buffer_khr copy = api.remap(buffer, CL_FALSE, 1, &queues[1], 0, nullptr, nullptr, &err);
  ASSERT_CL_OK(err);
  replay(copy);
  expect_y(1, "y after the copy on the second daemon", queues[1]);
  replay(buffer);
  expect_y(2, "y after the original on the first daemon");
  ASSERT_CL_OK(api.release(copy));
  ASSERT_CL_OK(api.release(buffer));
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
