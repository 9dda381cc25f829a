// Programs beyond source and build: binaries, separate compilation and linking, build callbacks,
// built-in kernels, IL, sub-devices, sub-group queries and extension function lookup.
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <future>

#include "cl_harness.h"

using namespace fedcl_test;

namespace {

const char kTwiceDeclaration[] = "int twice(int x);\n";
const char kTwiceDefinition[] = "int twice(int x) { return 2 * x; }\n";
const char kUsesTwice[] = R"(
#include "twice.h"
__kernel void apply(__global int *x) { x[get_global_id(0)] = twice(x[get_global_id(0)]); }
)";

cl_program source_program(cl_context context, const char *source) {
  cl_int err;
  cl_program program = clCreateProgramWithSource(context, 1, &source, nullptr, &err);
  EXPECT_CL(CL_SUCCESS, err);
  return program;
}

template <typename T>
T program_build_value(cl_program program, cl_device_id device, cl_program_build_info param) {
  T value{};
  EXPECT_CL(CL_SUCCESS, clGetProgramBuildInfo(program, device, param, sizeof value, &value, nullptr));
  return value;
}

std::string program_build_text(cl_program program, cl_device_id device, cl_program_build_info param) {
  size_t size = 0;
  EXPECT_CL(CL_SUCCESS, clGetProgramBuildInfo(program, device, param, 0, nullptr, &size));
  std::string text(size, '\0');
  EXPECT_CL(CL_SUCCESS, clGetProgramBuildInfo(program, device, param, size, text.data(), nullptr));
  return text.c_str();
}

template <typename T>
T device_value(cl_device_id device, cl_device_info param) {
  T value{};
  EXPECT_CL(CL_SUCCESS, clGetDeviceInfo(device, param, sizeof value, &value, nullptr));
  return value;
}

// Each device's binary of program, in the order of CL_PROGRAM_DEVICES.
std::vector<std::vector<unsigned char>> program_binaries(cl_program program) {
  cl_uint count = 0;
  EXPECT_CL(CL_SUCCESS, clGetProgramInfo(program, CL_PROGRAM_NUM_DEVICES, sizeof count, &count, nullptr));
  std::vector<size_t> sizes(count);
  EXPECT_CL(CL_SUCCESS, clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, count * sizeof(size_t), sizes.data(), nullptr));
  std::vector<std::vector<unsigned char>> binaries(count);
  std::vector<unsigned char *> pointers(count);
  for (cl_uint i = 0; i < count; i++) {
    binaries[i].resize(sizes[i]);
    pointers[i] = binaries[i].data();
  }
  EXPECT_CL(CL_SUCCESS, clGetProgramInfo(program, CL_PROGRAM_BINARIES, count * sizeof(unsigned char *), pointers.data(), nullptr));
  return binaries;
}

// Runs kernel (one __global int * argument) over values on queue and returns what it left there.
std::vector<int> run_on(cl_context context, cl_command_queue queue, cl_kernel kernel, std::vector<int> values) {
  cl_mem buffer = create_buffer(context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, values.size() * sizeof(int), values.data());
  EXPECT_CL(CL_SUCCESS, clSetKernelArg(kernel, 0, sizeof buffer, &buffer));
  size_t global = values.size();
  EXPECT_CL(CL_SUCCESS, clEnqueueNDRangeKernel(queue, kernel, 1, nullptr, &global, nullptr, 0, nullptr, nullptr));
  EXPECT_CL(CL_SUCCESS, clEnqueueReadBuffer(queue, buffer, CL_TRUE, 0, values.size() * sizeof(int), values.data(), 0,
                                            nullptr, nullptr));
  clReleaseMemObject(buffer);
  return values;
}

// A build callback's report: which program it was called with, and with what user data.
struct BuildCallback {
  std::promise<std::pair<cl_program, void *>> called;
  static void CL_CALLBACK notify(cl_program program, void *user_data) {
    static_cast<BuildCallback *>(user_data)->called.set_value({program, user_data});
  }
  // Waits (bounded) for the call; returns the program it got, or null if none came.
  cl_program wait() {
    auto future = called.get_future();
    if (future.wait_for(std::chrono::seconds(30)) != std::future_status::ready) return nullptr;
    auto [program, user_data] = future.get();
    EXPECT_EQ(this, user_data);
    return program;
  }
};

struct Programs : OneDeviceFixture {};

}  // namespace

// ---------------------------------------------------------------------------------------------
// Binaries

TEST_F(Programs, BinaryRoundTripBuildsAndRuns) {
  cl_program built = build_program(context, kScaleSource);
  auto binaries = program_binaries(built);
  ASSERT_EQ(1u, binaries.size());
  ASSERT_FALSE(binaries[0].empty());

  size_t length = binaries[0].size();
  const unsigned char *data = binaries[0].data();
  cl_int status = -1, err;
  cl_program program = clCreateProgramWithBinary(context, 1, &device, &length, &data, &status, &err);
  ASSERT_CL_OK(err);
  EXPECT_CL(CL_SUCCESS, status);
  EXPECT_EQ(CL_PROGRAM_BINARY_TYPE_EXECUTABLE,
            program_build_value<cl_program_binary_type>(program, device, CL_PROGRAM_BINARY_TYPE));
  // A program from a binary has no source, and no kernels until it is built.
  size_t source_size = 0;
  EXPECT_CL(CL_SUCCESS, clGetProgramInfo(program, CL_PROGRAM_SOURCE, 0, nullptr, &source_size));
  EXPECT_EQ(1u, source_size);
  cl_int kernel_err;
  EXPECT_EQ(nullptr, clCreateKernel(program, "scale", &kernel_err));
  EXPECT_CL(CL_INVALID_PROGRAM_EXECUTABLE, kernel_err);

  ASSERT_CL_OK(clBuildProgram(program, 0, nullptr, "", nullptr, nullptr));
  EXPECT_EQ(CL_BUILD_SUCCESS, program_build_value<cl_build_status>(program, device, CL_PROGRAM_BUILD_STATUS));
  cl_kernel kernel = create_kernel(program, "scale");
  int factor = 7;
  ASSERT_CL_OK(clSetKernelArg(kernel, 1, sizeof factor, &factor));
  EXPECT_EQ((std::vector<int>{7, 14, -21, 0}), run_on(context, queue, kernel, {1, 2, -3, 0}));
  clReleaseKernel(kernel);
  clReleaseProgram(program);
  clReleaseProgram(built);
}

