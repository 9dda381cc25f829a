// One context over two daemons: work on each, and buffers that follow the work between them.
#include <chrono>
#include <numeric>
#include <thread>

#include "cl_harness.h"
#include "daemon_status.h"

using namespace fedcl_test;

namespace {

struct TwoDaemons : ::testing::Test {
  Cluster cluster{2};
  cl_context context = nullptr;
  cl_command_queue queue[2] = {};
  cl_program program = nullptr;
  static constexpr size_t n = 8192;

  void SetUp() override {
    ASSERT_EQ(2u, cluster.devices.size());
    EXPECT_NE(std::string::npos, device_string(cluster.devices[0], CL_DEVICE_NAME).find(" @ node0"));
    EXPECT_NE(std::string::npos, device_string(cluster.devices[1], CL_DEVICE_NAME).find(" @ node1"));
    cl_int err;
    context = clCreateContext(nullptr, 2, cluster.devices.data(), nullptr, nullptr, &err);
    ASSERT_CL_OK(err);
    for (int d = 0; d < 2; d++) queue[d] = create_queue(context, cluster.devices[d]);
    program = build_program(context, kScaleSource);
  }

  // scale(mem, value) or offset(mem, value), arguments set.
  cl_kernel bound(const char *name, cl_mem mem, int value) {
    cl_kernel kernel = create_kernel(program, name);
    EXPECT_CL(CL_SUCCESS, clSetKernelArg(kernel, 0, sizeof mem, &mem));
    EXPECT_CL(CL_SUCCESS, clSetKernelArg(kernel, 1, sizeof value, &value));
    return kernel;
  }

  // A user event of the context, not set yet.
  cl_event gate() {
    cl_int err;
    cl_event event = clCreateUserEvent(context, &err);
    EXPECT_CL(CL_SUCCESS, err);
    return event;
  }

  void run(int d, const char *name, cl_mem mem, int value) {
    cl_kernel kernel = bound(name, mem, value);
    const size_t global = n;
    ASSERT_CL_OK(clEnqueueNDRangeKernel(queue[d], kernel, 1, nullptr, &global, nullptr, 0, nullptr, nullptr));
    clReleaseKernel(kernel);
  }

  std::vector<int> read(int d, cl_mem mem) {
    std::vector<int> out(n, -1);
    EXPECT_CL(CL_SUCCESS, clEnqueueReadBuffer(queue[d], mem, CL_TRUE, 0, n * sizeof(int), out.data(), 0, nullptr, nullptr));
    return out;
  }
};

}  // namespace

TEST_F(TwoDaemons, ContextSpansBothDevices) {
  cl_uint count = 0;
  ASSERT_CL_OK(clGetContextInfo(context, CL_CONTEXT_NUM_DEVICES, sizeof count, &count, nullptr));
  EXPECT_EQ(2u, count);
  for (cl_device_id device : cluster.devices) {
    cl_build_status status = CL_BUILD_NONE;
    ASSERT_CL_OK(clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_STATUS, sizeof status, &status, nullptr));
    EXPECT_EQ(CL_BUILD_SUCCESS, status);
  }
}

TEST_F(TwoDaemons, KernelOnEachDevice) {
  std::vector<int> data(n);
  std::iota(data.begin(), data.end(), 1);
  cl_mem mem[2];
  for (int d = 0; d < 2; d++) {
    mem[d] = create_buffer(context, CL_MEM_READ_WRITE, n * sizeof(int));
    ASSERT_CL_OK(clEnqueueWriteBuffer(queue[d], mem[d], CL_FALSE, 0, n * sizeof(int), data.data(), 0, nullptr, nullptr));
    run(d, "scale", mem[d], d + 2);
  }
  for (int d = 0; d < 2; d++) ASSERT_CL_OK(clFlush(queue[d]));
  for (int d = 0; d < 2; d++) {
    std::vector<int> out = read(d, mem[d]);
    for (size_t i = 0; i < n; i++) ASSERT_EQ(data[i] * (d + 2), out[i]) << "device " << d << " index " << i;
  }
  for (int d = 0; d < 2; d++) ASSERT_CL_OK(clFinish(queue[d]));
}

