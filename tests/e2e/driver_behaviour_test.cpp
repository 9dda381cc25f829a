// fedcl returns, from the call itself, what the node's driver returns: launch geometry against the
// kernel and the device, host-access flags of maps, CL_MEM_PROPERTIES, queue properties, overlap
// of rectangle copies, commands of no bytes. What the backend (PoCL here) answers is in the
// comments; tests/realprog/driver_check compares the same on any backend.
#include <climits>

#include "cl_harness.h"

using namespace fedcl_test;

namespace {

struct DriverBehaviour : OneDeviceFixture {
  cl_mem out = nullptr;

  void SetUp() override {
    OneDeviceFixture::SetUp();
    out = create_buffer(context, CL_MEM_READ_WRITE, 4096);
  }
  void TearDown() override {
    if (out) clReleaseMemObject(out);
    OneDeviceFixture::TearDown();
  }

  // Kernel name of source built with options, its first argument set to out.
  cl_kernel kernel(const char *source, const char *name, const char *options = "") {
    cl_kernel k = create_kernel(build_program(context, source, options), name);
    set_arg(k, 0, out);
    return k;
  }

  cl_int launch(cl_kernel k, cl_uint dims, const size_t *global, const size_t *local, const size_t *offset = nullptr,
                cl_uint num_events = 0, const cl_event *wait_list = nullptr, cl_event *event = nullptr) {
    return clEnqueueNDRangeKernel(queue, k, dims, offset, global, local, num_events, wait_list, event);
  }

  std::vector<int> read_ints(cl_mem mem, size_t count) {
    std::vector<int> values(count, -1);
    EXPECT_CL(CL_SUCCESS, clEnqueueReadBuffer(queue, mem, CL_TRUE, 0, count * sizeof(int), values.data(), 0, nullptr,
                                              nullptr));
    return values;
  }

  cl_int event_status(cl_event event) {
    cl_int status = 1;
    clGetEventInfo(event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr);
    return status;
  }

  // event's command waits for the user event gate like any command: it completes once gate does.
  void expect_gated(cl_event gate, cl_event event) {
    ASSERT_CL_OK(clFlush(queue));
    EXPECT_NE(CL_COMPLETE, event_status(event));
    ASSERT_CL_OK(clSetUserEventStatus(gate, CL_COMPLETE));
    EXPECT_CL(CL_SUCCESS, clWaitForEvents(1, &event));
    EXPECT_CL(CL_SUCCESS, clFinish(queue));
    clReleaseEvent(event);
    clReleaseEvent(gate);
  }
};

const char kFixedSource[] = R"(
kernel __attribute__((reqd_work_group_size(4, 1, 1))) void fixed(global int *x) { x[get_global_id(0)] = 1; }
)";
const char kFreeSource[] = "kernel void free_size(global int *x) { x[get_global_id(0)] = 2; }";

// ---------------------------------------------------------------------------------------------
// Launch geometry

TEST_F(DriverBehaviour, LaunchContradictingReqdWorkGroupSizeFailsAtOnce) {
  cl_kernel fixed = kernel(kFixedSource, "fixed");
  size_t global = 16, local8 = 8, local4 = 4, global2[2] = {8, 8}, local2[2] = {4, 2};
  EXPECT_CL(CL_INVALID_WORK_GROUP_SIZE, launch(fixed, 1, &global, &local8));
  EXPECT_CL(CL_INVALID_WORK_GROUP_SIZE, launch(fixed, 1, &global, nullptr));  // the driver may not pick 4 for you
  EXPECT_CL(CL_INVALID_WORK_GROUP_SIZE, launch(fixed, 2, global2, local2));
  EXPECT_CL(CL_SUCCESS, launch(fixed, 1, &global, &local4));
  // Nothing failed later either: the refused launches never reached the daemon.
  EXPECT_CL(CL_SUCCESS, clFinish(queue));
  EXPECT_EQ(std::vector<int>(16, 1), read_ints(out, 16));
  clReleaseKernel(fixed);
}