TEST_F(Programs, BadBinariesAreRejectedPerDevice) {
  const unsigned char garbage[] = "this is not a program binary";
  const unsigned char *data = garbage;
  size_t length = sizeof garbage;
  cl_int status = 0, err = 0;
  EXPECT_EQ(nullptr, clCreateProgramWithBinary(context, 1, &device, &length, &data, &status, &err));
  EXPECT_CL(CL_INVALID_BINARY, err);
  EXPECT_CL(CL_INVALID_BINARY, status);

  length = 0;
  EXPECT_EQ(nullptr, clCreateProgramWithBinary(context, 1, &device, &length, &data, &status, &err));
  EXPECT_CL(CL_INVALID_VALUE, err);
  EXPECT_CL(CL_INVALID_VALUE, status);

  length = sizeof garbage;
  EXPECT_EQ(nullptr, clCreateProgramWithBinary(context, 0, nullptr, &length, &data, &status, &err));
  EXPECT_CL(CL_INVALID_VALUE, err);
  EXPECT_EQ(nullptr, clCreateProgramWithBinary(nullptr, 1, &device, &length, &data, &status, &err));
  EXPECT_CL(CL_INVALID_CONTEXT, err);
}

// ---------------------------------------------------------------------------------------------
// Separate compilation and linking

TEST_F(Programs, CompileWithHeaderThenLinkLibraryAndExecutable) {
  cl_program header = source_program(context, kTwiceDeclaration);
  cl_program user = source_program(context, kUsesTwice);
  cl_program definition = source_program(context, kTwiceDefinition);
  const char *include_name = "twice.h";
  ASSERT_CL_OK(clCompileProgram(user, 1, &device, "-DUNUSED=1", 1, &header, &include_name, nullptr, nullptr));
  ASSERT_CL_OK(clCompileProgram(definition, 0, nullptr, "", 0, nullptr, nullptr, nullptr, nullptr));
  EXPECT_EQ(CL_PROGRAM_BINARY_TYPE_COMPILED_OBJECT,
            program_build_value<cl_program_binary_type>(user, device, CL_PROGRAM_BINARY_TYPE));
  EXPECT_EQ(CL_BUILD_SUCCESS, program_build_value<cl_build_status>(user, device, CL_PROGRAM_BUILD_STATUS));
  EXPECT_EQ("-DUNUSED=1", program_build_text(user, device, CL_PROGRAM_BUILD_OPTIONS));
  // A compiled object is no executable.
  cl_int err;
  EXPECT_EQ(nullptr, clCreateKernel(user, "apply", &err));
  EXPECT_CL(CL_INVALID_PROGRAM_EXECUTABLE, err);
  size_t kernels = 0;
  EXPECT_CL(CL_INVALID_PROGRAM_EXECUTABLE, clGetProgramInfo(user, CL_PROGRAM_NUM_KERNELS, sizeof kernels, &kernels, nullptr));

  cl_program library = clLinkProgram(context, 1, &device, "-create-library", 1, &definition, nullptr, nullptr, &err);
  ASSERT_CL_OK(err);
  EXPECT_EQ(CL_PROGRAM_BINARY_TYPE_LIBRARY,
            program_build_value<cl_program_binary_type>(library, device, CL_PROGRAM_BINARY_TYPE));

  cl_program inputs[] = {user, library};
  cl_program linked = clLinkProgram(context, 0, nullptr, "", 2, inputs, nullptr, nullptr, &err);
  ASSERT_CL_OK(err);
  EXPECT_EQ(CL_PROGRAM_BINARY_TYPE_EXECUTABLE,
            program_build_value<cl_program_binary_type>(linked, device, CL_PROGRAM_BINARY_TYPE));
  cl_uint devices = 0;
  EXPECT_CL(CL_SUCCESS, clGetProgramInfo(linked, CL_PROGRAM_NUM_DEVICES, sizeof devices, &devices, nullptr));
  EXPECT_EQ(1u, devices);
  EXPECT_CL(CL_SUCCESS, clGetProgramInfo(linked, CL_PROGRAM_NUM_KERNELS, sizeof kernels, &kernels, nullptr));
  EXPECT_EQ(1u, kernels);
  cl_kernel kernel = create_kernel(linked, "apply");
  EXPECT_EQ((std::vector<int>{42, -8, 0}), run_on(context, queue, kernel, {21, -4, 0}));

  clReleaseKernel(kernel);
  for (cl_program program : {linked, library, definition, user, header}) clReleaseProgram(program);
}