TEST_F(TwoDaemons, BufferWrittenOnOneDaemonIsUsedOnTheOther) {
  std::vector<int> data(n);
  std::iota(data.begin(), data.end(), -50);
  cl_mem mem = create_buffer(context, CL_MEM_READ_WRITE, n * sizeof(int));
  // Written through daemon 0, scaled there, then offset on daemon 1, read back on daemon 0.
  ASSERT_CL_OK(clEnqueueWriteBuffer(queue[0], mem, CL_FALSE, 0, n * sizeof(int), data.data(), 0, nullptr, nullptr));
  run(0, "scale", mem, 3);
  run(1, "offset", mem, 7);
  std::vector<int> on_one = read(1, mem);
  for (size_t i = 0; i < n; i++) ASSERT_EQ(3 * data[i] + 7, on_one[i]) << "read on daemon 1 at " << i;
  std::vector<int> on_zero = read(0, mem);
  for (size_t i = 0; i < n; i++) ASSERT_EQ(3 * data[i] + 7, on_zero[i]) << "read on daemon 0 at " << i;
}

TEST_F(TwoDaemons, CopyHostPtrBufferIsReadOnTheSecondDaemon) {
  std::vector<int> data(n);
  std::iota(data.begin(), data.end(), 1000);
  cl_mem mem = create_buffer(context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, n * sizeof(int), data.data());
  EXPECT_TRUE(read(1, mem) == data);
  run(1, "scale", mem, -1);
  std::vector<int> out = read(0, mem);
  for (size_t i = 0; i < n; i++) ASSERT_EQ(-data[i], out[i]) << "at " << i;
}

TEST_F(TwoDaemons, EventOfOneDaemonOrdersACommandOnTheOther) {
  std::vector<int> ones(n, 1);
  cl_mem mem = create_buffer(context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, n * sizeof(int), ones.data());
  cl_event gate = this->gate();
  cl_kernel scale = bound("scale", mem, 10);
  const size_t global = n;
  cl_event scaled;
  ASSERT_CL_OK(clEnqueueNDRangeKernel(queue[0], scale, 1, nullptr, &global, nullptr, 1, &gate, &scaled));
  ASSERT_CL_OK(clFlush(queue[0]));
  // The marker on daemon 1 waits for daemon 0's kernel; only then is the buffer read there.
  cl_event after;
  ASSERT_CL_OK(clEnqueueMarkerWithWaitList(queue[1], 1, &scaled, &after));
  ASSERT_CL_OK(clFlush(queue[1]));
  cl_int status = 0;
  ASSERT_CL_OK(clGetEventInfo(after, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr));
  EXPECT_GT(status, CL_COMPLETE);
  ASSERT_CL_OK(clSetUserEventStatus(gate, CL_COMPLETE));
  ASSERT_CL_OK(clWaitForEvents(1, &after));
  for (int value : read(1, mem)) ASSERT_EQ(10, value);
}

// The application may let go of an event as soon as it has enqueued what waits for it (PyOpenCL does):
// the other daemon's stand-in must still get its status.
TEST_F(TwoDaemons, EventReleasedBeforeItCompletesStillReleasesTheOtherDaemon) {
  std::vector<int> ones(n, 1);
  cl_mem mem = create_buffer(context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, n * sizeof(int), ones.data());
  cl_event gate = this->gate();
  cl_kernel scale = bound("scale", mem, 5);
  cl_kernel offset = bound("offset", mem, 2);
  const size_t global = n;
  cl_event scaled;
  ASSERT_CL_OK(clEnqueueNDRangeKernel(queue[0], scale, 1, nullptr, &global, nullptr, 1, &gate, &scaled));
  ASSERT_CL_OK(clEnqueueNDRangeKernel(queue[1], offset, 1, nullptr, &global, nullptr, 1, &scaled, nullptr));
  ASSERT_CL_OK(clReleaseEvent(scaled));
  ASSERT_CL_OK(clSetUserEventStatus(gate, CL_COMPLETE));
  ASSERT_CL_OK(clFinish(queue[1]));
  for (int value : read(1, mem)) ASSERT_EQ(7, value);
}