TEST_F(DriverBehaviour, NonUniformWorkGroupsRefusedForOpenCLC1xBuilds) {
  // PoCL reports no non-uniform work-groups at all; OpenCL C 1.x builds (the default) have none anywhere.
  size_t global = 10, local = 4;
  for (const char *options : {"", "-cl-std=CL1.2", "-cl-std=CL3.0 -cl-uniform-work-group-size"}) {
    cl_kernel k = kernel(kFreeSource, "free_size", options);
    EXPECT_CL(CL_INVALID_WORK_GROUP_SIZE, launch(k, 1, &global, &local)) << "options '" << options << "'";
    clReleaseKernel(k);
  }
  EXPECT_CL(CL_SUCCESS, clFinish(queue));
}

TEST_F(DriverBehaviour, NonUniformWorkGroupsFollowTheLinkedInputs) {
  const char *source = kFreeSource;
  cl_int err;
  cl_program object = clCreateProgramWithSource(context, 1, &source, nullptr, &err);
  ASSERT_CL_OK(clCompileProgram(object, 1, &device, "", 0, nullptr, nullptr, nullptr, nullptr));
  cl_program linked = clLinkProgram(context, 1, &device, "", 1, &object, nullptr, nullptr, &err);
  ASSERT_CL_OK(err);
  cl_kernel k = create_kernel(linked, "free_size");
  set_arg(k, 0, out);
  size_t global = 10, local = 4, uniform = 12;
  EXPECT_CL(CL_INVALID_WORK_GROUP_SIZE, launch(k, 1, &global, &local));
  EXPECT_CL(CL_SUCCESS, launch(k, 1, &uniform, &local));
  EXPECT_CL(CL_SUCCESS, clFinish(queue));
  clReleaseKernel(k);
  clReleaseProgram(linked);
  clReleaseProgram(object);
}

TEST_F(DriverBehaviour, EmptyRangeCompletesInOrderOnOpenCL21Devices) {
  cl_kernel k = kernel(kFreeSource, "free_size");
  std::string version = device_string(device, CL_DEVICE_VERSION);
  ASSERT_GE(version, "OpenCL 2.1") << version;  // PoCL 3.1: OpenCL 3.0
  size_t zero = 0, four = 4;
  cl_int err;
  cl_event gate = clCreateUserEvent(context, &err), done = nullptr;
  ASSERT_CL_OK(launch(k, 1, &zero, nullptr, nullptr, 1, &gate, &done));
  ASSERT_NE(nullptr, done);
  EXPECT_CL(CL_SUCCESS, launch(k, 1, nullptr, nullptr));  // no global size at all
  EXPECT_CL(CL_SUCCESS, launch(k, 1, &zero, &four));
  cl_command_type type = 0;
  clGetEventInfo(done, CL_EVENT_COMMAND_TYPE, sizeof type, &type, nullptr);
  EXPECT_EQ(cl_command_type(CL_COMMAND_NDRANGE_KERNEL), type);
  expect_gated(gate, done);
  clReleaseKernel(k);
}

TEST_F(DriverBehaviour, LocalSizeTotalCheckedBeforeEachDimension) {
  cl_kernel k = kernel(kFreeSource, "free_size");
  size_t big = size_t(1) << 20;  // past both CL_DEVICE_MAX_WORK_GROUP_SIZE and CL_DEVICE_MAX_WORK_ITEM_SIZES[0]
  EXPECT_CL(CL_INVALID_WORK_GROUP_SIZE, launch(k, 1, &big, &big));
  clReleaseKernel(k);
}

TEST_F(DriverBehaviour, GlobalIdsPastSizeMaxAreAnInvalidOffset) {
  cl_kernel k = kernel("kernel void untouching(global int *x) { }", "untouching");
  size_t global = 16, offset = SIZE_MAX - 4;
  EXPECT_CL(CL_INVALID_GLOBAL_OFFSET, launch(k, 1, &global, nullptr, &offset));
  offset = SIZE_MAX - 16;
  EXPECT_CL(CL_SUCCESS, launch(k, 1, &global, nullptr, &offset));  // the last id is SIZE_MAX - 1
  EXPECT_CL(CL_SUCCESS, clFinish(queue));
  clReleaseKernel(k);
}

// ---------------------------------------------------------------------------------------------
// Host access flags of maps: CL_MAP_READ needs a host that may read, CL_MAP_WRITE and
// CL_MAP_WRITE_INVALIDATE_REGION one that may write.

