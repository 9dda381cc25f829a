// Coherence by byte range: between daemons, only the bytes a command needs and another daemon
// wrote move. The daemons' own traffic counters (`fedcl status --json`, each peer link's
// bytes_sent) show what moved; the results are checked against the host.
#include <unistd.h>

#include <numeric>
#include <regex>
#include <thread>

#include "cl_harness.h"
#include "daemon_status.h"

using namespace fedcl_test;

namespace {

// Bytes sent over all peer links of all the cluster's daemons (FEDCL_HOSTS), as published.
uint64_t link_bytes_now() {
  std::string out = status_json();
  uint64_t total = 0;
  std::regex link("\"up\": (true|false), \"bytes_sent\": ([0-9]+)");
  for (std::sregex_iterator it(out.begin(), out.end(), link), end; it != end; ++it) total += std::stoull((*it)[2]);
  return total;
}

// The link bytes, once at least `least` have been published (the workers publish every second)
// and a second more has passed, so that nothing sent is missing.
uint64_t link_bytes(uint64_t least) {
  for (int attempt = 0; attempt < 30 && link_bytes_now() < least; attempt++)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  return link_bytes_now();
}

// The frames and handshakes around a transfer's payload: a few hundred bytes per message.
constexpr uint64_t kOverhead = 16 * KiB;

struct RangeCoherence : ::testing::Test {
  explicit RangeCoherence(size_t daemons = 2, const std::vector<std::string> &daemon_args = {})
      : cluster(daemons, daemon_args) {}
  Cluster cluster;
  cl_context context = nullptr;
  std::vector<cl_command_queue> queues;

  void SetUp() override {
    cl_int err;
    context = clCreateContext(nullptr, cluster.devices.size(), cluster.devices.data(), nullptr, nullptr, &err);
    ASSERT_CL_OK(err);
    for (cl_device_id device : cluster.devices) queues.push_back(create_queue(context, device));
  }

  cl_mem sub_buffer(cl_mem parent, size_t origin, size_t size, cl_mem_flags flags = 0) {
    cl_buffer_region region{origin, size};
    cl_int err;
    cl_mem sub = clCreateSubBuffer(parent, flags, CL_BUFFER_CREATE_TYPE_REGION, &region, &err);
    EXPECT_CL(CL_SUCCESS, err);
    return sub;
  }