// A buffer handed back and forth between kernels on the two daemons, each waiting only for the
// other's event: every hand-over is a migration the daemons carry out, ordered by events alone.
TEST_F(TwoDaemons, BufferHandedBackAndForthByEventsAlone) {
  std::vector<int> data(n);
  std::iota(data.begin(), data.end(), 0);
  cl_mem mem = create_buffer(context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, n * sizeof(int), data.data());
  cl_kernel kernels[2] = {bound("scale", mem, 3), bound("offset", mem, -1)};
  const size_t global = n;
  cl_event last = nullptr;
  for (int round = 0; round < 20; round++) {
    int d = round % 2;
    cl_event next;
    ASSERT_CL_OK(clEnqueueNDRangeKernel(queue[d], kernels[d], 1, nullptr, &global, nullptr, last ? 1 : 0,
                                        last ? &last : nullptr, &next));
    if (last) clReleaseEvent(last);
    last = next;
    for (int &value : data) value = d == 0 ? value * 3 : value - 1;
  }
  std::vector<int> out(n);
  ASSERT_CL_OK(clEnqueueReadBuffer(queue[0], mem, CL_TRUE, 0, n * sizeof(int), out.data(), 1, &last, nullptr));
  clReleaseEvent(last);
  EXPECT_TRUE(out == data);
}

TEST_F(TwoDaemons, MigrateMemObjectsBringsTheContentsAhead) {
  std::vector<int> data(n);
  std::iota(data.begin(), data.end(), 7);
  cl_mem mem = create_buffer(context, CL_MEM_READ_WRITE, n * sizeof(int));
  ASSERT_CL_OK(clEnqueueWriteBuffer(queue[0], mem, CL_TRUE, 0, n * sizeof(int), data.data(), 0, nullptr, nullptr));
  cl_event moved;
  ASSERT_CL_OK(clEnqueueMigrateMemObjects(queue[1], 1, &mem, 0, 0, nullptr, &moved));
  ASSERT_CL_OK(clWaitForEvents(1, &moved));
  clReleaseEvent(moved);
  EXPECT_TRUE(read(1, mem) == data);
  // Undefined contents move nothing; a kernel that rewrites everything leaves the right bytes.
  ASSERT_CL_OK(clEnqueueMigrateMemObjects(queue[0], 1, &mem, CL_MIGRATE_MEM_OBJECT_CONTENT_UNDEFINED, 0, nullptr, nullptr));
  cl_kernel fill = create_kernel(build_program(context, "kernel void fill(global int *x) { x[get_global_id(0)] = 42; }"), "fill");
  set_arg(fill, 0, mem);
  const size_t global = n;
  ASSERT_CL_OK(clEnqueueNDRangeKernel(queue[0], fill, 1, nullptr, &global, nullptr, 0, nullptr, nullptr));
  for (int value : read(1, mem)) ASSERT_EQ(42, value);
}