TEST_F(DriverBehaviour, HostWriteOnlyObjectsMapForWritingAndKeepWhatTheHostLeftAlone) {
  const size_t n = 64;
  std::vector<int> initial(n);
  for (size_t i = 0; i < n; i++) initial[i] = int(i);
  cl_mem mem = create_buffer(context, CL_MEM_READ_WRITE | CL_MEM_HOST_WRITE_ONLY, n * sizeof(int));
  ASSERT_CL_OK(clEnqueueWriteBuffer(queue, mem, CL_TRUE, 0, n * sizeof(int), initial.data(), 0, nullptr, nullptr));
  cl_int err = CL_INVALID_VALUE;
  auto *mapped = static_cast<int *>(clEnqueueMapBuffer(queue, mem, CL_TRUE, CL_MAP_WRITE, 8 * sizeof(int),
                                                       8 * sizeof(int), 0, nullptr, nullptr, &err));
  ASSERT_CL_OK(err);
  mapped[0] = 1000;  // the other seven stay as they were
  ASSERT_CL_OK(clEnqueueUnmapMemObject(queue, mem, mapped, 0, nullptr, nullptr));
  clEnqueueMapBuffer(queue, mem, CL_TRUE, CL_MAP_READ, 0, 4, 0, nullptr, nullptr, &err);
  EXPECT_CL(CL_INVALID_OPERATION, err);

  cl_buffer_region region = {0, 16 * sizeof(int)};
  cl_mem sub = clCreateSubBuffer(mem, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &region, &err);
  ASSERT_CL_OK(err);
  void *sub_map = clEnqueueMapBuffer(queue, sub, CL_TRUE, CL_MAP_WRITE, 0, 4, 0, nullptr, nullptr, &err);
  EXPECT_CL(CL_SUCCESS, err);  // inherits its parent's flags
  if (sub_map) clEnqueueUnmapMemObject(queue, sub, sub_map, 0, nullptr, nullptr);
  clEnqueueMapBuffer(queue, sub, CL_TRUE, CL_MAP_READ, 0, 4, 0, nullptr, nullptr, &err);
  EXPECT_CL(CL_INVALID_OPERATION, err);

  // The host may not read it: a copy shows what the map left.
  cl_mem check = create_buffer(context, CL_MEM_READ_WRITE, n * sizeof(int));
  ASSERT_CL_OK(clEnqueueCopyBuffer(queue, mem, check, 0, 0, n * sizeof(int), 0, nullptr, nullptr));
  std::vector<int> expected = initial;
  expected[8] = 1000;
  EXPECT_EQ(expected, read_ints(check, n));
  for (cl_mem m : {check, sub, mem}) clReleaseMemObject(m);
}

TEST_F(DriverBehaviour, HostWriteOnlyImageMapsForWriting) {
  cl_image_format format = {CL_RGBA, CL_UNORM_INT8};
  cl_image_desc desc = {};
  desc.image_type = CL_MEM_OBJECT_IMAGE2D;
  desc.image_width = desc.image_height = 8;
  cl_int err;
  cl_mem image = clCreateImage(context, CL_MEM_READ_WRITE | CL_MEM_HOST_WRITE_ONLY, &format, &desc, nullptr, &err);
  ASSERT_CL_OK(err);
  size_t origin[3] = {}, region[3] = {8, 8, 1}, row_pitch = 0;
  for (cl_map_flags flags : {cl_map_flags(CL_MAP_WRITE), cl_map_flags(CL_MAP_WRITE_INVALIDATE_REGION)}) {
    void *p = clEnqueueMapImage(queue, image, CL_TRUE, flags, origin, region, &row_pitch, nullptr, 0, nullptr, nullptr,
                                &err);
    EXPECT_CL(CL_SUCCESS, err) << "map flags " << flags;
    if (p) clEnqueueUnmapMemObject(queue, image, p, 0, nullptr, nullptr);
  }
  clEnqueueMapImage(queue, image, CL_TRUE, CL_MAP_READ, origin, region, &row_pitch, nullptr, 0, nullptr, nullptr, &err);
  EXPECT_CL(CL_INVALID_OPERATION, err);
  EXPECT_CL(CL_SUCCESS, clFinish(queue));
  clReleaseMemObject(image);
}

