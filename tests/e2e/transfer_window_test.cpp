// Transfers larger than the backend's window (fedcld --transfer-window, NVIDIA's default): staged a
// window of chunks at a time on a queue of their own, never mapped. The daemons run with a shim that
// refuses maps of buffers over 4 MiB, as fedcld must not ask NVIDIA for them (its first map pins a
// host copy of the whole buffer): without the window, each test here fails on that refusal.
//
// PoCL orders the commands on one buffer across queues, which the window's late commands may not
// meet (peer_chunks.h), so the tests here wait for each transfer before the buffer is used again.
#include <CL/cl_fedcl_transfer.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "cl_harness.h"

using namespace fedcl_test;

namespace {

constexpr size_t kWindow = 4 * MiB;

std::unique_ptr<Cluster> windowed_cluster(size_t daemons, std::vector<std::string> args,
                                          std::vector<std::pair<std::string, std::string>> variables = {}) {
  args.insert(args.end(), {"--transfer-window", "4M"});
  variables.emplace_back("FEDCL_TEST_REFUSE_MAPS_OVER", std::to_string(kWindow));
  DaemonEnvironment shim(FEDCL_REFUSING_BACKEND_PATH, variables);
  return std::make_unique<Cluster>(daemons, args);
}

std::vector<uint32_t> pattern(size_t words, uint32_t seed) {
  std::vector<uint32_t> out(words);
  for (size_t i = 0; i < words; i++) out[i] = uint32_t(i) * 2654435761u + seed;
  return out;
}

// Where two word vectors first differ, for the failure message.
std::string first_difference(const std::vector<uint32_t> &got, const std::vector<uint32_t> &want) {
  if (got.size() != want.size()) return std::to_string(got.size()) + " words, not " + std::to_string(want.size());
  for (size_t i = 0; i < want.size(); i++)
    if (got[i] != want[i]) return "word " + std::to_string(i) + " of " + std::to_string(want.size());
  return "none";
}

// A context over a cluster's two devices, a queue on each, and a buffer of pattern(words, seed)
// written through the first.
struct WrittenOnFirst {
  WrittenOnFirst(const Cluster &cluster, size_t words, uint32_t seed) : data(pattern(words, seed)) {
    cl_int err = CL_SUCCESS;
    context = clCreateContext(nullptr, 2, cluster.devices.data(), nullptr, nullptr, &err);
    check(err, "clCreateContext");
    for (int d = 0; d < 2; d++) queues[d] = create_queue(context, cluster.devices[d]);
    buffer = create_buffer(context, CL_MEM_READ_WRITE, words * 4);
    check(clEnqueueWriteBuffer(queues[0], buffer, CL_TRUE, 0, words * 4, data.data(), 0, nullptr, nullptr),
          "clEnqueueWriteBuffer");
  }
  ~WrittenOnFirst() {
    clReleaseMemObject(buffer);
    for (cl_command_queue queue : queues) clReleaseCommandQueue(queue);
    clReleaseContext(context);
  }
  std::vector<uint32_t> data;
  cl_context context = nullptr;
  cl_command_queue queues[2] = {};
  cl_mem buffer = nullptr;
};

}  // namespace

// A buffer ten windows large goes to the other daemon and back (its send and its receive windowed
// at both ends); clFinish on the receiving queue waits for the whole transfer.
TEST(TransferWindow, ABufferLargerThanTheWindowMovesBetweenDaemonsWithoutAMap) {
  auto cluster = windowed_cluster(2, {});
  const size_t words = (40 * MiB + 12) / 4;
  WrittenOnFirst w(*cluster, words, 7);
  cl_kernel add = create_kernel(build_program(w.context, "kernel void add(global uint *x) { x[get_global_id(0)] += 3; }"), "add");
  set_arg(add, 0, w.buffer);
  for (int round = 0; round < 2; round++) {
    cl_command_queue to = w.queues[1 - round];
    ASSERT_CL_OK(clEnqueueMigrateMemObjects(to, 1, &w.buffer, 0, 0, nullptr, nullptr));
    ASSERT_CL_OK(clFinish(to));
    ASSERT_CL_OK(clEnqueueNDRangeKernel(to, add, 1, nullptr, &words, nullptr, 0, nullptr, nullptr));
    for (uint32_t &word : w.data) word += 3;
    std::vector<uint32_t> got(words);
    ASSERT_CL_OK(clEnqueueReadBuffer(to, w.buffer, CL_TRUE, 0, words * 4, got.data(), 0, nullptr, nullptr));
    EXPECT_TRUE(got == w.data) << "round " << round << ": " << first_difference(got, w.data);
  }
  clReleaseKernel(add);
}