TEST_F(Programs, CompileAndLinkFailuresKeepTheirLogs) {
  cl_program broken = source_program(context, "__kernel void k(__global int *x) { x[0] = undeclared; }");
  EXPECT_CL(CL_COMPILE_PROGRAM_FAILURE, clCompileProgram(broken, 0, nullptr, "", 0, nullptr, nullptr, nullptr, nullptr));
  EXPECT_EQ(CL_BUILD_ERROR, program_build_value<cl_build_status>(broken, device, CL_PROGRAM_BUILD_STATUS));
  EXPECT_NE(std::string::npos, program_build_text(broken, device, CL_PROGRAM_BUILD_LOG).find("undeclared"));

  // twice() is declared but defined nowhere: the link fails.
  cl_program user = source_program(context, "int twice(int x);\n__kernel void k(__global int *x) { x[0] = twice(x[0]); }");
  ASSERT_CL_OK(clCompileProgram(user, 0, nullptr, "", 0, nullptr, nullptr, nullptr, nullptr));
  cl_int err;
  cl_program linked = clLinkProgram(context, 1, &device, "", 1, &user, nullptr, nullptr, &err);
  EXPECT_CL(CL_LINK_PROGRAM_FAILURE, err);
  if (linked) {
    EXPECT_EQ(CL_BUILD_ERROR, program_build_value<cl_build_status>(linked, device, CL_PROGRAM_BUILD_STATUS));
    clReleaseProgram(linked);
  }
  clReleaseProgram(user);
  clReleaseProgram(broken);
}

TEST_F(Programs, CompileAndLinkCheckTheirArguments) {
  cl_program program = source_program(context, kTwiceDefinition);
  cl_program header = source_program(context, kTwiceDeclaration);
  const char *name = "twice.h";
  EXPECT_CL(CL_INVALID_PROGRAM, clCompileProgram(nullptr, 0, nullptr, "", 0, nullptr, nullptr, nullptr, nullptr));
  EXPECT_CL(CL_INVALID_VALUE, clCompileProgram(program, 1, nullptr, "", 0, nullptr, nullptr, nullptr, nullptr));
  EXPECT_CL(CL_INVALID_VALUE, clCompileProgram(program, 0, nullptr, "", 1, &header, nullptr, nullptr, nullptr));
  EXPECT_CL(CL_INVALID_VALUE, clCompileProgram(program, 0, nullptr, "", 0, &header, &name, nullptr, nullptr));
  int user_data = 0;
  EXPECT_CL(CL_INVALID_VALUE, clCompileProgram(program, 0, nullptr, "", 0, nullptr, nullptr, nullptr, &user_data));

  // Only programs with source compile.
  cl_program built = build_program(context, kScaleSource);
  auto binaries = program_binaries(built);
  size_t length = binaries[0].size();
  const unsigned char *data = binaries[0].data();
  cl_int err;
  cl_program from_binary = clCreateProgramWithBinary(context, 1, &device, &length, &data, nullptr, &err);
  ASSERT_CL_OK(err);
  EXPECT_CL(CL_INVALID_OPERATION, clCompileProgram(from_binary, 0, nullptr, "", 0, nullptr, nullptr, nullptr, nullptr));

  EXPECT_EQ(nullptr, clLinkProgram(context, 0, nullptr, "", 0, nullptr, nullptr, nullptr, &err));
  EXPECT_CL(CL_INVALID_VALUE, err);
  EXPECT_EQ(nullptr, clLinkProgram(nullptr, 0, nullptr, "", 1, &program, nullptr, nullptr, &err));
  EXPECT_CL(CL_INVALID_CONTEXT, err);
  cl_program invalid = nullptr;
  EXPECT_EQ(nullptr, clLinkProgram(context, 0, nullptr, "", 1, &invalid, nullptr, nullptr, &err));
  EXPECT_CL(CL_INVALID_PROGRAM, err);
  // Nothing compiled yet: no device has an object to link.
  EXPECT_EQ(nullptr, clLinkProgram(context, 0, nullptr, "", 1, &program, nullptr, nullptr, &err));
  EXPECT_CL(CL_INVALID_OPERATION, err);

  for (cl_program p : {from_binary, built, header, program}) clReleaseProgram(p);
}

TEST_F(Programs, BuildCompileAndLinkCallbacksRun) {
  cl_program program = source_program(context, kScaleSource);
  BuildCallback built;
  ASSERT_CL_OK(clBuildProgram(program, 0, nullptr, "", BuildCallback::notify, &built));
  EXPECT_EQ(program, built.wait());

  cl_program definition = source_program(context, kTwiceDefinition);
  BuildCallback compiled;
  ASSERT_CL_OK(clCompileProgram(definition, 0, nullptr, "", 0, nullptr, nullptr, BuildCallback::notify, &compiled));
  EXPECT_EQ(definition, compiled.wait());

  BuildCallback linked;
  cl_int err;
  cl_program library = clLinkProgram(context, 0, nullptr, "-create-library", 1, &definition, BuildCallback::notify,
                                     &linked, &err);
  ASSERT_CL_OK(err);
  EXPECT_EQ(library, linked.wait());
  for (cl_program p : {library, definition, program}) clReleaseProgram(p);
}

// ---------------------------------------------------------------------------------------------
// What fedcl does not offer, refused as the specification says

TEST_F(Programs, NoIntermediateLanguage) {
  EXPECT_EQ("", device_string(device, CL_DEVICE_IL_VERSION));
  size_t size = 1;
  EXPECT_CL(CL_SUCCESS, clGetDeviceInfo(device, CL_DEVICE_ILS_WITH_VERSION, 0, nullptr, &size));
  EXPECT_EQ(0u, size);
  const uint32_t spirv_magic[] = {0x07230203, 0x00010000, 0, 1, 0};
  cl_int err;
  EXPECT_EQ(nullptr, clCreateProgramWithIL(context, spirv_magic, sizeof spirv_magic, &err));
  EXPECT_CL(CL_INVALID_OPERATION, err);
  EXPECT_EQ(nullptr, clCreateProgramWithIL(context, nullptr, 0, &err));
  EXPECT_CL(CL_INVALID_VALUE, err);

  cl_program program = source_program(context, kScaleSource);
  int value = 1;
  EXPECT_CL(CL_INVALID_OPERATION, clSetProgramSpecializationConstant(program, 0, sizeof value, &value));
  EXPECT_CL(CL_INVALID_PROGRAM, clSetProgramSpecializationConstant(nullptr, 0, sizeof value, &value));
  size_t il_size = 1;
  EXPECT_CL(CL_SUCCESS, clGetProgramInfo(program, CL_PROGRAM_IL, 0, nullptr, &il_size));
  EXPECT_EQ(0u, il_size);
  clReleaseProgram(program);
}