TEST_F(DriverBehaviour, HostReadOnlyAndNoAccessRefuseWritingMaps) {
  for (cl_mem_flags host : {cl_mem_flags(CL_MEM_HOST_READ_ONLY), cl_mem_flags(CL_MEM_HOST_NO_ACCESS)}) {
    cl_mem mem = create_buffer(context, CL_MEM_READ_WRITE | host, 256);
    for (cl_map_flags flags : {cl_map_flags(CL_MAP_WRITE), cl_map_flags(CL_MAP_WRITE_INVALIDATE_REGION)}) {
      cl_int err = CL_SUCCESS;
      clEnqueueMapBuffer(queue, mem, CL_TRUE, flags, 0, 64, 0, nullptr, nullptr, &err);
      EXPECT_CL(CL_INVALID_OPERATION, err) << "host flags " << host << ", map flags " << flags;
    }
    clReleaseMemObject(mem);
  }
}

// ---------------------------------------------------------------------------------------------
// Properties

TEST_F(DriverBehaviour, MemPropertiesEchoTheListGiven) {
  cl_mem_properties empty[] = {0};
  cl_int err;
  cl_mem with = clCreateBufferWithProperties(context, empty, CL_MEM_READ_WRITE, 64, nullptr, &err);
  ASSERT_CL_OK(err);
  cl_mem without = clCreateBufferWithProperties(context, nullptr, CL_MEM_READ_WRITE, 64, nullptr, &err);
  ASSERT_CL_OK(err);
  cl_image_format format = {CL_RGBA, CL_UNORM_INT8};
  cl_image_desc desc = {};
  desc.image_type = CL_MEM_OBJECT_IMAGE2D;
  desc.image_width = desc.image_height = 4;
  cl_mem image = clCreateImageWithProperties(context, empty, CL_MEM_READ_WRITE, &format, &desc, nullptr, &err);
  ASSERT_CL_OK(err);
  for (cl_mem mem : {with, image}) {
    size_t size = 0;
    cl_mem_properties value[2] = {7, 7};
    ASSERT_CL_OK(clGetMemObjectInfo(mem, CL_MEM_PROPERTIES, sizeof value, value, &size));
    EXPECT_EQ(sizeof(cl_mem_properties), size);  // as PoCL and NVIDIA answer
    EXPECT_EQ(0u, value[0]);
  }
  size_t size = 99;
  ASSERT_CL_OK(clGetMemObjectInfo(without, CL_MEM_PROPERTIES, 0, nullptr, &size));
  EXPECT_EQ(0u, size);
  for (cl_mem mem : {with, without, image}) clReleaseMemObject(mem);
}

TEST_F(DriverBehaviour, QueuePropertiesTheSpecificationCallsNotValid) {
  const cl_command_queue_properties invalid[] = {CL_QUEUE_ON_DEVICE, CL_QUEUE_ON_DEVICE | CL_QUEUE_PROFILING_ENABLE,
                                                 CL_QUEUE_ON_DEVICE_DEFAULT, cl_command_queue_properties(1) << 10};
  cl_int err;
  for (cl_command_queue_properties bits : invalid) {
    EXPECT_EQ(nullptr, clCreateCommandQueue(context, device, bits, &err));
    EXPECT_CL(CL_INVALID_VALUE, err) << "clCreateCommandQueue " << bits;
    cl_queue_properties list[] = {CL_QUEUE_PROPERTIES, bits, 0};
    EXPECT_EQ(nullptr, clCreateCommandQueueWithProperties(context, device, list, &err));
    EXPECT_CL(CL_INVALID_VALUE, err) << "clCreateCommandQueueWithProperties " << bits;
  }
  cl_queue_properties size_alone[] = {CL_QUEUE_SIZE, 1024, 0};
  EXPECT_EQ(nullptr, clCreateCommandQueueWithProperties(context, device, size_alone, &err));
  EXPECT_CL(CL_INVALID_VALUE, err);
  // A valid device-side queue that fedcl does not offer.
  cl_queue_properties device_side[] = {
      CL_QUEUE_PROPERTIES, CL_QUEUE_ON_DEVICE | CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE, 0};
  EXPECT_EQ(nullptr, clCreateCommandQueueWithProperties(context, device, device_side, &err));
  EXPECT_CL(CL_INVALID_QUEUE_PROPERTIES, err);
}

// ---------------------------------------------------------------------------------------------
// Rectangles and commands of no bytes

