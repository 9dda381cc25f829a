// A session worker holds no key (docs/design-decisions.md, "Workers are a boundary"): a kernel on a
// CPU device reads any address of its worker, as the tenants' finding showed. In the release tree: a
// sanitizer's runtime maps and unmaps its own regions under the scan, which then reads a page gone.
#include <fstream>
#include <regex>

#include "cl_harness.h"
#include "sandbox_keys.h"

using namespace fedcl_test;

// The keys never reach a worker's memory: a kernel that copies out every readable page of its own
// worker finds a marker the client put in a buffer (so the copy sees the worker's memory) and no key.
TEST(Sandbox, AKernelThatReadsItsWorkersMemoryFindsNoKey) {
  SandboxKeys keys;
  StderrCapture capture;
  Cluster cluster(1, keys.daemon_args());
  std::smatch match;
  std::string so_far = capture.so_far();
  ASSERT_TRUE(std::regex_search(so_far, match, std::regex("session [0-9]+: .* in worker ([0-9]+)"))) << so_far;
  pid_t worker = std::stoi(match[1]);
  cl_int err;
  cl_context context = clCreateContext(nullptr, 1, &cluster.devices[0], nullptr, nullptr, &err);
  ASSERT_CL_OK(err);
  cl_command_queue queue = create_queue(context, cluster.devices[0]);
  const std::string marker = "a-marker-the-client-put-in-a-buffer";
  cl_mem marked = create_buffer(context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, marker.size(), const_cast<char *>(marker.data()));
  ASSERT_CL_OK(clFinish(queue));
  cl_kernel peek = create_kernel(build_program(context, R"(
    __kernel void peek(__global uchar *out, ulong address) {
      size_t i = get_global_id(0);
      out[i] = ((__global const uchar *)address)[i];
    })"), "peek");
  constexpr size_t kChunk = 8 << 20;
  cl_mem out = create_buffer(context, CL_MEM_WRITE_ONLY, kChunk);
  std::vector<char> bytes(kChunk);
  size_t scanned = 0;
  bool marker_seen = false;
  std::ifstream maps("/proc/" + std::to_string(worker) + "/maps");
  ASSERT_TRUE(maps) << "cannot read the worker's maps";
  for (std::string line; std::getline(maps, line);) {
    unsigned long long from = 0, to = 0;
    char perms[5] = {};
    if (std::sscanf(line.c_str(), "%llx-%llx %4s", &from, &to, perms) != 3 || perms[0] != 'r') continue;
    if (line.find("[vvar") != std::string::npos || line.find("[vsyscall]") != std::string::npos ||
        line.find(" /dev/") != std::string::npos || to - from > (256ull << 20))
      continue;
    for (unsigned long long at = from; at < to; at += kChunk) {
      size_t n = size_t(std::min<unsigned long long>(kChunk, to - at));
      cl_ulong address = at;
      ASSERT_CL_OK(clSetKernelArg(peek, 0, sizeof out, &out));
      ASSERT_CL_OK(clSetKernelArg(peek, 1, sizeof address, &address));
      ASSERT_CL_OK(clEnqueueNDRangeKernel(queue, peek, 1, nullptr, &n, nullptr, 0, nullptr, nullptr));
      ASSERT_CL_OK(clEnqueueReadBuffer(queue, out, CL_TRUE, 0, n, bytes.data(), 0, nullptr, nullptr));
      std::string_view seen(bytes.data(), n);
      marker_seen = marker_seen || seen.find(marker) != std::string_view::npos;
      EXPECT_EQ(std::string_view::npos, seen.find(kAliceKey)) << "alice's key in the worker at " << std::hex << at;
      EXPECT_EQ(std::string_view::npos, seen.find(kDaemonsKey)) << "the daemons' key in the worker at " << std::hex << at;
      scanned += n;
    }
  }
  EXPECT_TRUE(marker_seen) << "the copy never saw the client's buffer: it cannot show what it did not find";
  EXPECT_GT(scanned, size_t(1) << 20);
  clReleaseMemObject(marked);
  clReleaseMemObject(out);
  clReleaseKernel(peek);
  clReleaseCommandQueue(queue);
  clReleaseContext(context);
}