TEST_F(Programs, ProgramReleaseCallbackIsRefused) {
  cl_program program = source_program(context, kScaleSource);
  // No program-scope global constructors or destructors: OpenCL 3.0 lets the call fail.
  EXPECT_CL(CL_INVALID_OPERATION, clSetProgramReleaseCallback(program, BuildCallback::notify, nullptr));
  EXPECT_CL(CL_INVALID_VALUE, clSetProgramReleaseCallback(program, nullptr, nullptr));
  EXPECT_CL(CL_INVALID_PROGRAM, clSetProgramReleaseCallback(nullptr, BuildCallback::notify, nullptr));
  clReleaseProgram(program);
}

TEST_F(Programs, BuiltInKernelsAreCheckedAgainstTheDevice) {
  std::string names = device_string(device, CL_DEVICE_BUILT_IN_KERNELS);
  cl_int err;
  EXPECT_EQ(nullptr, clCreateProgramWithBuiltInKernels(context, 1, &device, "no.such.kernel", &err));
  EXPECT_CL(CL_INVALID_VALUE, err);
  EXPECT_EQ(nullptr, clCreateProgramWithBuiltInKernels(context, 1, &device, nullptr, &err));
  EXPECT_CL(CL_INVALID_VALUE, err);
  if (names.empty()) GTEST_SKIP() << "the device has no built-in kernels";
  std::string first = names.substr(0, names.find(';'));
  cl_program program = clCreateProgramWithBuiltInKernels(context, 1, &device, first.c_str(), &err);
  ASSERT_CL_OK(err);
  cl_uint count = 0;
  EXPECT_CL(CL_SUCCESS, clGetProgramInfo(program, CL_PROGRAM_NUM_DEVICES, sizeof count, &count, nullptr));
  EXPECT_EQ(1u, count);
  clReleaseProgram(program);
}

TEST_F(Programs, SubGroupQueriesFollowTheDevice) {
  cl_program program = build_program(context, kScaleSource);
  cl_kernel kernel = create_kernel(program, "scale");
  size_t local = 8, value = 0;
  cl_int err = clGetKernelSubGroupInfo(kernel, device, CL_KERNEL_MAX_SUB_GROUP_SIZE_FOR_NDRANGE, sizeof local, &local,
                                       sizeof value, &value, nullptr);
  if (device_value<cl_uint>(device, CL_DEVICE_MAX_NUM_SUB_GROUPS) == 0) {
    EXPECT_CL(CL_INVALID_OPERATION, err);  // the device has no sub-groups
  } else {
    EXPECT_CL(CL_SUCCESS, err);
    EXPECT_GT(value, 0u);
  }
  EXPECT_CL(CL_INVALID_KERNEL, clGetKernelSubGroupInfo(nullptr, device, CL_KERNEL_MAX_SUB_GROUP_SIZE_FOR_NDRANGE,
                                                       sizeof local, &local, sizeof value, &value, nullptr));
  clReleaseKernel(kernel);
  clReleaseProgram(program);
}

TEST_F(Programs, ExtensionFunctionsAreFedclsOwn) {
  using SubGroupInfo = cl_int(CL_API_CALL *)(cl_kernel, cl_device_id, cl_kernel_sub_group_info, size_t, const void *,
                                             size_t, void *, size_t *);
  auto khr = reinterpret_cast<SubGroupInfo>(
      clGetExtensionFunctionAddressForPlatform(cluster.platform, "clGetKernelSubGroupInfoKHR"));
  ASSERT_NE(nullptr, khr);
  size_t local = 8, value = 0;
  EXPECT_CL(CL_INVALID_KERNEL, khr(nullptr, device, CL_KERNEL_MAX_SUB_GROUP_SIZE_FOR_NDRANGE, sizeof local, &local,
                                   sizeof value, &value, nullptr));
  EXPECT_NE(nullptr, clGetExtensionFunctionAddressForPlatform(cluster.platform, "clIcdGetPlatformIDsKHR"));
  // Command buffers are fedcl's own (replayed by its daemon), whatever version the backend has.
  EXPECT_NE(nullptr, clGetExtensionFunctionAddressForPlatform(cluster.platform, "clCreateCommandBufferKHR"));
  // Functions of extensions fedcl does not implement are not handed out, even where the backend has them.
  for (const char *name : {"clCreateProgramWithILKHR", "clCommandSVMMemcpyKHR", "clGetDeviceIDsFromDX9INTEL",
                           "clNoSuchFunction"})
    EXPECT_EQ(nullptr, clGetExtensionFunctionAddressForPlatform(cluster.platform, name)) << name;
}

// ---------------------------------------------------------------------------------------------
// Sub-devices