  std::vector<uint32_t> read_all(int d, cl_mem mem, size_t count) {
    std::vector<uint32_t> out(count);
    EXPECT_CL(CL_SUCCESS, clEnqueueReadBuffer(queues[d], mem, CL_TRUE, 0, count * 4, out.data(), 0, nullptr, nullptr));
    return out;
  }
};

const char kIncrement[] = "kernel void increment(global uint *x) { x[get_global_id(0)] += 1; }";

TEST_F(RangeCoherence, AKernelOnASubBufferBringsThatSubBufferOnly) {
  const size_t count = 1 << 20, half = count / 2;  // 4 MiB, two halves
  std::vector<uint32_t> data(count);
  std::iota(data.begin(), data.end(), 0u);
  cl_mem parent = create_buffer(context, CL_MEM_READ_WRITE, count * 4);
  ASSERT_CL_OK(clEnqueueWriteBuffer(queues[0], parent, CL_TRUE, 0, count * 4, data.data(), 0, nullptr, nullptr));
  cl_mem upper = sub_buffer(parent, half * 4, half * 4);
  cl_kernel increment = create_kernel(build_program(context, kIncrement), "increment");
  set_arg(increment, 0, upper);
  ASSERT_CL_OK(clEnqueueNDRangeKernel(queues[1], increment, 1, nullptr, &half, nullptr, 0, nullptr, nullptr));
  // Back on the first daemon, only the upper half comes home.
  std::vector<uint32_t> out = read_all(0, parent, count);
  for (size_t i = half; i < count; i++) data[i] += 1;
  EXPECT_TRUE(out == data);
  uint64_t moved = link_bytes(2 * half * 4);
  EXPECT_GE(moved, 2 * half * 4);
  EXPECT_LE(moved, 2 * half * 4 + kOverhead) << "a whole-buffer scheme moves " << 2 * count * 4;
  clReleaseKernel(increment);
  clReleaseMemObject(upper);
  clReleaseMemObject(parent);
}

TEST_F(RangeCoherence, AHostWriteMakesOnlyItsRangeStaleElsewhere) {
  const size_t count = 1 << 20;
  std::vector<uint32_t> data(count, 7);
  cl_mem mem = create_buffer(context, CL_MEM_READ_WRITE, count * 4);
  ASSERT_CL_OK(clEnqueueWriteBuffer(queues[0], mem, CL_TRUE, 0, count * 4, data.data(), 0, nullptr, nullptr));
  // A 4 KiB patch through the second daemon: it needs nothing of what the first one holds.
  std::vector<uint32_t> patch(1024, 9);
  const size_t at = 1000 * 4;
  ASSERT_CL_OK(clEnqueueWriteBuffer(queues[1], mem, CL_TRUE, at, patch.size() * 4, patch.data(), 0, nullptr, nullptr));
  std::copy(patch.begin(), patch.end(), data.begin() + at / 4);
  EXPECT_TRUE(read_all(0, mem, count) == data);
  // The second daemon reads a range the first one alone holds, and one that is its own.
  std::vector<uint32_t> part(2048);
  ASSERT_CL_OK(clEnqueueReadBuffer(queues[1], mem, CL_TRUE, 8192 * 4, part.size() * 4, part.data(), 0, nullptr, nullptr));
  EXPECT_TRUE(std::equal(part.begin(), part.end(), data.begin() + 8192));
  ASSERT_CL_OK(clEnqueueReadBuffer(queues[1], mem, CL_TRUE, at, patch.size() * 4, part.data(), 0, nullptr, nullptr));
  EXPECT_TRUE(std::equal(patch.begin(), patch.end(), part.begin()));
  uint64_t moved = link_bytes((patch.size() + part.size()) * 4);
  EXPECT_GE(moved, (patch.size() + part.size()) * 4);
  EXPECT_LE(moved, (patch.size() + part.size()) * 4 + kOverhead);
  clReleaseMemObject(mem);
}

TEST_F(RangeCoherence, OverwrittenBytesNeverMove) {
  const size_t count = 1 << 20;
  std::vector<uint32_t> data(count, 5);
  cl_mem filled = create_buffer(context, CL_MEM_READ_WRITE, count * 4);
  cl_mem output = create_buffer(context, CL_MEM_WRITE_ONLY, count * 4);
  cl_mem dropped = create_buffer(context, CL_MEM_READ_WRITE, count * 4);
  for (cl_mem mem : {filled, output, dropped})
    ASSERT_CL_OK(clEnqueueWriteBuffer(queues[0], mem, CL_TRUE, 0, count * 4, data.data(), 0, nullptr, nullptr));
  // On the second daemon: a fill of everything, a kernel that writes a write-only buffer, and a
  // migration that asks for no contents.
  const uint32_t pattern = 3;
  ASSERT_CL_OK(clEnqueueFillBuffer(queues[1], filled, &pattern, sizeof pattern, 0, count * 4, 0, nullptr, nullptr));
  cl_kernel store = create_kernel(
      build_program(context, "kernel void store(global uint *x) { x[get_global_id(0)] = get_global_id(0); }"), "store");
  set_arg(store, 0, output);
  ASSERT_CL_OK(clEnqueueNDRangeKernel(queues[1], store, 1, nullptr, &count, nullptr, 0, nullptr, nullptr));
  ASSERT_CL_OK(clEnqueueMigrateMemObjects(queues[1], 1, &dropped, CL_MIGRATE_MEM_OBJECT_CONTENT_UNDEFINED, 0, nullptr,
                                          nullptr));
  ASSERT_CL_OK(clFinish(queues[1]));
  EXPECT_LE(link_bytes(0), kOverhead);
  // The results are where they were made.
  for (uint32_t value : read_all(1, filled, count)) ASSERT_EQ(pattern, value);
  std::vector<uint32_t> out = read_all(1, output, count);
  for (size_t i = 0; i < count; i++) ASSERT_EQ(i, out[i]);
  clReleaseKernel(store);
  for (cl_mem mem : {filled, output, dropped}) clReleaseMemObject(mem);
}

// A 1D stencil split the way users split grids: two parent buffers (read one, write the other,
// then swap), each daemon reads a sub-buffer of its slab plus a halo on each side and writes its
// slab's sub-buffer; events between neighbours only, and no explicit transfer.
struct ThreeDaemonStencil : RangeCoherence {
  explicit ThreeDaemonStencil(const std::vector<std::string> &daemon_args = {}) : RangeCoherence(3, daemon_args) {}
  static constexpr size_t kSlab = 64 * 1024, kHalo = 1024, kCount = 3 * kSlab;  // in elements

