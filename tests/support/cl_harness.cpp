#include "cl_harness.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace fedcl_test {

#define FEDCL_TEST_STATUSES(X)                                                                               \
  X(CL_SUCCESS) X(CL_DEVICE_NOT_FOUND) X(CL_DEVICE_NOT_AVAILABLE) X(CL_COMPILER_NOT_AVAILABLE)               \
  X(CL_MEM_OBJECT_ALLOCATION_FAILURE) X(CL_OUT_OF_RESOURCES) X(CL_OUT_OF_HOST_MEMORY)                         \
  X(CL_PROFILING_INFO_NOT_AVAILABLE) X(CL_MEM_COPY_OVERLAP) X(CL_BUILD_PROGRAM_FAILURE) X(CL_MAP_FAILURE)     \
  X(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST) X(CL_INVALID_VALUE) X(CL_INVALID_DEVICE_TYPE)                \
  X(CL_INVALID_PLATFORM) X(CL_INVALID_DEVICE) X(CL_INVALID_CONTEXT) X(CL_INVALID_QUEUE_PROPERTIES)            \
  X(CL_INVALID_COMMAND_QUEUE) X(CL_INVALID_HOST_PTR) X(CL_INVALID_MEM_OBJECT) X(CL_INVALID_BUFFER_SIZE)       \
  X(CL_INVALID_PROGRAM) X(CL_INVALID_PROGRAM_EXECUTABLE) X(CL_INVALID_KERNEL_NAME) X(CL_INVALID_KERNEL)       \
  X(CL_INVALID_ARG_INDEX) X(CL_INVALID_ARG_VALUE) X(CL_INVALID_ARG_SIZE) X(CL_INVALID_KERNEL_ARGS)            \
  X(CL_INVALID_WORK_DIMENSION) X(CL_INVALID_WORK_GROUP_SIZE) X(CL_INVALID_WORK_ITEM_SIZE)                     \
  X(CL_INVALID_GLOBAL_OFFSET) X(CL_INVALID_EVENT_WAIT_LIST) X(CL_INVALID_EVENT) X(CL_INVALID_OPERATION)       \
  X(CL_INVALID_BUILD_OPTIONS) X(CL_INVALID_GLOBAL_WORK_SIZE) X(CL_INVALID_PROPERTY)

const char *status_name(cl_int code) {
  switch (code) {
#define FEDCL_TEST_STATUS_CASE(name) \
  case name: return #name;
    FEDCL_TEST_STATUSES(FEDCL_TEST_STATUS_CASE)
#undef FEDCL_TEST_STATUS_CASE
    default: return "an OpenCL status";
  }
}

void PrintTo(const Status &status, std::ostream *out) { *out << status_name(status.code) << " (" << status.code << ")"; }

void check(cl_int status, const std::string &what) {
  if (status != CL_SUCCESS)
    throw std::runtime_error(what + " failed with " + status_name(status) + " (" + std::to_string(status) + ")");
}

namespace {

std::string platform_name(cl_platform_id platform) {
  size_t size = 0;
  if (clGetPlatformInfo(platform, CL_PLATFORM_NAME, 0, nullptr, &size) != CL_SUCCESS) return {};
  std::string name(size, '\0');
  clGetPlatformInfo(platform, CL_PLATFORM_NAME, size, name.data(), nullptr);
  return name.c_str();
}

}  // namespace

cl_platform_id fedcl_platform() {
  cl_uint count = 0;
  check(clGetPlatformIDs(0, nullptr, &count), "clGetPlatformIDs");
  std::vector<cl_platform_id> platforms(count);
  check(clGetPlatformIDs(count, platforms.data(), nullptr), "clGetPlatformIDs");
  for (cl_platform_id platform : platforms)
    if (platform_name(platform) == "fedcl") return platform;
  throw std::runtime_error("the ICD loader offers no fedcl platform (is OCL_ICD_VENDORS set?)");
}

void set_hosts(const std::string &hosts) { setenv("FEDCL_HOSTS", hosts.c_str(), 1); }

std::vector<cl_device_id> fedcl_devices(cl_platform_id platform, cl_int *status) {
  cl_uint count = 0;
  cl_int err = clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 0, nullptr, &count);
  std::vector<cl_device_id> devices(err == CL_SUCCESS ? count : 0);
  if (err == CL_SUCCESS) err = clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, count, devices.data(), nullptr);
  if (status) *status = err;
  return devices;
}

Cluster::Cluster(size_t daemon_count, const std::vector<std::string> &daemon_args) {
  std::vector<const DaemonProcess *> started;
  for (size_t i = 0; i < daemon_count; i++) {
    std::vector<std::string> args = daemon_args;
    args.insert(args.end(), {"--name", "node" + std::to_string(i)});
    daemons.push_back(std::make_unique<DaemonProcess>(args));
    started.push_back(daemons.back().get());
  }
  set_hosts(hosts_list(started));
  platform = fedcl_platform();
  cl_int err;
  devices = fedcl_devices(platform, &err);
  check(err, "clGetDeviceIDs on the fedcl platform");
}

