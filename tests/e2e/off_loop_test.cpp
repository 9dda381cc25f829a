// A session's slow driver calls (a program build, a context) run off its worker's loop
// (bridge-daemon/off_loop.h): another thread's commands on queues go on meanwhile, and a request
// that may not overtake them waits, with every request after it. The daemon's backend is slowed by a
// shim: while the test's folder holds a file `slow`, clBuildProgram, clCreateContext,
// clCreateProgramWithBinary and clGetProgramInfo(CL_PROGRAM_BINARIES) wait a second before they
// start, then note in `ended` that they ended.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "cl_harness.h"

namespace {

const char kStoreSource[] = "__kernel void store(__global int *x, int v) { x[get_global_id(0)] = v; }";

class OffLoop : public ShimmedDeviceFixture {
 protected:
  void SetUp() override {
    std::string pattern = ::testing::TempDir() + "fedcl-slow-driver-XXXXXX";
    ASSERT_NE(nullptr, mkdtemp(pattern.data()));
    dir_ = pattern;
    ASSERT_NO_FATAL_FAILURE(start(FEDCL_REFUSING_BACKEND_PATH, {{"FEDCL_TEST_SLOW_CALLS", dir_}}));
    program_ = build_program(context, kStoreSource);
    kernel_ = create_kernel(program_, "store");
    mem_ = create_buffer(context, CL_MEM_READ_WRITE, sizeof(cl_int));
  }

  void TearDown() override {
    std::remove((dir_ + "/slow").c_str());
    if (mem_) clReleaseMemObject(mem_);
    if (kernel_) clReleaseKernel(kernel_);
    if (program_) clReleaseProgram(program_);
    ShimmedDeviceFixture::TearDown();
    std::remove((dir_ + "/ended").c_str());
    rmdir(dir_.c_str());
  }

  void slow_driver(unsigned seconds = 1) { std::ofstream(dir_ + "/slow") << seconds << '\n'; }
  // Whether a slowed call has ended in the daemon's worker.
  bool slow_call_ended() { return access((dir_ + "/ended").c_str(), F_OK) == 0; }

  // Stores value into target with the kernel and reads it back, on this thread; returns the value read.
  cl_int store_and_read(cl_mem target, cl_int value) {
    set_arg(kernel_, 0, target);
    set_arg(kernel_, 1, value);
    const size_t one = 1;
    EXPECT_CL(CL_SUCCESS, clEnqueueNDRangeKernel(queue, kernel_, 1, nullptr, &one, nullptr, 0, nullptr, nullptr));
    EXPECT_CL(CL_SUCCESS, clFinish(queue));
    cl_int read = 0;
    EXPECT_CL(CL_SUCCESS, clEnqueueReadBuffer(queue, target, CL_TRUE, 0, sizeof read, &read, 0, nullptr, nullptr));
    return read;
  }

  // Runs slow_call on a thread of its own while this one launches kernels and reads their results:
  // every one must be done while the slow call is still in the driver.
  template <typename SlowCall>
  void expect_commands_go_on_during(SlowCall slow_call) {
    slow_driver();
    std::atomic<bool> returned{false};
    std::thread slow([&] {
      slow_call();
      returned = true;
    });
    // The slow call's request reaches the daemon well within this (it sleeps there for a second).
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    for (cl_int value = 1; value <= 3; value++) EXPECT_EQ(value, store_and_read(mem_, value));
    EXPECT_FALSE(slow_call_ended()) << "the commands waited for the slow driver call";
    EXPECT_FALSE(returned.load());
    slow.join();
    EXPECT_TRUE(slow_call_ended());
  }

  std::string dir_;
  cl_program program_ = nullptr;
  cl_kernel kernel_ = nullptr;
  cl_mem mem_ = nullptr;
};

TEST_F(OffLoop, AnotherThreadsKernelsRunWhileAProgramBuilds) {
  cl_int err = CL_SUCCESS;
  const char *source = kScaleSource;
  cl_program building = clCreateProgramWithSource(context, 1, &source, nullptr, &err);
  ASSERT_CL_OK(err);
  expect_commands_go_on_during([&] { EXPECT_CL(CL_SUCCESS, clBuildProgram(building, 1, &device, "", nullptr, nullptr)); });
  // The build itself came through whole.
  cl_kernel scale = create_kernel(building, "scale");
  clReleaseKernel(scale);
  clReleaseProgram(building);
}

TEST_F(OffLoop, AnotherThreadsKernelsRunWhileAContextIsMade) {
  cl_context made = nullptr;
  expect_commands_go_on_during([&] {
    cl_int err = CL_SUCCESS;
    made = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &err);
    EXPECT_CL(CL_SUCCESS, err);
  });
  ASSERT_NE(nullptr, made);
  // The context came through whole: a queue and a buffer of its own work.
  cl_command_queue queue = create_queue(made, device);
  cl_mem mem = create_buffer(made, CL_MEM_READ_WRITE, sizeof(cl_int));
  const cl_int pattern = 7;
  cl_int read = 0;
  ASSERT_CL_OK(clEnqueueFillBuffer(queue, mem, &pattern, sizeof pattern, 0, sizeof pattern, 0, nullptr, nullptr));
  ASSERT_CL_OK(clEnqueueReadBuffer(queue, mem, CL_TRUE, 0, sizeof read, &read, 0, nullptr, nullptr));
  EXPECT_EQ(7, read);
  clReleaseMemObject(mem);
  clReleaseCommandQueue(queue);
  clReleaseContext(made);
}

