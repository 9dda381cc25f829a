// Errors fedcl must return synchronously, exactly as the specification names them.
#include "cl_harness.h"

using namespace fedcl_test;

namespace {

struct ApiErrors : ::testing::Test {
  Cluster cluster{1};
  cl_device_id device = cluster.devices.at(0);
  cl_context context = nullptr;
  cl_command_queue queue = nullptr;
  cl_mem mem = nullptr;
  cl_program program = nullptr;
  cl_kernel kernel = nullptr;
  static constexpr size_t size = 1024;

  void SetUp() override {
    cl_int err;
    context = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &err);
    ASSERT_CL_OK(err);
    queue = create_queue(context, device);
    mem = create_buffer(context, CL_MEM_READ_WRITE, size);
    program = build_program(context, kVectorAddSource);
    kernel = create_kernel(program, "add");
  }
};

const char kLocalArgSource[] = "__kernel void k(__local float *scratch, __global float *out) { out[0] = scratch[0]; }";

// A well-formed handle of the wrong kind: the loader dispatches it to fedcl, whose check must fail.
template <typename To, typename From>
To wrong_kind(From handle) {
  return reinterpret_cast<To>(handle);
}

}  // namespace

TEST_F(ApiErrors, InvalidHandles) {
  char buffer[16];
  EXPECT_CL(CL_INVALID_MEM_OBJECT,
            clEnqueueReadBuffer(queue, wrong_kind<cl_mem>(kernel), CL_TRUE, 0, 4, buffer, 0, nullptr, nullptr));
  EXPECT_CL(CL_INVALID_MEM_OBJECT,
            clEnqueueWriteBuffer(queue, wrong_kind<cl_mem>(queue), CL_TRUE, 0, 4, buffer, 0, nullptr, nullptr));
  EXPECT_CL(CL_INVALID_MEM_OBJECT, clRetainMemObject(wrong_kind<cl_mem>(program)));
  EXPECT_CL(CL_INVALID_COMMAND_QUEUE,
            clEnqueueReadBuffer(wrong_kind<cl_command_queue>(mem), mem, CL_TRUE, 0, 4, buffer, 0, nullptr, nullptr));
  EXPECT_CL(CL_INVALID_COMMAND_QUEUE, clFinish(wrong_kind<cl_command_queue>(context)));
  EXPECT_CL(CL_INVALID_COMMAND_QUEUE, clFinish(nullptr));
  const size_t global = 64;
  EXPECT_CL(CL_INVALID_KERNEL,
            clEnqueueNDRangeKernel(queue, wrong_kind<cl_kernel>(mem), 1, nullptr, &global, nullptr, 0, nullptr, nullptr));
  EXPECT_CL(CL_INVALID_KERNEL, clSetKernelArg(wrong_kind<cl_kernel>(program), 0, 4, buffer));
  EXPECT_CL(CL_INVALID_CONTEXT, clRetainContext(wrong_kind<cl_context>(queue)));
  EXPECT_CL(CL_INVALID_PROGRAM, clBuildProgram(wrong_kind<cl_program>(kernel), 0, nullptr, "", nullptr, nullptr));
  cl_event not_an_event = wrong_kind<cl_event>(mem);
  EXPECT_CL(CL_INVALID_EVENT, clWaitForEvents(1, &not_an_event));
  EXPECT_CL(CL_INVALID_EVENT_WAIT_LIST, clEnqueueMarkerWithWaitList(queue, 1, &not_an_event, nullptr));
  EXPECT_CL(CL_INVALID_EVENT_WAIT_LIST, clEnqueueMarkerWithWaitList(queue, 1, nullptr, nullptr));
  cl_mem not_a_mem = wrong_kind<cl_mem>(queue);
  EXPECT_CL(CL_INVALID_MEM_OBJECT, clSetKernelArg(kernel, 0, sizeof not_a_mem, &not_a_mem));
  cl_int err = CL_SUCCESS;
  EXPECT_EQ(nullptr, clCreateBuffer(wrong_kind<cl_context>(mem), CL_MEM_READ_WRITE, 16, nullptr, &err));
  EXPECT_CL(CL_INVALID_CONTEXT, err);
  EXPECT_EQ(nullptr, clCreateCommandQueue(context, wrong_kind<cl_device_id>(mem), 0, &err));
  EXPECT_CL(CL_INVALID_DEVICE, err);
  // Nothing above reached the daemon: the queue still works.
  ASSERT_CL_OK(clEnqueueWriteBuffer(queue, mem, CL_TRUE, 0, 4, buffer, 0, nullptr, nullptr));
  ASSERT_CL_OK(clFinish(queue));
}

