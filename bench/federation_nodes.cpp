#include "federation_nodes.h"

#include <stdexcept>

#include "bench_cl.h"
#include "bench_nbody.h"
#include "federation_kernels.h"

namespace bench {

namespace {

cl_command_queue make_queue(cl_context context, cl_device_id device) {
  cl_int err;
  cl_command_queue queue = clCreateCommandQueueWithProperties(context, device, nullptr, &err);
  check(err, "clCreateCommandQueueWithProperties");
  return queue;
}

}  // namespace

Federation::~Federation() {
  for (Node &node : nodes) {
    if (node.second) clReleaseCommandQueue(node.second);
    if (node.queue) clReleaseCommandQueue(node.queue);
  }
  if (program) clReleaseProgram(program);
  if (context) clReleaseContext(context);
}

cl_kernel Federation::kernel(const char *name) const { return make_kernel(program, name); }

cl_mem Federation::buffer(size_t size, cl_mem_flags flags) const { return make_buffer(context, size, flags); }

std::unique_ptr<Federation> open_federation(size_t max_nodes) {
  auto fed = std::make_unique<Federation>();
  fed->platform = find_platform("fedcl", true, "run through bench/run_federation.sh");
  fed->platform_version = platform_text(fed->platform, CL_PLATFORM_VERSION);
  cl_uint count = 0;
  check(clGetDeviceIDs(fed->platform, CL_DEVICE_TYPE_ALL, 0, nullptr, &count), "clGetDeviceIDs");
  std::vector<cl_device_id> devices(count);
  check(clGetDeviceIDs(fed->platform, CL_DEVICE_TYPE_ALL, count, devices.data(), nullptr), "clGetDeviceIDs");
  if (max_nodes && devices.size() > max_nodes) devices.resize(max_nodes);

  for (cl_device_id device : devices) {
    Node node;
    node.device = device;
    node.name = device_text(device, CL_DEVICE_NAME);
    check(clGetDeviceInfo(device, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof node.compute_units, &node.compute_units,
                          nullptr),
          "clGetDeviceInfo");
    check(clGetDeviceInfo(device, CL_DEVICE_TYPE, sizeof node.type, &node.type, nullptr), "clGetDeviceInfo");
    check(clGetDeviceInfo(device, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof node.max_work_group_size,
                          &node.max_work_group_size, nullptr),
          "clGetDeviceInfo");
    fed->nodes.push_back(node);
  }

  cl_int err;
  fed->context = clCreateContext(nullptr, cl_uint(devices.size()), devices.data(), nullptr, nullptr, &err);
  check(err, "clCreateContext (one context over every node)");
  for (Node &node : fed->nodes) {
    node.queue = make_queue(fed->context, node.device);
    node.second = make_queue(fed->context, node.device);
  }
  const char *sources[] = {kFederationKernelSource, kNbodyKernelSource};
  fed->program = clCreateProgramWithSource(fed->context, 2, sources, nullptr, &err);
  check(err, "clCreateProgramWithSource");
  // The options NVIDIA's oclNbody builds with, as fedcl_bench uses.
  if (clBuildProgram(fed->program, cl_uint(devices.size()), devices.data(), "-cl-fast-relaxed-math", nullptr,
                     nullptr) != CL_SUCCESS) {
    std::string logs;
    for (cl_device_id device : devices) {
      size_t size = 0;
      clGetProgramBuildInfo(fed->program, device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &size);
      std::string log(size, '\0');
      clGetProgramBuildInfo(fed->program, device, CL_PROGRAM_BUILD_LOG, size, log.data(), nullptr);
      logs += log;
    }
    throw std::runtime_error("clBuildProgram failed:\n" + logs);
  }
  return fed;
}

}  // namespace bench