// Two buffers cross between the daemons in opposite directions while the first one's data is held
// up (its last writer waits for a user event): the second must arrive all the same. On an in-order
// transfer queue, the held receive kept every later transfer of that daemon waiting, the other
// buffer's send among them; two daemons exchanging buffers could so wait for each other for ever
// (the hang tests/stress found).
TEST_F(TwoDaemons, AMigrationWaitingForItsDataHoldsUpNoOtherBuffersMigration) {
  std::vector<int> ones(n, 1), twos(n, 2);
  cl_mem held_back = create_buffer(context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, n * sizeof(int), ones.data());
  cl_mem free_to_go = create_buffer(context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, n * sizeof(int), twos.data());
  cl_event gate = this->gate();
  cl_kernel scale = bound("scale", held_back, 3);
  const size_t global = n;
  ASSERT_CL_OK(clEnqueueNDRangeKernel(queue[0], scale, 1, nullptr, &global, nullptr, 1, &gate, nullptr));
  run(1, "scale", free_to_go, 5);
  ASSERT_CL_OK(clFinish(queue[1]));
  // Daemon 1 needs held_back: its receive waits for daemon 0's send, which waits for the gate.
  run(1, "offset", held_back, 1);
  ASSERT_CL_OK(clFlush(queue[1]));
  // Daemon 0 needs free_to_go (on a queue of its own: queue[0] waits for the gate).
  cl_command_queue other = create_queue(context, cluster.devices[0]);
  cl_kernel offset = bound("offset", free_to_go, 1);
  cl_event arrived_and_used;
  ASSERT_CL_OK(clEnqueueNDRangeKernel(other, offset, 1, nullptr, &global, nullptr, 0, nullptr, &arrived_and_used));
  ASSERT_CL_OK(clFlush(other));
  cl_int status = CL_QUEUED;
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (status > CL_COMPLETE && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ASSERT_CL_OK(clGetEventInfo(arrived_and_used, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr));
  }
  EXPECT_EQ(CL_COMPLETE, status) << "the second buffer's migration waited for the first one's data";
  ASSERT_CL_OK(clSetUserEventStatus(gate, CL_COMPLETE));
  for (int value : read(1, held_back)) ASSERT_EQ(4, value);
  std::vector<int> out(n, -1);
  ASSERT_CL_OK(clEnqueueReadBuffer(other, free_to_go, CL_TRUE, 0, n * sizeof(int), out.data(), 0, nullptr, nullptr));
  for (int value : out) ASSERT_EQ(11, value);
  clReleaseEvent(arrived_and_used);
  clReleaseEvent(gate);
  clReleaseKernel(offset);
  clReleaseKernel(scale);
  clReleaseCommandQueue(other);
}

// With FEDCL_PEER_LINKS=0 every migration and cross-daemon event goes through this process: the
// fallback for daemons that cannot reach each other stays correct.
TEST(TwoDaemonsWithoutPeerLinks, BuffersAndEventsGoThroughTheClient) {
  setenv("FEDCL_PEER_LINKS", "0", 1);
  Cluster cluster{2};
  cl_int err;
  cl_context context = clCreateContext(nullptr, 2, cluster.devices.data(), nullptr, nullptr, &err);
  ASSERT_CL_OK(err);
  cl_command_queue queue[2] = {create_queue(context, cluster.devices[0]), create_queue(context, cluster.devices[1])};
  cl_program program = build_program(context, kScaleSource);
  const size_t n = 4096;
  std::vector<int> data(n, 2);
  cl_mem mem = create_buffer(context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, n * sizeof(int), data.data());
  cl_kernel scale = create_kernel(program, "scale");
  set_arg(scale, 0, mem);
  set_arg(scale, 1, 4);
  cl_kernel offset = create_kernel(program, "offset");
  set_arg(offset, 0, mem);
  set_arg(offset, 1, 1);
  cl_event scaled;
  ASSERT_CL_OK(clEnqueueNDRangeKernel(queue[0], scale, 1, nullptr, &n, nullptr, 0, nullptr, &scaled));
  ASSERT_CL_OK(clEnqueueNDRangeKernel(queue[1], offset, 1, nullptr, &n, nullptr, 1, &scaled, nullptr));
  clReleaseEvent(scaled);
  std::vector<int> out(n);
  ASSERT_CL_OK(clEnqueueReadBuffer(queue[1], mem, CL_TRUE, 0, n * sizeof(int), out.data(), 0, nullptr, nullptr));
  for (int value : out) ASSERT_EQ(9, value);
}