TEST(SubDevices, PartitionEquallyAndUseTheParts) {
  Cluster cluster(1);
  cl_device_id device = cluster.devices.at(0);
  size_t size = 0;
  ASSERT_CL_OK(clGetDeviceInfo(device, CL_DEVICE_PARTITION_PROPERTIES, 0, nullptr, &size));
  std::vector<cl_device_partition_property> schemes(size / sizeof(cl_device_partition_property));
  ASSERT_CL_OK(clGetDeviceInfo(device, CL_DEVICE_PARTITION_PROPERTIES, size, schemes.data(), nullptr));
  if (std::find(schemes.begin(), schemes.end(), CL_DEVICE_PARTITION_EQUALLY) == schemes.end())
    GTEST_SKIP() << "the device cannot be partitioned equally";
  cl_uint units = device_value<cl_uint>(device, CL_DEVICE_MAX_COMPUTE_UNITS);
  EXPECT_GE(device_value<cl_uint>(device, CL_DEVICE_PARTITION_MAX_SUB_DEVICES), 1u);

  const cl_device_partition_property equally[] = {CL_DEVICE_PARTITION_EQUALLY, 1, 0};
  cl_uint count = 0;
  ASSERT_CL_OK(clCreateSubDevices(device, equally, 0, nullptr, &count));
  EXPECT_EQ(units, count);
  std::vector<cl_device_id> parts(count);
  if (count > 1) {
    EXPECT_CL(CL_INVALID_VALUE, clCreateSubDevices(device, equally, count - 1, parts.data(), nullptr));
  }
  ASSERT_CL_OK(clCreateSubDevices(device, equally, count, parts.data(), &count));
  ASSERT_EQ(units, count);

  cl_device_id part = parts[0];
  EXPECT_EQ(device, device_value<cl_device_id>(part, CL_DEVICE_PARENT_DEVICE));
  EXPECT_EQ(nullptr, device_value<cl_device_id>(device, CL_DEVICE_PARENT_DEVICE));
  EXPECT_EQ(1u, device_value<cl_uint>(part, CL_DEVICE_MAX_COMPUTE_UNITS));
  cl_device_partition_property type[3] = {};
  ASSERT_CL_OK(clGetDeviceInfo(part, CL_DEVICE_PARTITION_TYPE, sizeof type, type, &size));
  EXPECT_EQ(CL_DEVICE_PARTITION_EQUALLY, type[0]);
  EXPECT_EQ(1, type[1]);
  EXPECT_NE(std::string::npos, device_string(part, CL_DEVICE_NAME).find(" @ node0"));

  // Reference counts are the application's alone: a context does not add to them.
  EXPECT_EQ(1u, device_value<cl_uint>(part, CL_DEVICE_REFERENCE_COUNT));
  cl_int err;
  cl_context context = clCreateContext(nullptr, 1, &part, nullptr, nullptr, &err);
  ASSERT_CL_OK(err);
  EXPECT_EQ(1u, device_value<cl_uint>(part, CL_DEVICE_REFERENCE_COUNT));
  ASSERT_CL_OK(clRetainDevice(part));
  EXPECT_EQ(2u, device_value<cl_uint>(part, CL_DEVICE_REFERENCE_COUNT));
  ASSERT_CL_OK(clReleaseDevice(part));
  EXPECT_EQ(1u, device_value<cl_uint>(part, CL_DEVICE_REFERENCE_COUNT));
  // Root devices are not counted.
  EXPECT_CL(CL_SUCCESS, clRetainDevice(device));
  EXPECT_CL(CL_SUCCESS, clReleaseDevice(device));
  EXPECT_EQ(1u, device_value<cl_uint>(device, CL_DEVICE_REFERENCE_COUNT));

  // The part builds and runs kernels, and keeps doing so after the application released it.
  cl_command_queue queue = create_queue(context, part);
  cl_program program = build_program(context, kScaleSource);
  cl_kernel kernel = create_kernel(program, "scale");
  int factor = 3;
  ASSERT_CL_OK(clSetKernelArg(kernel, 1, sizeof factor, &factor));
  for (cl_device_id p : parts) ASSERT_CL_OK(clReleaseDevice(p));
  EXPECT_EQ((std::vector<int>{3, 6, 9}), run_on(context, queue, kernel, {1, 2, 3}));
  cl_device_id queue_device = nullptr;
  EXPECT_CL(CL_SUCCESS, clGetCommandQueueInfo(queue, CL_QUEUE_DEVICE, sizeof queue_device, &queue_device, nullptr));
  EXPECT_EQ(part, queue_device);
  clReleaseKernel(kernel);
  clReleaseProgram(program);
  clReleaseCommandQueue(queue);
  clReleaseContext(context);
}