  static constexpr const char *kSource = R"(
    kernel void smooth(global const uint *in, global uint *out, uint lead, uint first, uint count) {
      uint i = get_global_id(0), g = first + i;
      uint left = g == 0 ? in[lead + i] : in[lead + i - 1];
      uint right = g == count - 1 ? in[lead + i] : in[lead + i + 1];
      out[i] = left * 3u + in[lead + i] * 5u + right * 7u;
    })";

  static void host_step(const std::vector<uint32_t> &in, std::vector<uint32_t> &out) {
    for (size_t g = 0; g < kCount; g++) {
      uint32_t left = g == 0 ? in[g] : in[g - 1], right = g == kCount - 1 ? in[g] : in[g + 1];
      out[g] = left * 3u + in[g] * 5u + right * 7u;
    }
  }

  // Ten iterations: the host's result, and only the halos between the daemons after the first.
  void run_and_check();
};

void ThreeDaemonStencil::run_and_check() {
  ASSERT_EQ(3u, cluster.devices.size());
  std::vector<uint32_t> grid(kCount);
  for (size_t i = 0; i < kCount; i++) grid[i] = uint32_t(i * 2654435761u);
  cl_mem parents[2] = {create_buffer(context, CL_MEM_READ_WRITE, kCount * 4),
                       create_buffer(context, CL_MEM_READ_WRITE, kCount * 4)};
  ASSERT_CL_OK(clEnqueueWriteBuffer(queues[0], parents[0], CL_TRUE, 0, kCount * 4, grid.data(), 0, nullptr, nullptr));
  cl_program program = build_program(context, kSource);
  // kernels[d][p]: daemon d's step reading parent p and writing the other.
  cl_kernel kernels[3][2];
  std::vector<cl_mem> subs;
  for (uint32_t d = 0; d < 3; d++) {
    size_t first = d * kSlab, begin = d == 0 ? first : first - kHalo, end = d == 2 ? kCount : first + kSlab + kHalo;
    for (int p = 0; p < 2; p++) {
      subs.push_back(sub_buffer(parents[p], begin * 4, (end - begin) * 4));
      cl_mem in = subs.back();
      subs.push_back(sub_buffer(parents[1 - p], first * 4, kSlab * 4));
      cl_mem out = subs.back();
      kernels[d][p] = create_kernel(program, "smooth");
      set_arg(kernels[d][p], 0, in);
      set_arg(kernels[d][p], 1, out);
      set_arg(kernels[d][p], 2, uint32_t(first - begin));
      set_arg(kernels[d][p], 3, uint32_t(first));
      set_arg(kernels[d][p], 4, uint32_t(kCount));
    }
  }
  cl_event done[3] = {};
  auto iterate = [&](int iteration) {
    cl_event next[3];
    for (int d = 0; d < 3; d++) {
      std::vector<cl_event> after;
      for (int n = d - 1; n <= d + 1; n++)
        if (n >= 0 && n < 3 && done[n]) after.push_back(done[n]);
      ASSERT_CL_OK(clEnqueueNDRangeKernel(queues[d], kernels[d][iteration % 2], 1, nullptr, &kSlab, nullptr,
                                          after.size(), after.empty() ? nullptr : after.data(), &next[d]));
    }
    for (int d = 0; d < 3; d++) {
      if (done[d]) clReleaseEvent(done[d]);
      done[d] = next[d];
    }
    for (cl_command_queue queue : queues) clFlush(queue);
  };
  std::vector<uint32_t> scratch(kCount);
  const int iterations = 10;
  iterate(0);
  ASSERT_CL_OK(clWaitForEvents(3, done));
  // The second and third daemons' slabs with their halos.
  uint64_t first_iteration = link_bytes((2 * kSlab + 3 * kHalo) * 4);
  for (int i = 1; i < iterations; i++) iterate(i);
  ASSERT_CL_OK(clWaitForEvents(3, done));
  // Per iteration, each of the two inner boundaries sends a halo each way.
  const uint64_t halo_bytes = (iterations - 1) * 4 * kHalo * 4;
  uint64_t halos = link_bytes(first_iteration + halo_bytes) - first_iteration;
  EXPECT_GE(halos, halo_bytes);
  EXPECT_LE(halos, halo_bytes + kOverhead) << "a whole-buffer scheme moves about " << (iterations - 1) * 4 * kCount * 4;

  for (int i = 0; i < iterations; i++) {
    host_step(grid, scratch);
    grid.swap(scratch);
  }
  EXPECT_TRUE(read_all(0, parents[iterations % 2], kCount) == grid);
  for (cl_event event : done) clReleaseEvent(event);
  for (auto &pair : kernels)
    for (cl_kernel kernel : pair) clReleaseKernel(kernel);
  for (cl_mem sub : subs) clReleaseMemObject(sub);
  for (cl_mem parent : parents) clReleaseMemObject(parent);
  clReleaseProgram(program);
}