// Threads whose kernels on the second daemon read one buffer that is current only on the first:
// one copies it through this process (its lock released for the round trips), the others wait for
// that copy instead of copying again or reading a half-copied buffer, and every result is right.
TEST(TwoDaemonsWithoutPeerLinks, ThreadsThatNeedOneBufferOnTheOtherDaemonShareItsCopy) {
  setenv("FEDCL_PEER_LINKS", "0", 1);
  Cluster cluster{2};
  cl_int err;
  cl_context context = clCreateContext(nullptr, 2, cluster.devices.data(), nullptr, nullptr, &err);
  ASSERT_CL_OK(err);
  const size_t n = 1 << 20;
  std::vector<int> data(n, 2);
  cl_mem source = create_buffer(context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, n * sizeof(int), data.data());
  cl_program program = build_program(context, kScaleSource + std::string(R"CLC(
kernel void plus_one(global const int *in, global int *out) { size_t i = get_global_id(0); out[i] = in[i] + 1; }
)CLC"));
  cl_command_queue first = create_queue(context, cluster.devices[0]);
  cl_kernel scale = create_kernel(program, "scale");
  set_arg(scale, 0, source);
  set_arg(scale, 1, 4);
  ASSERT_CL_OK(clEnqueueNDRangeKernel(first, scale, 1, nullptr, &n, nullptr, 0, nullptr, nullptr));
  ASSERT_CL_OK(clFinish(first));  // 8 everywhere, on the first daemon only

  const int threads = 4;
  std::vector<std::vector<int>> results(threads);
  std::vector<cl_int> errors(threads, CL_SUCCESS);
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; t++) {
    workers.emplace_back([&, t] {
      cl_int e = CL_SUCCESS;
      cl_command_queue queue = clCreateCommandQueueWithProperties(context, cluster.devices[1], nullptr, &e);
      cl_mem out = clCreateBuffer(context, CL_MEM_READ_WRITE, n * sizeof(int), nullptr, &e);
      cl_kernel kernel = clCreateKernel(program, "plus_one", &e);
      clSetKernelArg(kernel, 0, sizeof source, &source);
      clSetKernelArg(kernel, 1, sizeof out, &out);
      if (e == CL_SUCCESS) e = clEnqueueNDRangeKernel(queue, kernel, 1, nullptr, &n, nullptr, 0, nullptr, nullptr);
      results[t].resize(n);
      if (e == CL_SUCCESS) e = clEnqueueReadBuffer(queue, out, CL_TRUE, 0, n * sizeof(int), results[t].data(), 0, nullptr, nullptr);
      errors[t] = e;
      clReleaseKernel(kernel);
      clReleaseMemObject(out);
      clReleaseCommandQueue(queue);
    });
  }
  for (auto &worker : workers) worker.join();
  for (int t = 0; t < threads; t++) {
    ASSERT_CL(CL_SUCCESS, errors[t]) << "thread " << t;
    for (size_t i = 0; i < n; i += 4093) ASSERT_EQ(9, results[t][i]) << "thread " << t << ", element " << i;
    ASSERT_EQ(9, results[t][n - 1]) << "thread " << t;
  }
  clReleaseKernel(scale);
  clReleaseCommandQueue(first);
  clReleaseProgram(program);
  clReleaseMemObject(source);
  clReleaseContext(context);
}

namespace {

// Two daemons that publish their request counters (--metrics), a context over both, a queue on each.
struct CarriedData : ::testing::Test {
  Cluster cluster{2, {"--metrics", "127.0.0.1:0"}};
  cl_context context = nullptr;
  cl_command_queue queue[2] = {};
  cl_program program = nullptr;

  void SetUp() override {
    cl_int err;
    context = clCreateContext(nullptr, 2, cluster.devices.data(), nullptr, nullptr, &err);
    ASSERT_CL_OK(err);
    for (int d = 0; d < 2; d++) queue[d] = create_queue(context, cluster.devices[d]);
    program = build_program(context, kScaleSource);
  }
  void TearDown() override {
    clReleaseProgram(program);
    for (cl_command_queue q : queue) clReleaseCommandQueue(q);
    clReleaseContext(context);
  }