TEST_F(ApiErrors, OutOfRangeTransfers) {
  std::vector<char> host(2 * size);
  EXPECT_CL(CL_INVALID_VALUE, clEnqueueReadBuffer(queue, mem, CL_TRUE, 0, size + 1, host.data(), 0, nullptr, nullptr));
  EXPECT_CL(CL_INVALID_VALUE, clEnqueueReadBuffer(queue, mem, CL_TRUE, size, 1, host.data(), 0, nullptr, nullptr));
  EXPECT_CL(CL_INVALID_VALUE, clEnqueueReadBuffer(queue, mem, CL_TRUE, 1, size, host.data(), 0, nullptr, nullptr));
  EXPECT_CL(CL_INVALID_VALUE, clEnqueueReadBuffer(queue, mem, CL_TRUE, size + 1, 0, host.data(), 0, nullptr, nullptr));
  EXPECT_CL(CL_INVALID_VALUE, clEnqueueReadBuffer(queue, mem, CL_TRUE, 0, 8, nullptr, 0, nullptr, nullptr));
  EXPECT_CL(CL_INVALID_VALUE, clEnqueueWriteBuffer(queue, mem, CL_TRUE, size - 3, 4, host.data(), 0, nullptr, nullptr));
  EXPECT_CL(CL_INVALID_VALUE, clEnqueueWriteBuffer(queue, mem, CL_FALSE, SIZE_MAX, 2, host.data(), 0, nullptr, nullptr));
  cl_mem other = create_buffer(context, CL_MEM_READ_WRITE, size / 2);
  EXPECT_CL(CL_INVALID_VALUE, clEnqueueCopyBuffer(queue, mem, other, 0, 0, size, 0, nullptr, nullptr));
  EXPECT_CL(CL_MEM_COPY_OVERLAP, clEnqueueCopyBuffer(queue, mem, mem, 0, 10, 100, 0, nullptr, nullptr));
  const int pattern = 1;
  EXPECT_CL(CL_INVALID_VALUE, clEnqueueFillBuffer(queue, mem, &pattern, 3, 0, 12, 0, nullptr, nullptr));
  EXPECT_CL(CL_INVALID_VALUE, clEnqueueFillBuffer(queue, mem, &pattern, 4, 0, size + 4, 0, nullptr, nullptr));
  cl_int err = CL_SUCCESS;
  EXPECT_EQ(nullptr, clEnqueueMapBuffer(queue, mem, CL_TRUE, CL_MAP_READ, 0, size + 1, 0, nullptr, nullptr, &err));
  EXPECT_CL(CL_INVALID_VALUE, err);
  EXPECT_EQ(nullptr, clCreateBuffer(context, CL_MEM_READ_WRITE, 0, nullptr, &err));
  EXPECT_CL(CL_INVALID_BUFFER_SIZE, err);
  EXPECT_EQ(nullptr, clCreateBuffer(context, CL_MEM_USE_HOST_PTR, 16, nullptr, &err));
  EXPECT_CL(CL_INVALID_HOST_PTR, err);
  // The exact bounds are accepted.
  ASSERT_CL_OK(clEnqueueWriteBuffer(queue, mem, CL_TRUE, size - 4, 4, host.data(), 0, nullptr, nullptr));
  ASSERT_CL_OK(clEnqueueReadBuffer(queue, mem, CL_TRUE, 0, size, host.data(), 0, nullptr, nullptr));
}

TEST_F(ApiErrors, KernelArguments) {
  float value = 1.0f;
  cl_uint n = 4;
  cl_ulong wide = 4;
  EXPECT_CL(CL_INVALID_ARG_INDEX, clSetKernelArg(kernel, 4, sizeof n, &n));
  EXPECT_CL(CL_INVALID_ARG_INDEX, clSetKernelArg(kernel, 1000, sizeof mem, &mem));
  EXPECT_CL(CL_INVALID_ARG_SIZE, clSetKernelArg(kernel, 3, sizeof wide, &wide));  // n is a uint
  EXPECT_CL(CL_INVALID_ARG_SIZE, clSetKernelArg(kernel, 3, 2, &n));
  EXPECT_CL(CL_INVALID_ARG_SIZE, clSetKernelArg(kernel, 0, sizeof(int), &mem));  // a buffer needs sizeof(cl_mem)
  EXPECT_CL(CL_INVALID_ARG_VALUE, clSetKernelArg(kernel, 3, sizeof n, nullptr));
  // Launching with arguments still unset.
  const size_t global = 64;
  ASSERT_CL_OK(clSetKernelArg(kernel, 0, sizeof mem, &mem));
  EXPECT_CL(CL_INVALID_KERNEL_ARGS, clEnqueueNDRangeKernel(queue, kernel, 1, nullptr, &global, nullptr, 0, nullptr, nullptr));
  EXPECT_CL(CL_INVALID_WORK_DIMENSION, clEnqueueNDRangeKernel(queue, kernel, 0, nullptr, &global, nullptr, 0, nullptr, nullptr));
  EXPECT_CL(CL_INVALID_WORK_DIMENSION, clEnqueueNDRangeKernel(queue, kernel, 4, nullptr, &global, nullptr, 0, nullptr, nullptr));

  cl_program local_program = build_program(context, kLocalArgSource);
  cl_kernel local_kernel = create_kernel(local_program, "k");
  EXPECT_CL(CL_INVALID_ARG_VALUE, clSetKernelArg(local_kernel, 0, sizeof value, &value));  // __local takes no value
  EXPECT_CL(CL_INVALID_ARG_SIZE, clSetKernelArg(local_kernel, 0, 0, nullptr));
  EXPECT_CL(CL_SUCCESS, clSetKernelArg(local_kernel, 0, 256, nullptr));
}