TEST(SubDevices, PartitionByCountsAndRefuseWhatTheDeviceLacks) {
  Cluster cluster(1);
  cl_device_id device = cluster.devices.at(0);
  cl_device_partition_property schemes[8] = {};
  ASSERT_CL_OK(clGetDeviceInfo(device, CL_DEVICE_PARTITION_PROPERTIES, sizeof schemes, schemes, nullptr));
  bool by_counts = false, by_affinity = false;
  for (auto scheme : schemes) {
    by_counts |= scheme == CL_DEVICE_PARTITION_BY_COUNTS;
    by_affinity |= scheme == CL_DEVICE_PARTITION_BY_AFFINITY_DOMAIN;
  }
  cl_device_id parts[4] = {};
  cl_uint count = 0;
  if (!by_affinity) {
    const cl_device_partition_property affinity[] = {CL_DEVICE_PARTITION_BY_AFFINITY_DOMAIN,
                                                     CL_DEVICE_AFFINITY_DOMAIN_NEXT_PARTITIONABLE, 0};
    EXPECT_CL(CL_INVALID_VALUE, clCreateSubDevices(device, affinity, 4, parts, &count));
  }
  const cl_device_partition_property unknown[] = {0x7777, 1, 0};
  EXPECT_CL(CL_INVALID_VALUE, clCreateSubDevices(device, unknown, 4, parts, &count));
  EXPECT_CL(CL_INVALID_VALUE, clCreateSubDevices(device, nullptr, 4, parts, &count));
  EXPECT_CL(CL_INVALID_DEVICE, clCreateSubDevices(nullptr, schemes, 4, parts, &count));
  if (!by_counts) GTEST_SKIP() << "the device cannot be partitioned by counts";

  const cl_device_partition_property one[] = {CL_DEVICE_PARTITION_BY_COUNTS, 1, CL_DEVICE_PARTITION_BY_COUNTS_LIST_END, 0};
  ASSERT_CL_OK(clCreateSubDevices(device, one, 4, parts, &count));
  ASSERT_EQ(1u, count);
  cl_device_partition_property type[4] = {};
  size_t size = 0;
  ASSERT_CL_OK(clGetDeviceInfo(parts[0], CL_DEVICE_PARTITION_TYPE, sizeof type, type, &size));
  EXPECT_EQ(CL_DEVICE_PARTITION_BY_COUNTS, type[0]);
  EXPECT_EQ(1, type[1]);
  // More compute units than the device has.
  cl_uint units = device_value<cl_uint>(device, CL_DEVICE_MAX_COMPUTE_UNITS);
  const cl_device_partition_property too_many[] = {CL_DEVICE_PARTITION_BY_COUNTS, cl_device_partition_property(units + 1),
                                                   CL_DEVICE_PARTITION_BY_COUNTS_LIST_END, 0};
  EXPECT_CL(CL_INVALID_DEVICE_PARTITION_COUNT, clCreateSubDevices(device, too_many, 4, parts + 1, &count));
  ASSERT_CL_OK(clReleaseDevice(parts[0]));
}

// ---------------------------------------------------------------------------------------------
// Two daemons

TEST(ProgramsOnTwoDaemons, BinariesAndSeparateCompilationSpanDaemons) {
  Cluster cluster(2);
  ASSERT_EQ(2u, cluster.devices.size());
  cl_int err;
  cl_context both = clCreateContext(nullptr, 2, cluster.devices.data(), nullptr, nullptr, &err);
  ASSERT_CL_OK(err);

  // Binaries of both devices, then a program from them that runs on each.
  cl_program built = build_program(both, kScaleSource);
  auto binaries = program_binaries(built);
  ASSERT_EQ(2u, binaries.size());
  size_t lengths[2] = {binaries[0].size(), binaries[1].size()};
  const unsigned char *data[2] = {binaries[0].data(), binaries[1].data()};
  cl_int statuses[2] = {-1, -1};
  cl_program program = clCreateProgramWithBinary(both, 2, cluster.devices.data(), lengths, data, statuses, &err);
  ASSERT_CL_OK(err);
  EXPECT_CL(CL_SUCCESS, statuses[0]);
  EXPECT_CL(CL_SUCCESS, statuses[1]);
  ASSERT_CL_OK(clBuildProgram(program, 0, nullptr, "", nullptr, nullptr));
  cl_kernel kernel = create_kernel(program, "scale");
  int factor = -2;
  ASSERT_CL_OK(clSetKernelArg(kernel, 1, sizeof factor, &factor));
  for (cl_device_id device : cluster.devices) {
    cl_command_queue queue = create_queue(both, device);
    EXPECT_EQ((std::vector<int>{-2, 4}), run_on(both, queue, kernel, {1, -2}));
    clReleaseCommandQueue(queue);
  }
  clReleaseKernel(kernel);

  // A header whose program lives only on the first daemon still serves a compile on the second.
  cl_context first = clCreateContext(nullptr, 1, &cluster.devices[0], nullptr, nullptr, &err);
  ASSERT_CL_OK(err);
  cl_context second = clCreateContext(nullptr, 1, &cluster.devices[1], nullptr, nullptr, &err);
  ASSERT_CL_OK(err);
  cl_program header = source_program(first, kTwiceDeclaration);
  cl_program user = source_program(second, kUsesTwice);
  cl_program definition = source_program(second, kTwiceDefinition);
  const char *include_name = "twice.h";
  ASSERT_CL_OK(clCompileProgram(user, 0, nullptr, "", 1, &header, &include_name, nullptr, nullptr));
  ASSERT_CL_OK(clCompileProgram(definition, 0, nullptr, "", 0, nullptr, nullptr, nullptr, nullptr));
  cl_program inputs[] = {user, definition};
  cl_program linked = clLinkProgram(second, 0, nullptr, "", 2, inputs, nullptr, nullptr, &err);
  ASSERT_CL_OK(err);
  cl_kernel apply = create_kernel(linked, "apply");
  cl_command_queue queue = create_queue(second, cluster.devices[1]);
  EXPECT_EQ((std::vector<int>{10, 12}), run_on(second, queue, apply, {5, 6}));

  clReleaseCommandQueue(queue);
  clReleaseKernel(apply);
  for (cl_program p : {linked, definition, user, header, program, built}) clReleaseProgram(p);
  for (cl_context c : {second, first, both}) clReleaseContext(c);
}

