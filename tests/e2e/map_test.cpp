// Mapping buffers: what a read map shows, and what a write map leaves behind after the unmap.
#include <numeric>

#include "cl_harness.h"

using namespace fedcl_test;

namespace {

struct MapTest : ::testing::Test {
  Cluster cluster{1};
  cl_device_id device = cluster.devices.at(0);
  cl_context context = nullptr;
  cl_command_queue queue = nullptr;
  cl_kernel scale = nullptr;
  static constexpr size_t n = 4096;

  void SetUp() override {
    cl_int err;
    context = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &err);
    ASSERT_CL_OK(err);
    queue = create_queue(context, device);
    scale = create_kernel(build_program(context, kScaleSource), "scale");
  }

  void run_scale(cl_mem mem, int factor) {
    set_arg(scale, 0, mem);
    set_arg(scale, 1, factor);
    size_t global = n;
    ASSERT_CL_OK(clEnqueueNDRangeKernel(queue, scale, 1, nullptr, &global, nullptr, 0, nullptr, nullptr));
  }

  int *map(cl_mem mem, cl_map_flags flags, size_t offset, size_t count) {
    cl_int err = CL_INVALID_VALUE;
    void *pointer = clEnqueueMapBuffer(queue, mem, CL_TRUE, flags, offset * sizeof(int), count * sizeof(int), 0,
                                       nullptr, nullptr, &err);
    EXPECT_CL(CL_SUCCESS, err);
    EXPECT_NE(nullptr, pointer);
    return static_cast<int *>(pointer);
  }

  cl_uint map_count(cl_mem mem) {
    cl_uint count = 99;
    EXPECT_CL(CL_SUCCESS, clGetMemObjectInfo(mem, CL_MEM_MAP_COUNT, sizeof count, &count, nullptr));
    return count;
  }
};

}  // namespace

TEST_F(MapTest, PlainBufferReadAndWriteMaps) {
  std::vector<int> data(n);
  std::iota(data.begin(), data.end(), 1);
  cl_mem mem = create_buffer(context, CL_MEM_READ_WRITE, n * sizeof(int));
  ASSERT_CL_OK(clEnqueueWriteBuffer(queue, mem, CL_TRUE, 0, n * sizeof(int), data.data(), 0, nullptr, nullptr));
  run_scale(mem, 3);

  // A read map of a part shows what the kernel wrote there.
  int *view = map(mem, CL_MAP_READ, 100, 50);
  ASSERT_NE(nullptr, view);
  EXPECT_EQ(1u, map_count(mem));
  for (size_t i = 0; i < 50; i++) ASSERT_EQ(3 * data[100 + i], view[i]) << "at " << i;
  ASSERT_CL_OK(clEnqueueUnmapMemObject(queue, mem, view, 0, nullptr, nullptr));

  // A write map: what the host writes reaches the device at the unmap.
  int *rw = map(mem, CL_MAP_READ | CL_MAP_WRITE, 0, n);
  ASSERT_NE(nullptr, rw);
  for (size_t i = 0; i < n; i++) rw[i] += 10;
  ASSERT_CL_OK(clEnqueueUnmapMemObject(queue, mem, rw, 0, nullptr, nullptr));
  run_scale(mem, 2);
  std::vector<int> back(n);
  ASSERT_CL_OK(clEnqueueReadBuffer(queue, mem, CL_TRUE, 0, n * sizeof(int), back.data(), 0, nullptr, nullptr));
  for (size_t i = 0; i < n; i++) ASSERT_EQ((3 * data[i] + 10) * 2, back[i]) << "at " << i;
  ASSERT_CL_OK(clFinish(queue));
  EXPECT_EQ(0u, map_count(mem));
}

TEST_F(MapTest, WriteInvalidateRegionReplacesOnlyThatRegion) {
  std::vector<int> zeros(n, 0);
  cl_mem mem = create_buffer(context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, n * sizeof(int), zeros.data());
  int *region = map(mem, CL_MAP_WRITE_INVALIDATE_REGION, 1000, 24);
  ASSERT_NE(nullptr, region);
  for (int i = 0; i < 24; i++) region[i] = 500 + i;
  ASSERT_CL_OK(clEnqueueUnmapMemObject(queue, mem, region, 0, nullptr, nullptr));
  std::vector<int> back(n, -1);
  ASSERT_CL_OK(clEnqueueReadBuffer(queue, mem, CL_TRUE, 0, n * sizeof(int), back.data(), 0, nullptr, nullptr));
  for (size_t i = 0; i < n; i++) {
    int expected = (i >= 1000 && i < 1024) ? 500 + int(i - 1000) : 0;
    ASSERT_EQ(expected, back[i]) << "at " << i;
  }
}

TEST_F(MapTest, UseHostPtrMapsPointIntoTheApplicationsMemory) {
  std::vector<int> host(n);
  std::iota(host.begin(), host.end(), -2000);
  const std::vector<int> original = host;
  cl_mem mem = create_buffer(context, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, n * sizeof(int), host.data());
  run_scale(mem, 5);

  // A map of a CL_MEM_USE_HOST_PTR buffer returns host_ptr + offset, holding the current contents.
  int *view = map(mem, CL_MAP_READ, 64, n - 64);
  ASSERT_EQ(host.data() + 64, view);
  for (size_t i = 64; i < n; i++) ASSERT_EQ(5 * original[i], host[i]) << "at " << i;
  ASSERT_CL_OK(clEnqueueUnmapMemObject(queue, mem, view, 0, nullptr, nullptr));

  int *write = map(mem, CL_MAP_WRITE, 0, n);
  ASSERT_EQ(host.data(), write);
  for (size_t i = 0; i < n; i++) write[i] = int(i) * 7;
  ASSERT_CL_OK(clEnqueueUnmapMemObject(queue, mem, write, 0, nullptr, nullptr));
  run_scale(mem, -1);
  std::vector<int> back(n);
  ASSERT_CL_OK(clEnqueueReadBuffer(queue, mem, CL_TRUE, 0, n * sizeof(int), back.data(), 0, nullptr, nullptr));
  for (size_t i = 0; i < n; i++) ASSERT_EQ(-7 * int(i), back[i]) << "at " << i;
}

TEST_F(MapTest, UnmapOfAnUnknownPointerFails) {
  cl_mem mem = create_buffer(context, CL_MEM_READ_WRITE, n * sizeof(int));
  int *view = map(mem, CL_MAP_READ, 0, n);
  ASSERT_NE(nullptr, view);
  int elsewhere = 0;
  EXPECT_CL(CL_INVALID_VALUE, clEnqueueUnmapMemObject(queue, mem, &elsewhere, 0, nullptr, nullptr));
  EXPECT_CL(CL_SUCCESS, clEnqueueUnmapMemObject(queue, mem, view, 0, nullptr, nullptr));
  EXPECT_CL(CL_INVALID_VALUE, clEnqueueUnmapMemObject(queue, mem, view, 0, nullptr, nullptr));
}
