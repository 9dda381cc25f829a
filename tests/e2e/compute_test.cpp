// Kernels through fedcl give the results the CPU computes.
#include <algorithm>
#include <numeric>

#include "cl_harness.h"

using namespace fedcl_test;

namespace {

struct OneDevice : OneDeviceFixture {};
// A dropped connection is not resumed: a transfer that broke the stream fails instead of being sent again.
struct NoResume : OneDeviceFixture {
  NoResume() : OneDeviceFixture({"--resume-window", "0"}) {}
};

const char kReduceSource[] = R"(
__kernel void partial_sums(__global const int *in, __global int *out, __local int *scratch) {
  size_t lid = get_local_id(0);
  scratch[lid] = in[get_global_id(0)];
  barrier(CLK_LOCAL_MEM_FENCE);
  for (size_t stride = get_local_size(0) / 2; stride > 0; stride /= 2) {
    if (lid < stride) scratch[lid] += scratch[lid + stride];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0) out[get_group_id(0)] = scratch[0];
}
)";

}  // namespace

TEST_F(OneDevice, VectorAddMatchesCpu) {
  expect_vector_add(context, queue, 100003);  // not a multiple of the work-group size
}

TEST_F(OneDevice, VectorAddRepeatedWithChangedArguments) {
  // Arguments travel with launches: a second run with new buffers must use them, not the old ones.
  expect_vector_add(context, queue, 1000);
  expect_vector_add(context, queue, 4096);
}

TEST_F(OneDevice, LocalMemoryReduction) {
  const size_t local = 64, groups = 257, n = local * groups;
  std::vector<int> in(n);
  for (size_t i = 0; i < n; i++) in[i] = int(i % 1000) - 300;
  cl_mem din = create_buffer(context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, n * sizeof(int), in.data());
  cl_mem dout = create_buffer(context, CL_MEM_WRITE_ONLY, groups * sizeof(int));
  cl_program program = build_program(context, kReduceSource);
  cl_kernel kernel = create_kernel(program, "partial_sums");
  set_arg(kernel, 0, din);
  set_arg(kernel, 1, dout);
  ASSERT_CL_OK(clSetKernelArg(kernel, 2, local * sizeof(int), nullptr));  // __local: a size, no value
  ASSERT_CL_OK(clEnqueueNDRangeKernel(queue, kernel, 1, nullptr, &n, &local, 0, nullptr, nullptr));
  std::vector<int> out(groups, 0);
  ASSERT_CL_OK(clEnqueueReadBuffer(queue, dout, CL_TRUE, 0, groups * sizeof(int), out.data(), 0, nullptr, nullptr));
  for (size_t g = 0; g < groups; g++) {
    int expected = std::accumulate(in.begin() + g * local, in.begin() + (g + 1) * local, 0);
    ASSERT_EQ(expected, out[g]) << "group " << g;
  }
  EXPECT_EQ(std::accumulate(in.begin(), in.end(), 0L), std::accumulate(out.begin(), out.end(), 0L));
}

TEST_F(OneDevice, CopyAndFillBuffers) {
  const size_t n = 1 << 16;
  std::vector<int> source(n);
  std::iota(source.begin(), source.end(), 7);
  cl_mem a = create_buffer(context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, n * sizeof(int), source.data());
  cl_mem b = create_buffer(context, CL_MEM_READ_WRITE, n * sizeof(int));
  const int pattern = -5;
  ASSERT_CL_OK(clEnqueueFillBuffer(queue, b, &pattern, sizeof pattern, 0, n * sizeof(int), 0, nullptr, nullptr));
  // The first half of b becomes the second half of a; the second half stays filled.
  ASSERT_CL_OK(clEnqueueCopyBuffer(queue, a, b, n / 2 * sizeof(int), 0, n / 2 * sizeof(int), 0, nullptr, nullptr));
  std::vector<int> result(n);
  ASSERT_CL_OK(clEnqueueReadBuffer(queue, b, CL_TRUE, 0, n * sizeof(int), result.data(), 0, nullptr, nullptr));
  for (size_t i = 0; i < n; i++) ASSERT_EQ(i < n / 2 ? source[n / 2 + i] : pattern, result[i]) << "at " << i;
}