// The receiving device takes the bytes slower than the link brings them (the shim makes every
// write take 40 ms, two windowed chunks of 4 MiB at a time): the sender goes only as far as the
// receiving session's credits let it, 16 MiB past what is in place (--peer-ahead 16M). A sender that
// went further would fail the transfer (the receiver refuses to hold more), so the bytes arriving
// whole show that it kept to them.
TEST(TransferWindow, ASlowReceiverHoldsNoMoreThanItsCreditAllows) {
  auto cluster = windowed_cluster(2, {"--peer-ahead", "16M"}, {{"FEDCL_TEST_SLOW_WRITES_MS", "40"}});
  const size_t words = 64 * MiB / 4;
  WrittenOnFirst w(*cluster, words, 13);
  ASSERT_CL_OK(clFinish(w.queues[0]));
  cl_event moved = nullptr;
  ASSERT_CL_OK(clEnqueueMigrateMemObjects(w.queues[1], 1, &w.buffer, 0, 0, nullptr, &moved));
  ASSERT_CL_OK(clWaitForEvents(1, &moved));
  cl_int status = 1;
  ASSERT_CL_OK(clGetEventInfo(moved, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr));
  EXPECT_EQ(CL_COMPLETE, status);
  clReleaseEvent(moved);
  std::vector<uint32_t> got(words);
  ASSERT_CL_OK(clEnqueueReadBuffer(w.queues[1], w.buffer, CL_TRUE, 0, words * 4, got.data(), 0, nullptr, nullptr));
  EXPECT_TRUE(got == w.data) << first_difference(got, w.data);
}

// A node file's save and load of a buffer ten windows large, and of a range of it: the chunks go to
// and come from the file a window at a time.
TEST(TransferWindow, AFileLargerThanTheWindowIsSavedAndLoadedWithoutAMap) {
  std::string root = ::testing::TempDir() + "fedcl_window_files_" + std::to_string(getpid());
  mkdir(root.c_str(), 0755);
  auto cluster = windowed_cluster(1, {"--file-root", root});
  auto load = reinterpret_cast<clEnqueueWriteBufferFromNodeFile_fn>(
      clGetExtensionFunctionAddressForPlatform(cluster->platform, "clEnqueueWriteBufferFromNodeFile"));
  auto save = reinterpret_cast<clEnqueueReadBufferToNodeFile_fn>(
      clGetExtensionFunctionAddressForPlatform(cluster->platform, "clEnqueueReadBufferToNodeFile"));
  ASSERT_NE(nullptr, load);
  ASSERT_NE(nullptr, save);
  const size_t words = (40 * MiB + 20) / 4, skip = 1000;
  cl_int err;
  cl_context context = clCreateContext(nullptr, 1, cluster->devices.data(), nullptr, nullptr, &err);
  ASSERT_CL_OK(err);
  cl_command_queue queue = create_queue(context, cluster->devices[0]);
  std::vector<uint32_t> data = pattern(words, 11);
  cl_mem buffer = create_buffer(context, CL_MEM_READ_WRITE, words * 4);
  ASSERT_CL_OK(clEnqueueWriteBuffer(queue, buffer, CL_TRUE, 0, words * 4, data.data(), 0, nullptr, nullptr));
  ASSERT_CL_OK(save(queue, buffer, CL_TRUE, 0, words * 4, "whole.bin", 0, 0, nullptr, nullptr));
  ASSERT_CL_OK(save(queue, buffer, CL_TRUE, skip * 4, (words - skip) * 4, "tail.bin", 0, 0, nullptr, nullptr));
  std::vector<uint32_t> saved(words);
  // A session without a user name keeps its node files in the root's folder _anonymous.
  std::ifstream(root + "/_anonymous/whole.bin", std::ios::binary).read(reinterpret_cast<char *>(saved.data()), words * 4);
  EXPECT_TRUE(saved == data) << first_difference(saved, data);

  // Load the tail over the front of the buffer: words skip.. come to 0..
  ASSERT_CL_OK(load(queue, buffer, CL_TRUE, 0, (words - skip) * 4, "tail.bin", 0, 0, nullptr, nullptr));
  std::vector<uint32_t> got(words), want = data;
  std::copy(data.begin() + skip, data.end(), want.begin());
  ASSERT_CL_OK(clEnqueueReadBuffer(queue, buffer, CL_TRUE, 0, words * 4, got.data(), 0, nullptr, nullptr));
  EXPECT_TRUE(got == want) << first_difference(got, want);
  clReleaseMemObject(buffer);
  clReleaseCommandQueue(queue);
  clReleaseContext(context);
  std::system(("rm -rf '" + root + "'").c_str());
}