TEST_F(OffLoop, AnotherThreadsKernelsRunWhileAProgramIsMadeFromItsBinary) {
  std::vector<unsigned char> binary = program_binary(program_);
  size_t size = binary.size();
  cl_program made = nullptr;
  expect_commands_go_on_during([&] {
    const unsigned char *bytes = binary.data();
    cl_int status = CL_SUCCESS, err = CL_SUCCESS;
    made = clCreateProgramWithBinary(context, 1, &device, &size, &bytes, &status, &err);
    EXPECT_CL(CL_SUCCESS, err);
    EXPECT_CL(CL_SUCCESS, status);
  });
  ASSERT_NE(nullptr, made);
  // The program came through whole: built, its kernel is there.
  ASSERT_CL_OK(clBuildProgram(made, 1, &device, "", nullptr, nullptr));
  cl_kernel store = create_kernel(made, "store");
  clReleaseKernel(store);
  clReleaseProgram(made);
}

TEST_F(OffLoop, AnotherThreadsKernelsRunWhileAProgramsBinariesAreRead) {
  size_t size = 0;
  ASSERT_CL_OK(clGetProgramInfo(program_, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, nullptr));
  ASSERT_GT(size, 0u);
  std::vector<unsigned char> binary(size);
  expect_commands_go_on_during([&] {
    unsigned char *into = binary.data();
    EXPECT_CL(CL_SUCCESS, clGetProgramInfo(program_, CL_PROGRAM_BINARIES, sizeof into, &into, nullptr));
  });
  // The binaries came through whole: a program made from them builds and has the kernel.
  const unsigned char *bytes = binary.data();
  cl_int status = CL_SUCCESS, err = CL_SUCCESS;
  cl_program made = clCreateProgramWithBinary(context, 1, &device, &size, &bytes, &status, &err);
  ASSERT_CL_OK(err);
  ASSERT_CL_OK(clBuildProgram(made, 1, &device, "", nullptr, nullptr));
  cl_kernel store = create_kernel(made, "store");
  clReleaseKernel(store);
  clReleaseProgram(made);
}

// A buffer made while a build runs waits for it (creating an object may not overtake), and the
// write and kernel that use the buffer wait behind it, though they could overtake by their kind.
TEST_F(OffLoop, ARequestThatMayNotOvertakeWaitsWithEveryOneAfterIt) {
  cl_int err = CL_SUCCESS;
  const char *source = kScaleSource;
  cl_program building = clCreateProgramWithSource(context, 1, &source, nullptr, &err);
  ASSERT_CL_OK(err);
  slow_driver();
  std::thread slow([&] { EXPECT_CL(CL_SUCCESS, clBuildProgram(building, 1, &device, "", nullptr, nullptr)); });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  cl_mem made = create_buffer(context, CL_MEM_READ_WRITE, sizeof(cl_int));
  const cl_int written = 5;
  ASSERT_CL_OK(clEnqueueWriteBuffer(queue, made, CL_FALSE, 0, sizeof written, &written, 0, nullptr, nullptr));
  EXPECT_EQ(9, store_and_read(made, 9));
  EXPECT_TRUE(slow_call_ended()) << "the buffer was made before the build ended";
  slow.join();
  clReleaseMemObject(made);
  clReleaseProgram(building);
  expect_runtime_session_works(*cluster, 64);
}

// A buffer made from host memory copies it inside clCreateBuffer, seconds on NVIDIA for GiBs: a
// large one is made off the loop, so that the daemon's heartbeats go on. The shim makes the create
// take 3 s, and this client gives a daemon up after 2 s of silence (FEDCL_DAEMON_TIMEOUT): made on the
// loop, the buffer would cost the session.
class OffLoopHeard : public OffLoop {
 protected:
  void SetUp() override {
    setenv("FEDCL_DAEMON_TIMEOUT", "2", 1);
    OffLoop::SetUp();
  }
  void TearDown() override {
    OffLoop::TearDown();
    unsetenv("FEDCL_DAEMON_TIMEOUT");
  }
};

TEST_F(OffLoopHeard, ABufferFromLargeHostMemoryLeavesTheDaemonHeard) {
  std::vector<cl_int> values((32 << 20) / sizeof(cl_int));
  for (size_t i = 0; i < values.size(); i++) values[i] = cl_int(i * 7);
  slow_driver(3);
  cl_mem made = create_buffer(context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, values.size() * sizeof(cl_int),
                              values.data());
  // The kernel's request waits for the buffer, and the read for the kernel.
  EXPECT_EQ(9, store_and_read(made, 9));
  EXPECT_TRUE(slow_call_ended());
  cl_int last = 0;
  ASSERT_CL_OK(clEnqueueReadBuffer(queue, made, CL_TRUE, (values.size() - 1) * sizeof(cl_int), sizeof last, &last, 0,
                                   nullptr, nullptr));
  EXPECT_EQ(values.back(), last);
  clReleaseMemObject(made);
  std::remove((dir_ + "/slow").c_str());  // the check's small buffers are made on the loop
  expect_runtime_session_works(*cluster, 64);
}