// Kernel names of any length: the daemon reads every name, log and option string at the size the
// backend reports (it used to cut names at 1024 bytes, and NVIDIA then wrote past its buffer).
TEST_F(Programs, KernelNamesOfAnyLength) {
  for (size_t length : {1023, 1024, 1025, 5000}) {
    std::string name = "k" + std::string(length - 1, 'x');
    std::string source = "kernel void " + name + "(global int *x) { x[0] = 1; }\nkernel void other() {}\n";
    cl_program program = build_program(context, source);
    cl_int err = CL_SUCCESS;
    cl_kernel kernel = clCreateKernel(program, name.c_str(), &err);
    ASSERT_CL_OK(err) << "name of " << length << " characters";
    size_t size = 0;
    ASSERT_CL_OK(clGetKernelInfo(kernel, CL_KERNEL_FUNCTION_NAME, 0, nullptr, &size));
    EXPECT_EQ(length + 1, size);
    std::string got(size, '\0');
    ASSERT_CL_OK(clGetKernelInfo(kernel, CL_KERNEL_FUNCTION_NAME, size, got.data(), nullptr));
    EXPECT_EQ(name, got.c_str());
    size_t names_size = 0;
    ASSERT_CL_OK(clGetProgramInfo(program, CL_PROGRAM_KERNEL_NAMES, 0, nullptr, &names_size));
    EXPECT_EQ(length + 1 + 6, names_size);  // "NAME;other" and its terminator
    clReleaseKernel(kernel);
    clReleaseProgram(program);
  }
}

// What test_compiler kernel_name_size of the Khronos CTS does, on a daemon that never lets the
// backend list long kernel names (as on NVIDIA, whose heap that corrupts): programs built, and
// compiled then linked, with kernel names of 32 to 2048 characters. A linked program's names come
// from its inputs' sources: without them it would have no kernels (CL_INVALID_KERNEL_NAME). A built
// one's come from its source, with their argument metadata (else the wrong size below would pass;
// linked programs have none: docs/design-decisions.md, "Programs and sub-devices"). The kernels are
// not run: PoCL itself fails to launch a kernel whose name is over about 250 characters.
struct DaemonLog {
  StderrCapture log;  // before the daemon starts (a base that comes first): its log lands here too
};
struct GuardedKernelNames : DaemonLog, OneDeviceFixture {
  GuardedKernelNames() : OneDeviceFixture({"--kernel-name-guard", "256", "--log-level", "info"}) {}
};

TEST_F(GuardedKernelNames, BuiltAndLinkedProgramsKeepTheirKernels) {
  for (size_t length = 32; length <= 2048; length *= 2) {
    std::string name;
    for (size_t i = 0; i < length; i++) name += char('a' + i % 26);
    std::string source = "__kernel void " + name + "(int src, __global int *dst) { dst[0] = src; }\n";
    const char *text = source.c_str();
    cl_int err = CL_SUCCESS;
    cl_program compiled = clCreateProgramWithSource(context, 1, &text, nullptr, &err);
    ASSERT_CL_OK(err);
    ASSERT_CL_OK(clCompileProgram(compiled, 0, nullptr, "", 0, nullptr, nullptr, nullptr, nullptr));
    cl_program linked = clLinkProgram(context, 0, nullptr, "", 1, &compiled, nullptr, nullptr, &err);
    ASSERT_CL_OK(err) << "a name of " << length;
    cl_program built = build_program(context, source);
    for (cl_program program : {built, linked}) {
      cl_kernel kernel = clCreateKernel(program, name.c_str(), &err);
      ASSERT_CL_OK(err) << "a name of " << length;
      size_t size = 0;
      ASSERT_CL_OK(clGetKernelInfo(kernel, CL_KERNEL_FUNCTION_NAME, 0, nullptr, &size));
      std::string got(size, '\0');
      ASSERT_CL_OK(clGetKernelInfo(kernel, CL_KERNEL_FUNCTION_NAME, size, got.data(), nullptr));
      EXPECT_EQ(name, got.c_str());
      short wrong_size = 0;
      if (program == built) {
        EXPECT_CL(CL_INVALID_ARG_SIZE, clSetKernelArg(kernel, 0, sizeof wrong_size, &wrong_size));
      }
      clReleaseKernel(kernel);
    }
    for (cl_program program : {built, linked, compiled}) clReleaseProgram(program);
  }
  // Each program with a name over the guard (512, 1024 and 2048 characters; built and linked) had
  // its kernels made by name, not listed by the backend.
  std::string log = this->log.text();
  EXPECT_EQ(6u, count_occurrences(log, "from its text")) << log;
}

// The application's build is exactly what it asked for: fedcl adds no option (NVIDIA cannot build an
// argument-less kernel with -cl-kernel-arg-info), CL_PROGRAM_BUILD_OPTIONS is the backend's answer,
// and argument info is available exactly when the backend offers it.
TEST_F(Programs, BuildsAreTheApplicationsOwn) {
  cl_program program = build_program(context, "void kernel test(){}\nkernel void store(global int *x, int v) { x[0] = v; }\n");
  size_t size = 0;
  ASSERT_CL_OK(clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_OPTIONS, 0, nullptr, &size));
  std::string options(size, '\0');
  ASSERT_CL_OK(clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_OPTIONS, size, options.data(), nullptr));
  EXPECT_EQ("", std::string(options.c_str()));
  cl_kernel test = create_kernel(program, "test");
  size_t one = 1;
  EXPECT_CL(CL_SUCCESS, clEnqueueNDRangeKernel(queue, test, 1, nullptr, &one, nullptr, 0, nullptr, nullptr));
  EXPECT_CL(CL_SUCCESS, clFinish(queue));
  cl_kernel store = create_kernel(program, "store");
  cl_kernel_arg_address_qualifier address = 0;
  // PoCL without -cl-kernel-arg-info keeps the info to itself, and so does fedcl...
  EXPECT_CL(CL_KERNEL_ARG_INFO_NOT_AVAILABLE,
            clGetKernelArgInfo(store, 0, CL_KERNEL_ARG_ADDRESS_QUALIFIER, sizeof address, &address, nullptr));
  // ... while still checking arguments itself, from the daemon's metadata twin.
  int v = 3;
  EXPECT_CL(CL_INVALID_ARG_SIZE, clSetKernelArg(store, 1, 2, &v));
  EXPECT_CL(CL_INVALID_MEM_OBJECT, clSetKernelArg(store, 0, sizeof(cl_mem), &queue));
  cl_mem out = create_buffer(context, CL_MEM_READ_WRITE, sizeof(int));
  set_arg(store, 0, out);
  set_arg(store, 1, v);
  EXPECT_CL(CL_SUCCESS, clEnqueueNDRangeKernel(queue, store, 1, nullptr, &one, nullptr, 0, nullptr, nullptr));
  int back = 0;
  ASSERT_CL_OK(clEnqueueReadBuffer(queue, out, CL_TRUE, 0, sizeof back, &back, 0, nullptr, nullptr));
  EXPECT_EQ(3, back);
  clReleaseMemObject(out);
  clReleaseKernel(store);
  clReleaseKernel(test);
  clReleaseProgram(program);

  // A failed option: the backend's status and its (empty) record of the options.
  const char *source = "kernel void f(global int *x) { }";
  program = clCreateProgramWithSource(context, 1, &source, nullptr, nullptr);
  EXPECT_CL(CL_INVALID_BUILD_OPTIONS, clBuildProgram(program, 1, &device, "-cl-no-such-option", nullptr, nullptr));
  ASSERT_CL_OK(clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_OPTIONS, 0, nullptr, &size));
  EXPECT_EQ(1u, size);
  clReleaseProgram(program);
}