TEST_F(ThreeDaemonStencil, MovesOnlyTheHalosBetweenIterations) { run_and_check(); }

// The same through daemons that copy parts of buffers through their own memory rather than map
// them, as they do on NVIDIA (fedcld --stage-buffer-ranges).
struct StagedThreeDaemonStencil : ThreeDaemonStencil {
  StagedThreeDaemonStencil() : ThreeDaemonStencil({"--stage-buffer-ranges", "yes"}) {}
};

TEST_F(StagedThreeDaemonStencil, MovesOnlyTheHalosBetweenIterations) { run_and_check(); }

}  // namespace

// Sizes and offsets of any byte count move whole between daemons: the bytes past the last 8-byte
// word of a chunk too (a receive that copied whole 4-byte elements only lost them).
TEST_F(RangeCoherence, OddSizedRangesMoveWhole) {
  const size_t size = 3 * 1024 * 1024 + 5;
  std::vector<uint8_t> data(size);
  for (size_t i = 0; i < size; i++) data[i] = uint8_t(i * 7 + (i >> 12));
  cl_mem mem = create_buffer(context, CL_MEM_READ_WRITE, size);
  ASSERT_CL_OK(clEnqueueWriteBuffer(queues[0], mem, CL_TRUE, 0, size, data.data(), 0, nullptr, nullptr));
  std::vector<uint8_t> out(size);
  ASSERT_CL_OK(clEnqueueReadBuffer(queues[1], mem, CL_TRUE, 0, size, out.data(), 0, nullptr, nullptr));
  EXPECT_TRUE(out == data);
  // A patch of an odd length at an odd offset, written on the second daemon, read on the first.
  const size_t at = 1000003, length = 1048583;
  for (size_t i = 0; i < length; i++) data[at + i] = uint8_t(255 - i % 251);
  ASSERT_CL_OK(clEnqueueWriteBuffer(queues[1], mem, CL_TRUE, at, length, data.data() + at, 0, nullptr, nullptr));
  ASSERT_CL_OK(clEnqueueReadBuffer(queues[0], mem, CL_TRUE, 0, size, out.data(), 0, nullptr, nullptr));
  EXPECT_TRUE(out == data);
  clReleaseMemObject(mem);
}

// Two queues of one daemon write two halves of a buffer: a slow kernel the first half, then a quick
// one the second. A kernel on the other daemon then reads the first half, which must move only
// after the slow kernel wrote it, although the quick one, enqueued later, finished first. When only
// a daemon's last writer was waited for, the copy took the first half before the slow kernel's
// values (seen as a stale halo in realprog_subbuffer_stencil_slabs, 1 run in 10 to 40).
TEST_F(RangeCoherence, ACopyWaitsForEveryWriterOfItsBytesOnTheSourceDaemon) {
  const size_t count = 1 << 16, half = count / 2;
  cl_command_queue second = create_queue(context, cluster.devices[0]);
  cl_program program = build_program(context,
      "kernel void slow_store(global uint *x, uint v, uint spins) {\n"
      "  uint acc = v;\n"
      "  for (uint i = 0; i < spins; i++) acc = acc * 1664525u + 1013904223u;\n"
      "  x[get_global_id(0)] = v + (acc == 0xdeadbeefu);  /* keeps the loop: v, as the host finds */\n"
      "}\n"
      "kernel void add_one(global uint *x) { x[get_global_id(0)] += 1; }\n");
  cl_kernel slow = create_kernel(program, "slow_store"), add = create_kernel(program, "add_one");
  cl_mem parent = create_buffer(context, CL_MEM_READ_WRITE, count * 4);
  std::vector<uint32_t> zeros(count, 0);
  ASSERT_CL_OK(clEnqueueWriteBuffer(queues[0], parent, CL_TRUE, 0, count * 4, zeros.data(), 0, nullptr, nullptr));
  cl_mem first = sub_buffer(parent, 0, half * 4), last = sub_buffer(parent, half * 4, half * 4);

  set_arg(slow, 0, first);
  set_arg(slow, 1, cl_uint(7));
  set_arg(slow, 2, cl_uint(20000));  // about 10^9 steps in all: a second or so on a CPU device
  ASSERT_CL_OK(clEnqueueNDRangeKernel(queues[0], slow, 1, nullptr, &half, nullptr, 0, nullptr, nullptr));
  ASSERT_CL_OK(clFlush(queues[0]));
  set_arg(add, 0, last);
  ASSERT_CL_OK(clEnqueueNDRangeKernel(second, add, 1, nullptr, &half, nullptr, 0, nullptr, nullptr));
  ASSERT_CL_OK(clFinish(second));  // the quick writer is done; the slow one most likely is not

  cl_kernel add_there = create_kernel(program, "add_one");
  set_arg(add_there, 0, first);
  ASSERT_CL_OK(clEnqueueNDRangeKernel(queues[1], add_there, 1, nullptr, &half, nullptr, 0, nullptr, nullptr));
  std::vector<uint32_t> got = read_all(1, first, half);
  uint32_t acc = 7;
  for (int i = 0; i < 20000; i++) acc = acc * 1664525u + 1013904223u;
  EXPECT_EQ(std::vector<uint32_t>(half, 7u + (acc == 0xdeadbeefu) + 1u), got) << "daemon 1 added to bytes copied before the slow kernel wrote them";

  clReleaseMemObject(first);
  clReleaseMemObject(last);
  clReleaseMemObject(parent);
  clReleaseKernel(slow);
  clReleaseKernel(add);
  clReleaseKernel(add_there);
  clReleaseProgram(program);
  clReleaseCommandQueue(second);
}