  // The requests of kind both daemons ran so far, once at least `at_least` of kind `settled_by` are
  // counted (the workers publish their counters as requests end).
  double requests(const std::string &kind, const std::string &settled_by = "", double at_least = 0) {
    auto total = [&](const std::string &k) {
      double sum = 0;
      for (auto &daemon : cluster.daemons)
        sum += std::max(0.0, metric_sample(scrape_metrics(*daemon), "fedcld_requests_total{kind=\"" + k + "\"}"));
      return sum;
    };
    for (int i = 0; i < 200 && !settled_by.empty() && total(settled_by) < at_least; i++)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    return total(kind);
  }

  // Sixteen ones in a buffer, scale(x, 7) and offset(x, 1) set on it, and a user event that holds
  // back what waits for it (the caller releases the event; release() the rest).
  struct Gated {
    static constexpr size_t kWords = 16;
    cl_mem mem = nullptr;
    cl_kernel scale = nullptr, offset = nullptr;
    cl_event gate = nullptr;
  };
  Gated gated() {
    Gated g;
    std::vector<int> ones(Gated::kWords, 1);
    g.mem = create_buffer(context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, Gated::kWords * sizeof(int), ones.data());
    g.scale = create_kernel(program, "scale");
    g.offset = create_kernel(program, "offset");
    set_arg(g.scale, 0, g.mem);
    set_arg(g.scale, 1, 7);
    set_arg(g.offset, 0, g.mem);
    set_arg(g.offset, 1, 1);
    cl_int err = CL_SUCCESS;
    g.gate = clCreateUserEvent(context, &err);
    EXPECT_CL(CL_SUCCESS, err);
    return g;
  }
  void release(Gated &g) {
    clReleaseKernel(g.scale);
    clReleaseKernel(g.offset);
    clReleaseMemObject(g.mem);
  }

  // A buffer of `words` ints handed back and forth: on daemon 0 each gets +1, on daemon 1 each is
  // doubled, each kernel waiting only for the other's event; checked against the host at the end.
  void hand_back_and_forth(size_t words, int rounds) {
    std::vector<int> data(words);
    std::iota(data.begin(), data.end(), 0);
    cl_mem mem = create_buffer(context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, words * sizeof(int), data.data());
    cl_kernel kernels[2] = {create_kernel(program, "offset"), create_kernel(program, "scale")};
    for (int d = 0; d < 2; d++) {
      set_arg(kernels[d], 0, mem);
      set_arg(kernels[d], 1, d == 0 ? 1 : 2);
    }
    cl_event last = nullptr;
    for (int round = 0; round < rounds; round++) {
      int d = round % 2;
      cl_event next;
      ASSERT_CL_OK(clEnqueueNDRangeKernel(queue[d], kernels[d], 1, nullptr, &words, nullptr, last ? 1 : 0,
                                          last ? &last : nullptr, &next));
      ASSERT_CL_OK(clFlush(queue[d]));
      if (last) clReleaseEvent(last);
      last = next;
      for (int &value : data) value = d == 0 ? value + 1 : value * 2;
    }
    std::vector<int> out(words, -1);
    ASSERT_CL_OK(clEnqueueReadBuffer(queue[rounds % 2], mem, CL_TRUE, 0, words * sizeof(int), out.data(), 1, &last, nullptr));
    EXPECT_CL(CL_SUCCESS, clWaitForEvents(1, &last));
    EXPECT_CL(CL_COMPLETE, command_status(last));
    clReleaseEvent(last);
    EXPECT_TRUE(out == data) << words * sizeof(int) << " bytes handed back and forth " << rounds << " times";
    for (cl_kernel kernel : kernels) clReleaseKernel(kernel);
    clReleaseMemObject(mem);
  }
};

}  // namespace