std::unique_ptr<Cluster> cluster_with_shim(const std::string &library,
                                           const std::vector<std::pair<std::string, std::string>> &variables,
                                           const std::vector<std::string> &daemon_args) {
  try {
    DaemonEnvironment shim(library, variables);
    return std::make_unique<Cluster>(1, daemon_args);
  } catch (const std::exception &e) {
    ADD_FAILURE() << e.what();
    return nullptr;
  }
}

std::string device_string(cl_device_id device, cl_device_info param) {
  size_t size = 0;
  check(clGetDeviceInfo(device, param, 0, nullptr, &size), "clGetDeviceInfo");
  std::string text(size, '\0');
  check(clGetDeviceInfo(device, param, size, text.data(), nullptr), "clGetDeviceInfo");
  return text.c_str();
}

std::string build_log(cl_program program, cl_device_id device) {
  size_t size = 0;
  check(clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &size), "clGetProgramBuildInfo");
  std::string log(size, '\0');
  check(clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, size, log.data(), nullptr),
        "clGetProgramBuildInfo");
  return log.c_str();
}

cl_program build_program(cl_context context, const std::string &source, const char *options) {
  const char *text = source.c_str();
  cl_int err;
  cl_program program = clCreateProgramWithSource(context, 1, &text, nullptr, &err);
  check(err, "clCreateProgramWithSource");
  err = clBuildProgram(program, 0, nullptr, options, nullptr, nullptr);
  if (err != CL_SUCCESS) {
    std::string logs;
    cl_uint count = 0;
    clGetContextInfo(context, CL_CONTEXT_NUM_DEVICES, sizeof count, &count, nullptr);
    std::vector<cl_device_id> devices(count);
    clGetContextInfo(context, CL_CONTEXT_DEVICES, count * sizeof(cl_device_id), devices.data(), nullptr);
    for (cl_device_id device : devices) logs += build_log(program, device) + "\n";
    check(err, "clBuildProgram:\n" + logs);
  }
  return program;
}

cl_kernel create_kernel(cl_program program, const char *name) {
  cl_int err;
  cl_kernel kernel = clCreateKernel(program, name, &err);
  check(err, std::string("clCreateKernel(") + name + ")");
  return kernel;
}

std::vector<unsigned char> program_binary(cl_program program) {
  size_t size = 0;
  check(clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, nullptr), "CL_PROGRAM_BINARY_SIZES");
  if (size == 0) throw std::runtime_error("the program has no binary");
  std::vector<unsigned char> binary(size);
  unsigned char *into = binary.data();
  check(clGetProgramInfo(program, CL_PROGRAM_BINARIES, sizeof into, &into, nullptr), "CL_PROGRAM_BINARIES");
  return binary;
}

cl_mem create_buffer(cl_context context, cl_mem_flags flags, size_t size, void *host_ptr) {
  cl_int err;
  cl_mem mem = clCreateBuffer(context, flags, size, host_ptr, &err);
  check(err, "clCreateBuffer");
  return mem;
}

cl_command_queue create_queue(cl_context context, cl_device_id device, cl_command_queue_properties properties) {
  cl_int err;
  cl_command_queue queue = clCreateCommandQueue(context, device, properties, &err);
  check(err, "clCreateCommandQueue");
  return queue;
}

MigratedBuffer::MigratedBuffer(const Cluster &cluster, size_t bytes) {
  cl_int err;
  context = clCreateContext(nullptr, 2, cluster.devices.data(), nullptr, nullptr, &err);
  check(err, "clCreateContext");
  for (int d = 0; d < 2; d++) queues[d] = create_queue(context, cluster.devices[d]);
  std::vector<uint8_t> data(bytes, 0x5a);
  buffer = create_buffer(context, CL_MEM_READ_WRITE, bytes);
  check(clEnqueueWriteBuffer(queues[0], buffer, CL_TRUE, 0, bytes, data.data(), 0, nullptr, nullptr), "clEnqueueWriteBuffer");
  check(clEnqueueMigrateMemObjects(queues[1], 1, &buffer, 0, 0, nullptr, nullptr), "clEnqueueMigrateMemObjects");
  check(clFinish(queues[1]), "clFinish");
}

MigratedBuffer::~MigratedBuffer() {
  if (buffer) clReleaseMemObject(buffer);
  for (cl_command_queue queue : queues)
    if (queue) clReleaseCommandQueue(queue);
  if (context) clReleaseContext(context);
}