// A kernel, a copy or a fill of a context over two daemons carries an event for the coherence layer
// alone (a later copy of what it wrote waits for it). The daemon neither watches it nor reports its
// completion, and the client lets each go once the next command on its queue covers its bytes:
// thousands of commands without a wait cost the daemon no notices and leave it holding no event per
// command.
TEST_F(RangeCoherence, CommandsLeaveTheDaemonNoEventToReportOrKeep) {
  const size_t count = 1024;
  const int rounds = 1000;
  std::vector<uint32_t> zeros(count, 0);
  cl_mem mem = create_buffer(context, CL_MEM_READ_WRITE, count * 4);
  cl_mem copy = create_buffer(context, CL_MEM_READ_WRITE, count * 4);
  cl_mem filled = create_buffer(context, CL_MEM_READ_WRITE, count * 4);
  ASSERT_CL_OK(clEnqueueWriteBuffer(queues[0], mem, CL_TRUE, 0, count * 4, zeros.data(), 0, nullptr, nullptr));
  cl_kernel increment = create_kernel(build_program(context, kIncrement), "increment");
  set_arg(increment, 0, mem);
  ASSERT_CL_OK(clEnqueueNDRangeKernel(queues[0], increment, 1, nullptr, &count, nullptr, 0, nullptr, nullptr));
  ASSERT_CL_OK(clFinish(queues[0]));
  OwnSessions before = own_sessions_settled();
  ASSERT_EQ(2, before.found) << status_json();

  for (cl_uint i = 0; i < rounds; i++) {
    ASSERT_CL_OK(clEnqueueNDRangeKernel(queues[0], increment, 1, nullptr, &count, nullptr, 0, nullptr, nullptr));
    ASSERT_CL_OK(clEnqueueCopyBuffer(queues[0], mem, copy, 0, 0, count * 4, 0, nullptr, nullptr));
    ASSERT_CL_OK(clEnqueueFillBuffer(queues[0], filled, &i, sizeof i, 0, count * 4, 0, nullptr, nullptr));
  }
  ASSERT_CL_OK(clFlush(queues[0]));
  OwnSessions during = own_sessions_settled();  // commands queued, most likely some still running
  ASSERT_CL_OK(clFinish(queues[0]));
  OwnSessions after = own_sessions_settled();
  EXPECT_LE(during.objects, before.objects + 8) << "the daemon keeps an event per command";
  // A completion notice takes about 25 bytes: 3000 of them would be some 75 KB.
  EXPECT_LE(after.bytes_sent - before.bytes_sent, 4 * KiB) << "the daemon reported the commands' events";

  // The other daemon's copies wait for the last of each.
  EXPECT_EQ(std::vector<uint32_t>(count, rounds + 1), read_all(1, mem, count));
  EXPECT_EQ(std::vector<uint32_t>(count, rounds + 1), read_all(1, copy, count));
  EXPECT_EQ(std::vector<uint32_t>(count, rounds - 1), read_all(1, filled, count));
  clReleaseKernel(increment);
  clReleaseMemObject(filled);
  clReleaseMemObject(copy);
  clReleaseMemObject(mem);
}