// Issue 50: the bytes a kernel on one daemon wrote and a kernel on the other reads behind its event
// go with the event's signal, in one message: no transfer of their own (SendToPeer), up to 128 KiB
// (FEDCL_SIGNAL_DATA_MAX's default); larger ones move as transfers.
TEST_F(CarriedData, SmallBuffersTravelWithTheEventTheyWaitBehind) {
  const int rounds = 12;  // each a hand-over
  for (size_t bytes : {size_t(64), size_t(128) << 10}) {
    double signals = requests("signal_peer"), sends = requests("send_to_peer");
    hand_back_and_forth(bytes / sizeof(int), rounds);
    EXPECT_GE(requests("signal_peer", "signal_peer", signals + rounds - 1) - signals, rounds - 1) << bytes;
    EXPECT_EQ(sends, requests("send_to_peer")) << bytes << " bytes moved as transfers of their own";
  }
  double sends = requests("send_to_peer");
  hand_back_and_forth((size_t(128) << 10) / sizeof(int) + 1, rounds);
  EXPECT_GE(requests("send_to_peer", "send_to_peer", sends + rounds - 1) - sends, rounds - 1)
      << "128 KiB + 4 bytes moved with the signals";
}

// Where the event's stand-in was made by an earlier command (a marker that does not read the
// buffer), its signal has gone without the bytes: they come as a transfer, and are right.
TEST_F(CarriedData, BytesWhoseSignalWentAlreadyComeAsATransfer) {
  Gated g = gated();
  const size_t words = Gated::kWords;
  cl_event scaled, marked;
  ASSERT_CL_OK(clEnqueueNDRangeKernel(queue[0], g.scale, 1, nullptr, &words, nullptr, 1, &g.gate, &scaled));
  ASSERT_CL_OK(clEnqueueMarkerWithWaitList(queue[1], 1, &scaled, &marked));
  ASSERT_CL_OK(clFlush(queue[1]));
  double sends = requests("send_to_peer");
  ASSERT_CL_OK(clEnqueueNDRangeKernel(queue[1], g.offset, 1, nullptr, &words, nullptr, 1, &scaled, nullptr));
  ASSERT_CL_OK(clSetUserEventStatus(g.gate, CL_COMPLETE));
  std::vector<int> out(words, -1);
  ASSERT_CL_OK(clEnqueueReadBuffer(queue[1], g.mem, CL_TRUE, 0, words * sizeof(int), out.data(), 0, nullptr, nullptr));
  EXPECT_EQ(std::vector<int>(words, 8), out);
  EXPECT_CL(CL_COMPLETE, command_status(marked));
  EXPECT_GE(requests("send_to_peer", "send_to_peer", sends + 1) - sends, 1);
  for (cl_event event : {g.gate, scaled, marked}) clReleaseEvent(event);
  release(g);
}

// A writer that fails: the bytes it would have sent never come, and the kernel that waits for them
// fails (its event says so) rather than run on the old contents.
TEST_F(CarriedData, AFailedWriterFailsTheReaderOnTheOtherDaemon) {
  Gated g = gated();
  const size_t words = Gated::kWords;
  cl_event scaled, read_back;
  ASSERT_CL_OK(clEnqueueNDRangeKernel(queue[0], g.scale, 1, nullptr, &words, nullptr, 1, &g.gate, &scaled));
  ASSERT_CL_OK(clEnqueueNDRangeKernel(queue[1], g.offset, 1, nullptr, &words, nullptr, 1, &scaled, &read_back));
  ASSERT_CL_OK(clFlush(queue[1]));
  ASSERT_CL_OK(clSetUserEventStatus(g.gate, -1234));
  EXPECT_CL(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST, clWaitForEvents(1, &read_back));
  EXPECT_LT(command_status(read_back), 0);
  EXPECT_CL(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST, clWaitForEvents(1, &scaled));
  EXPECT_LT(command_status(scaled), 0);
  for (cl_event event : {g.gate, scaled, read_back}) clReleaseEvent(event);
  release(g);
}