TEST_F(DriverBehaviour, RectangleCopyWhoseRowsInterleaveIsNoOverlap) {
  // Rows of 8 bytes, 16 apart: the source's rows start at x = 12 (running into the next row's first
  // 4 bytes), the destination's at x = 4. Their byte spans meet, but no byte is shared, which is
  // what the specification's check_copy_overlap says (PoCL copies it too).
  const size_t size = 256;
  std::vector<unsigned char> host(size);
  for (size_t i = 0; i < size; i++) host[i] = static_cast<unsigned char>(i);
  cl_mem mem = create_buffer(context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, size, host.data());
  size_t src[3] = {12, 0, 0}, dst[3] = {4, 1, 0}, region[3] = {8, 4, 1};
  ASSERT_CL_OK(clEnqueueCopyBufferRect(queue, mem, mem, src, dst, region, 16, 0, 16, 0, 0, nullptr, nullptr));
  std::vector<unsigned char> got(size);
  ASSERT_CL_OK(clEnqueueReadBuffer(queue, mem, CL_TRUE, 0, size, got.data(), 0, nullptr, nullptr));
  std::vector<unsigned char> expected = host;
  for (size_t y = 0; y < 4; y++)
    for (size_t x = 0; x < 8; x++) expected[20 + y * 16 + x] = host[12 + y * 16 + x];
  EXPECT_EQ(expected, got);
  // Rectangles that do share bytes stay refused.
  size_t near[3] = {13, 0, 0};
  EXPECT_CL(CL_MEM_COPY_OVERLAP, clEnqueueCopyBufferRect(queue, mem, mem, src, near, region, 16, 0, 16, 0, 0, nullptr,
                                                         nullptr));
  clReleaseMemObject(mem);
}

TEST_F(DriverBehaviour, ReadsAndWritesOfNoBytesCompleteInOrder) {
  int data = 5;
  cl_int err;
  cl_event gate = clCreateUserEvent(context, &err), wrote = nullptr;
  EXPECT_CL(CL_SUCCESS, clEnqueueReadBuffer(queue, out, CL_TRUE, 0, 0, &data, 0, nullptr, nullptr));
  EXPECT_CL(CL_SUCCESS, clEnqueueReadBuffer(queue, out, CL_TRUE, 4096, 0, &data, 0, nullptr, nullptr));  // at the end
  EXPECT_CL(CL_INVALID_VALUE, clEnqueueReadBuffer(queue, out, CL_TRUE, 4097, 0, &data, 0, nullptr, nullptr));
  EXPECT_CL(CL_INVALID_VALUE, clEnqueueReadBuffer(queue, out, CL_TRUE, 0, 0, nullptr, 0, nullptr, nullptr));
  ASSERT_CL_OK(clEnqueueWriteBuffer(queue, out, CL_FALSE, 0, 0, &data, 1, &gate, &wrote));
  expect_gated(gate, wrote);
}

// Where the backends disagree (NVIDIA accepts these, PoCL refuses them as the specification says),
// the backend's verdict comes back from the call itself; a refusal leaves no object, no event and
// no late error behind.
TEST_F(DriverBehaviour, BackendDecidesWhereBackendsDisagree) {
  cl_ulong max_alloc = 0;
  clGetDeviceInfo(device, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof max_alloc, &max_alloc, nullptr);
  cl_int err = CL_SUCCESS;
  EXPECT_EQ(nullptr, clCreateBuffer(context, CL_MEM_READ_WRITE, max_alloc + 1, nullptr, &err));
  EXPECT_CL(CL_INVALID_BUFFER_SIZE, err);
  cl_buffer_region misaligned = {1, 16};
  EXPECT_EQ(nullptr, clCreateSubBuffer(out, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &misaligned, &err));
  EXPECT_CL(CL_MISALIGNED_SUB_BUFFER_OFFSET, err);
  cl_mem other = create_buffer(context, CL_MEM_READ_WRITE, 64);
  cl_event event = nullptr;
  EXPECT_CL(CL_INVALID_VALUE, clEnqueueCopyBuffer(queue, out, other, 0, 0, 0, 0, nullptr, &event));
  EXPECT_EQ(nullptr, event);
  EXPECT_CL(CL_SUCCESS, clFinish(queue));
  clReleaseMemObject(other);
}

}  // namespace