TEST_F(OffLoopHeard, AnImageFromLargeHostMemoryLeavesTheDaemonHeard) {
  const size_t side = 2048;  // RGBA floats: 64 MiB
  std::vector<cl_float> texels(side * side * 4);
  for (size_t i = 0; i < texels.size(); i++) texels[i] = cl_float(i % 1000);
  cl_image_format format{CL_RGBA, CL_FLOAT};
  cl_image_desc desc{};
  desc.image_type = CL_MEM_OBJECT_IMAGE2D;
  desc.image_width = desc.image_height = side;
  slow_driver(3);
  cl_int err = CL_SUCCESS;
  cl_mem image = clCreateImage(context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, &format, &desc, texels.data(), &err);
  ASSERT_CL_OK(err);
  const size_t origin[3] = {side - 1, side - 1, 0}, region[3] = {1, 1, 1};
  cl_float last[4] = {};
  ASSERT_CL_OK(clEnqueueReadImage(queue, image, CL_TRUE, origin, region, 0, 0, last, 0, nullptr, nullptr));
  EXPECT_TRUE(slow_call_ended());
  for (int c = 0; c < 4; c++) EXPECT_EQ(texels[texels.size() - 4 + c], last[c]) << "channel " << c;
  clReleaseMemObject(image);
  std::remove((dir_ + "/slow").c_str());
  expect_runtime_session_works(*cluster, 64);
}

using WrittenContents = ShimmedDeviceFixture;
using LoopStall = ShimmedDeviceFixture;

// On a backend that uploads a buffer's host copy late, inside the first command that uses it (NVIDIA;
// fedcld --write-buffer-contents, its default there), a buffer made from 16 MiB or more of host memory
// is made empty and fedcld writes the contents, 64 MiB at a time. The shim refuses to make a buffer
// over 16 MiB from host memory: without the option, the buffer could not be made.
TEST_F(WrittenContents, ABufferFromLargeHostMemoryIsMadeEmptyThenWritten) {
  ASSERT_NO_FATAL_FAILURE(start(FEDCL_REFUSING_BACKEND_PATH,
                                {{"FEDCL_TEST_REFUSE_HOST_COPIES_OVER", std::to_string(16 * MiB)}},
                                {"--write-buffer-contents", "yes"}));
  std::vector<cl_uint> words((130 * MiB + 8) / sizeof(cl_uint));  // three pieces, the last a short one
  for (size_t i = 0; i < words.size(); i++) words[i] = cl_uint(i) * 2654435761u + 5;
  cl_mem made = create_buffer(context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, words.size() * sizeof(cl_uint),
                              words.data());
  std::vector<cl_uint> read(words.size());
  ASSERT_CL_OK(clEnqueueReadBuffer(queue, made, CL_TRUE, 0, read.size() * sizeof(cl_uint), read.data(), 0, nullptr,
                                   nullptr));
  EXPECT_TRUE(read == words) << "the contents differ";
  clReleaseMemObject(made);
}

// A driver call that holds a worker's loop (a small buffer from host memory is made on the loop; the
// shim makes it take 4 s) is reported by the main process once the loop stood still for 3 s, and,
// at --log-level debug, the worker writes where its loop stands: the call, and a backtrace. The call
// goes on after the report's signal, and the session with it.
TEST_F(LoopStall, AWorkerWhoseLoopStandsStillSaysWhere) {
  std::string pattern = ::testing::TempDir() + "fedcl-stall-XXXXXX";
  ASSERT_NE(nullptr, mkdtemp(pattern.data()));
  const std::string dir = pattern;
  StderrCapture capture;  // before the daemon starts: it writes to this process's stderr
  ASSERT_NO_FATAL_FAILURE(start(FEDCL_REFUSING_BACKEND_PATH, {{"FEDCL_TEST_SLOW_CALLS", dir}}, {"--log-level", "debug"}));
  std::ofstream(dir + "/slow") << 4 << '\n';
  const cl_int value = 41;
  cl_mem made = create_buffer(context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof value, const_cast<cl_int *>(&value));
  cl_int read = 0;
  EXPECT_CL(CL_SUCCESS, clEnqueueReadBuffer(queue, made, CL_TRUE, 0, sizeof read, &read, 0, nullptr, nullptr));
  EXPECT_EQ(value, read);
  std::remove((dir + "/slow").c_str());
  EXPECT_EQ("clCreateBuffer\n", read_file(dir + "/ended"));
  clReleaseMemObject(made);
  std::string text = capture.text();
  EXPECT_NE(std::string::npos, text.find("its loop has stood still for")) << text;
  EXPECT_NE(std::string::npos, text.find("its loop stands still in clCreateBuffer; backtrace:")) << text;
  std::remove((dir + "/ended").c_str());
  rmdir(dir.c_str());
}

}  // namespace