// A buffer where the kernel declares an image (the CTS's api negative_set_kernel_arg_invalid_image,
// which NVIDIA passes; PoCL takes the buffer): refused by the argument's metadata, at the call.
TEST_F(ApiErrors, ABufferIsRefusedForAnImageArgument) {
  const char *source = "__kernel void k(read_only image2d_t image, __global float *out) { out[0] = 0.0f; }";
  cl_program image_program = build_program(context, source);
  cl_kernel image_kernel = create_kernel(image_program, "k");
  EXPECT_CL(CL_INVALID_MEM_OBJECT, clSetKernelArg(image_kernel, 0, sizeof mem, &mem));
  EXPECT_CL(CL_SUCCESS, clSetKernelArg(image_kernel, 1, sizeof mem, &mem));
  cl_image_format format{CL_RGBA, CL_FLOAT};
  cl_image_desc desc{};
  desc.image_type = CL_MEM_OBJECT_IMAGE2D;
  desc.image_width = desc.image_height = 4;
  cl_int err = CL_SUCCESS;
  cl_mem image = clCreateImage(context, CL_MEM_READ_ONLY, &format, &desc, nullptr, &err);
  ASSERT_CL_OK(err);
  EXPECT_CL(CL_SUCCESS, clSetKernelArg(image_kernel, 0, sizeof image, &image));
  clReleaseMemObject(image);
  clReleaseKernel(image_kernel);
  clReleaseProgram(image_program);
}

TEST_F(ApiErrors, UnknownKernelName) {
  cl_int err = CL_SUCCESS;
  EXPECT_EQ(nullptr, clCreateKernel(program, "no_such_kernel", &err));
  EXPECT_CL(CL_INVALID_KERNEL_NAME, err);
  EXPECT_EQ(nullptr, clCreateKernel(program, "ad", &err));  // a prefix of "add" is not "add"
  EXPECT_CL(CL_INVALID_KERNEL_NAME, err);
}

TEST_F(ApiErrors, SyntaxErrorFailsTheBuildWithALog) {
  const char *source = "__kernel void broken(__global int *x) { x[0] = undeclared_thing + ; }";
  cl_int err;
  cl_program bad = clCreateProgramWithSource(context, 1, &source, nullptr, &err);
  ASSERT_CL_OK(err);
  EXPECT_CL(CL_BUILD_PROGRAM_FAILURE, clBuildProgram(bad, 0, nullptr, "", nullptr, nullptr));
  cl_build_status status = CL_BUILD_SUCCESS;
  ASSERT_CL_OK(clGetProgramBuildInfo(bad, device, CL_PROGRAM_BUILD_STATUS, sizeof status, &status, nullptr));
  EXPECT_EQ(CL_BUILD_ERROR, status);
  std::string log = build_log(bad, device);
  EXPECT_NE(std::string::npos, log.find("error")) << log;
  EXPECT_NE(std::string::npos, log.find("undeclared_thing")) << log;
  EXPECT_EQ(nullptr, clCreateKernel(bad, "broken", &err));
  EXPECT_CL(CL_INVALID_PROGRAM_EXECUTABLE, err);
  // The session survives a failed build.
  expect_vector_add(context, queue, 100);
}

TEST_F(ApiErrors, ContextAndQueueArguments) {
  cl_int err = CL_SUCCESS;
  EXPECT_EQ(nullptr, clCreateContext(nullptr, 0, &device, nullptr, nullptr, &err));
  EXPECT_CL(CL_INVALID_VALUE, err);
  cl_device_id not_a_device = wrong_kind<cl_device_id>(context);
  EXPECT_EQ(nullptr, clCreateContext(nullptr, 1, &not_a_device, nullptr, nullptr, &err));
  EXPECT_CL(CL_INVALID_DEVICE, err);
  EXPECT_EQ(nullptr, clCreateCommandQueue(context, device, cl_command_queue_properties(1) << 40, &err));
  EXPECT_CL(CL_INVALID_VALUE, err);
  cl_uint count = 0;
  EXPECT_CL(CL_INVALID_DEVICE_TYPE, clGetDeviceIDs(cluster.platform, cl_device_type(1) << 40, 0, nullptr, &count));
  EXPECT_CL(CL_INVALID_DEVICE_TYPE, clGetDeviceIDs(cluster.platform, 0, 0, nullptr, &count));  // 0 names no type
  EXPECT_CL(CL_INVALID_VALUE, clGetDeviceIDs(cluster.platform, CL_DEVICE_TYPE_ALL, 0, nullptr, nullptr));
}