const char kVectorAddSource[] = R"(
__kernel void add(__global const float *a, __global const float *b, __global float *c, uint n) {
  size_t i = get_global_id(0);
  if (i < n) c[i] = a[i] + b[i];
}
)";

const char kScaleSource[] = R"(
__kernel void scale(__global int *x, int factor) { x[get_global_id(0)] *= factor; }
__kernel void offset(__global int *x, int add) { x[get_global_id(0)] += add; }
)";

void expect_runtime_session_works(const Cluster &cluster, size_t n) {
  cl_device_id device = cluster.devices.at(0);
  cl_int err;
  cl_context context = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &err);
  ASSERT_CL_OK(err);
  cl_command_queue queue = create_queue(context, device);
  expect_vector_add(context, queue, n);
  clReleaseCommandQueue(queue);
  clReleaseContext(context);
}

void expect_buffer_crosses_peer_link(const Cluster &cluster, OutputCapture &capture, size_t n) {
  ASSERT_EQ(2u, cluster.devices.size());
  cl_int err;
  cl_context context = clCreateContext(nullptr, 2, cluster.devices.data(), nullptr, nullptr, &err);
  ASSERT_CL_OK(err);
  cl_command_queue first = create_queue(context, cluster.devices[0]);
  cl_command_queue second = create_queue(context, cluster.devices[1]);
  std::vector<int> data(n, 5), back(n, 0);
  cl_mem buffer = create_buffer(context, CL_MEM_READ_WRITE, n * sizeof(int));
  ASSERT_CL_OK(clEnqueueWriteBuffer(first, buffer, CL_TRUE, 0, n * sizeof(int), data.data(), 0, nullptr, nullptr));
  cl_kernel offset = create_kernel(build_program(context, kScaleSource), "offset");
  int one = 1;
  ASSERT_CL_OK(clSetKernelArg(offset, 0, sizeof buffer, &buffer));
  ASSERT_CL_OK(clSetKernelArg(offset, 1, sizeof one, &one));
  ASSERT_CL_OK(clEnqueueNDRangeKernel(second, offset, 1, nullptr, &n, nullptr, 0, nullptr, nullptr));
  ASSERT_CL_OK(clEnqueueReadBuffer(second, buffer, CL_TRUE, 0, n * sizeof(int), back.data(), 0, nullptr, nullptr));
  EXPECT_EQ(6, back[0]);
  EXPECT_EQ(6, back[n - 1]);
  std::string text = capture.so_far();
  EXPECT_NE(std::string::npos, text.find(") is up")) << "no peer link came up:\n" << text;
  EXPECT_EQ(std::string::npos, text.find("refused")) << text;
  clReleaseMemObject(buffer);
  clReleaseKernel(offset);
  clReleaseCommandQueue(first);
  clReleaseCommandQueue(second);
  clReleaseContext(context);
}

void expect_vector_add(cl_context context, cl_command_queue queue, size_t n) {
  std::vector<float> a(n), b(n), c(n, -1.0f);
  for (size_t i = 0; i < n; i++) {
    a[i] = 0.5f * float(i);
    b[i] = 1000.0f - 3.0f * float(i % 97);
  }
  cl_mem da = create_buffer(context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, n * sizeof(float), a.data());
  cl_mem db = create_buffer(context, CL_MEM_READ_ONLY, n * sizeof(float));
  cl_mem dc = create_buffer(context, CL_MEM_WRITE_ONLY, n * sizeof(float));
  ASSERT_CL_OK(clEnqueueWriteBuffer(queue, db, CL_FALSE, 0, n * sizeof(float), b.data(), 0, nullptr, nullptr));
  cl_program program = build_program(context, kVectorAddSource);
  cl_kernel kernel = create_kernel(program, "add");
  cl_uint count = static_cast<cl_uint>(n);
  set_arg(kernel, 0, da);
  set_arg(kernel, 1, db);
  set_arg(kernel, 2, dc);
  set_arg(kernel, 3, count);
  size_t global = (n + 63) / 64 * 64;
  ASSERT_CL_OK(clEnqueueNDRangeKernel(queue, kernel, 1, nullptr, &global, nullptr, 0, nullptr, nullptr));
  ASSERT_CL_OK(clEnqueueReadBuffer(queue, dc, CL_TRUE, 0, n * sizeof(float), c.data(), 0, nullptr, nullptr));
  for (size_t i = 0; i < n; i++) ASSERT_EQ(a[i] + b[i], c[i]) << "at index " << i;
  ASSERT_CL_OK(clFinish(queue));
  for (cl_mem mem : {da, db, dc}) clReleaseMemObject(mem);
  clReleaseKernel(kernel);
  clReleaseProgram(program);
}

