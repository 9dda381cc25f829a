// FEDCL_SYNC=1: every call waits for the daemon, so a remote failure is the call's own result.
#include <cstdlib>

#include "cl_harness.h"

using namespace fedcl_test;

namespace {

struct SyncMode : ::testing::Test {
  // Set before anything of fedcl runs: the runtime reads it once.
  static void SetUpTestSuite() { setenv("FEDCL_SYNC", "1", 1); }
};

}  // namespace

TEST_F(SyncMode, VectorAdd) {
  Cluster cluster(1);
  cl_device_id device = cluster.devices.at(0);
  cl_int err;
  cl_context context = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &err);
  ASSERT_CL_OK(err);
  expect_vector_add(context, create_queue(context, device), 30000);
}

TEST_F(SyncMode, RemoteFailureIsReturnedByTheCallItself) {
  Cluster cluster(1);
  cl_device_id device = cluster.devices.at(0);
  cl_int err;
  cl_context context = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &err);
  ASSERT_CL_OK(err);
  cl_command_queue queue = create_queue(context, device);
  cl_kernel kernel = create_kernel(
      build_program(context, "__kernel __attribute__((reqd_work_group_size(16, 1, 1))) void k(__global int *x) {}"),
      "k");
  cl_mem mem = create_buffer(context, CL_MEM_READ_WRITE, 256);
  set_arg(kernel, 0, mem);
  const size_t global = 64, local = 8;
  EXPECT_CL(CL_INVALID_WORK_GROUP_SIZE, clEnqueueNDRangeKernel(queue, kernel, 1, nullptr, &global, &local, 0, nullptr, nullptr));
  EXPECT_CL(CL_SUCCESS, clFinish(queue));  // already reported: not reported twice
  const size_t good = 16;
  EXPECT_CL(CL_SUCCESS, clEnqueueNDRangeKernel(queue, kernel, 1, nullptr, &global, &good, 0, nullptr, nullptr));
  EXPECT_CL(CL_SUCCESS, clFinish(queue));
}