TEST_F(OneDevice, LargeTransferRoundTrip) {
  // Big enough that the bytes travel as a separate payload rather than inside a coalesced batch.
  const size_t n = 3 * 1024 * 1024 + 5;
  std::vector<uint8_t> data(n), back(n, 0);
  for (size_t i = 0; i < n; i++) data[i] = uint8_t(i * 31 + (i >> 11));
  cl_mem mem = create_buffer(context, CL_MEM_READ_WRITE, n);
  ASSERT_CL_OK(clEnqueueWriteBuffer(queue, mem, CL_FALSE, 0, n, data.data(), 0, nullptr, nullptr));
  ASSERT_CL_OK(clEnqueueReadBuffer(queue, mem, CL_TRUE, 0, n, back.data(), 0, nullptr, nullptr));
  EXPECT_TRUE(data == back);
  // A read at an offset returns exactly that part.
  std::vector<uint8_t> part(1001, 0);
  ASSERT_CL_OK(clEnqueueReadBuffer(queue, mem, CL_TRUE, 12345, part.size(), part.data(), 0, nullptr, nullptr));
  EXPECT_TRUE(std::equal(part.begin(), part.end(), data.begin() + 12345));
}

TEST_F(NoResume, LargeTransfersBetweenSmallCalls) {
  // 64 MiB each way, checked byte by byte: over TLS the pieces of a large send and the read-ahead of
  // a large (streamed) read cross threads, and the small calls around them must find the stream in order.
  const size_t n = size_t(64) << 20;
  std::vector<uint8_t> data(n), back(n, 0);
  for (size_t i = 0; i < n; i++) data[i] = uint8_t(i * 131 + (i >> 13));
  cl_mem big = create_buffer(context, CL_MEM_READ_WRITE, n);
  cl_mem small = create_buffer(context, CL_MEM_READ_WRITE, 64);
  const int word = 0x5eed;
  int seen = 0;
  ASSERT_CL_OK(clEnqueueWriteBuffer(queue, big, CL_FALSE, 0, n, data.data(), 0, nullptr, nullptr));
  ASSERT_CL_OK(clEnqueueWriteBuffer(queue, small, CL_TRUE, 0, sizeof word, &word, 0, nullptr, nullptr));
  ASSERT_CL_OK(clEnqueueReadBuffer(queue, small, CL_TRUE, 0, sizeof seen, &seen, 0, nullptr, nullptr));
  EXPECT_EQ(word, seen);
  ASSERT_CL_OK(clEnqueueReadBuffer(queue, big, CL_FALSE, 0, n, back.data(), 0, nullptr, nullptr));
  seen = 0;
  ASSERT_CL_OK(clEnqueueReadBuffer(queue, small, CL_TRUE, 0, sizeof seen, &seen, 0, nullptr, nullptr));
  EXPECT_EQ(word, seen);
  ASSERT_CL_OK(clFinish(queue));
  auto differ = std::mismatch(data.begin(), data.end(), back.begin());
  EXPECT_TRUE(differ.first == data.end()) << "first difference at byte " << (differ.first - data.begin());
  // A blocking read of an odd size at an odd offset lands exactly there.
  const size_t offset = 12345, size = n - 3 * offset;
  std::fill(back.begin(), back.end(), 0);
  ASSERT_CL_OK(clEnqueueReadBuffer(queue, big, CL_TRUE, offset, size, back.data(), 0, nullptr, nullptr));
  EXPECT_TRUE(std::equal(back.begin(), back.begin() + size, data.begin() + offset));
  clReleaseMemObject(small);
  clReleaseMemObject(big);
}