// ---------------------------------------------------------------------------------------------
// The application's -I folders

// A header in a folder of the application's (-I), as PyOpenCL's test_header_dep_handling has: the
// daemon's confined worker may not read it where it is, and a daemon on another node would not find
// it there at all; the client sends it with the build.
TEST_F(Programs, HeadersFromTheApplicationsIncludeFoldersReachTheCompiler) {
  std::string folder = ::testing::TempDir() + "fedcl-includes-" + std::to_string(getpid());
  mkdir(folder.c_str(), 0700);
  mkdir((folder + "/lib").c_str(), 0700);
  std::ofstream(folder + "/values.h") << "#include \"lib/more.h\"\n#define BASE 40\n";
  std::ofstream(folder + "/lib/more.h") << "#define MORE 2\n";
  cl_program program = source_program(context, "#include <values.h>\n"
                                               "kernel void set(global int *x) { x[get_global_id(0)] = BASE + MORE; }\n");
  std::string options = "-I " + folder + " -DUNUSED=1";
  cl_int built = clBuildProgram(program, 1, &device, options.c_str(), nullptr, nullptr);
  EXPECT_CL(CL_SUCCESS, built) << program_build_text(program, device, CL_PROGRAM_BUILD_LOG);
  if (built == CL_SUCCESS) {
    cl_kernel kernel = create_kernel(program, "set");
    EXPECT_EQ(std::vector<int>(4, 42), run_on(context, queue, kernel, std::vector<int>(4, 0)));
    clReleaseKernel(kernel);
  }
  // The same through clCompileProgram, and again (a second build finds its headers as the first did).
  cl_program compiled = source_program(context, "#include \"values.h\"\nint twice_base(void) { return 2 * BASE; }\n");
  EXPECT_CL(CL_SUCCESS, clCompileProgram(compiled, 1, &device, ("-I" + folder).c_str(), 0, nullptr, nullptr, nullptr, nullptr))
      << program_build_text(compiled, device, CL_PROGRAM_BUILD_LOG);
  EXPECT_CL(CL_SUCCESS, clBuildProgram(program, 1, &device, options.c_str(), nullptr, nullptr));
  clReleaseProgram(compiled);
  clReleaseProgram(program);
  std::system(("rm -rf '" + folder + "'").c_str());
}

// A header the source names by absolute path, as the CTS's compiler preprocessor_include does: the
// confined worker may not read it there, a daemon elsewhere never had it; it goes with the source, and
// what it includes beside it too. The application's clGetProgramInfo still shows the source it gave.
TEST_F(Programs, HeadersTheSourceNamesByAbsolutePathReachTheCompiler) {
  std::string folder = ::testing::TempDir() + "fedcl-absolute-" + std::to_string(getpid());
  mkdir(folder.c_str(), 0700);
  std::ofstream(folder + "/values.h") << "#include \"more.h\"\n#define BASE 40\n";
  std::ofstream(folder + "/more.h") << "#define MORE 2\n";
  std::string source = "#include \"" + folder + "/values.h\"\n"
                       "kernel void set(global int *x) { x[get_global_id(0)] = BASE + MORE; }\n";
  cl_program program = source_program(context, source.c_str());
  std::system(("rm -rf '" + folder + "'").c_str());  // sent at clCreateProgramWithSource
  cl_int built = clBuildProgram(program, 1, &device, "", nullptr, nullptr);
  EXPECT_CL(CL_SUCCESS, built) << program_build_text(program, device, CL_PROGRAM_BUILD_LOG);
  if (built == CL_SUCCESS) {
    cl_kernel kernel = create_kernel(program, "set");
    EXPECT_EQ(std::vector<int>(4, 42), run_on(context, queue, kernel, std::vector<int>(4, 0)));
    clReleaseKernel(kernel);
  }
  size_t size = 0;
  ASSERT_CL_OK(clGetProgramInfo(program, CL_PROGRAM_SOURCE, 0, nullptr, &size));
  std::string shown(size, '\0');
  ASSERT_CL_OK(clGetProgramInfo(program, CL_PROGRAM_SOURCE, size, shown.data(), nullptr));
  EXPECT_EQ(source, shown.c_str());
  clReleaseProgram(program);
}