OutputCapture::OutputCapture(FILE *stream) : stream_(stream), fd_(fileno(stream)) {
  char pattern[] = "/tmp/fedcl-capture-XXXXXX";
  int fd = mkstemp(pattern);
  if (fd < 0) throw std::runtime_error("mkstemp failed");
  path_ = pattern;
  std::fflush(stream_);
  saved_ = dup(fd_);
  dup2(fd, fd_);
  close(fd);
}

OutputCapture::~OutputCapture() { text(); }

std::string OutputCapture::so_far() {
  std::fflush(stream_);
  return read_file(path_);
}

std::string OutputCapture::text() {
  if (saved_ >= 0) {
    std::fflush(stream_);
    dup2(saved_, fd_);
    close(saved_);
    saved_ = -1;
  }
  std::string content = path_.empty() ? std::string() : read_file(path_);
  if (!path_.empty()) unlink(path_.c_str());
  path_.clear();
  if (stream_ == stderr) std::fputs(content.c_str(), stderr);
  return content;
}

std::string read_file(const std::string &path) {
  std::ifstream in(path);
  std::stringstream content;
  content << in.rdbuf();
  return content.str();
}

size_t count_occurrences(const std::string &text, const std::string &needle) {
  size_t count = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + needle.size())) count++;
  return count;
}

int run_command(const std::string &command, std::string *output) {
  FILE *pipe = popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return -1;
  char chunk[4096];
  size_t got;
  while ((got = std::fread(chunk, 1, sizeof chunk, pipe)) > 0) output->append(chunk, got);
  int status = pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

namespace {

void open_context_and_queue(cl_device_id device, cl_context *context, cl_command_queue *queue) {
  cl_int err;
  *context = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &err);
  ASSERT_CL_OK(err);
  *queue = create_queue(*context, device);
}

void release_context_and_queue(cl_context context, cl_command_queue queue) {
  if (queue) clReleaseCommandQueue(queue);
  if (context) clReleaseContext(context);
}

}  // namespace

cl_int command_status(cl_event event) {
  cl_int status = 1234;
  EXPECT_CL(CL_SUCCESS, clGetEventInfo(event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr));
  return status;
}

void CL_CALLBACK ContextNotices::callback(const char *message, const void *, size_t, void *self) {
  auto *notices = static_cast<ContextNotices *>(self);
  std::lock_guard<std::mutex> lock(notices->mutex_);
  notices->messages_.push_back(message);
  notices->cv_.notify_all();
}

bool ContextNotices::wait_for(const std::string &text) {
  std::unique_lock<std::mutex> lock(mutex_);
  return cv_.wait_for(lock, std::chrono::seconds(30), [&] {
    for (const auto &message : messages_)
      if (message.find(text) != std::string::npos) return true;
    return false;
  });
}

std::string ContextNotices::all() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::string text;
  for (const auto &message : messages_) text += message + "\n";
  return text;
}

void OneDeviceFixture::SetUp() { open_context_and_queue(device, &context, &queue); }

void OneDeviceFixture::TearDown() { release_context_and_queue(context, queue); }

void ShimmedDeviceFixture::start(const std::string &library,
                                 const std::vector<std::pair<std::string, std::string>> &variables,
                                 const std::vector<std::string> &daemon_args) {
  cluster = cluster_with_shim(library, variables, daemon_args);
  ASSERT_TRUE(cluster);
  device = cluster->devices.at(0);
  open_context_and_queue(device, &context, &queue);
}

void ShimmedDeviceFixture::TearDown() { release_context_and_queue(context, queue); }

int launch_and_abandon(size_t n, int launches, bool gated) {
  try {
    std::vector<cl_device_id> devices = fedcl_devices(fedcl_platform());
    if (devices.empty()) return 2;
    cl_int err;
    cl_context context = clCreateContext(nullptr, 1, devices.data(), nullptr, nullptr, &err);
    if (err != CL_SUCCESS) return 3;
    cl_command_queue queue = create_queue(context, devices[0]);
    std::vector<int> contents(n, 5);
    cl_mem mem = create_buffer(context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, n * sizeof(int), contents.data());
    cl_kernel kernel = create_kernel(build_program(context, kScaleSource), "scale");
    int factor = 3;
    cl_event gate = gated ? clCreateUserEvent(context, &err) : nullptr;
    if (err != CL_SUCCESS || clSetKernelArg(kernel, 0, sizeof mem, &mem) != CL_SUCCESS ||
        clSetKernelArg(kernel, 1, sizeof factor, &factor) != CL_SUCCESS)
      return 4;
    for (int i = 0; i < launches; i++)
      if (clEnqueueNDRangeKernel(queue, kernel, 1, nullptr, &n, nullptr, gated ? 1 : 0, gated ? &gate : nullptr,
                                 nullptr) != CL_SUCCESS)
        return 5;
    return clFlush(queue) == CL_SUCCESS ? 0 : 6;
  } catch (const std::exception &) {
    return 7;
  }
}

}  // namespace fedcl_test
