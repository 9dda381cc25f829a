#include "bench_cl.h"

#include <stdexcept>
#include <vector>

#include "bench_nbody.h"
#include "bench_solver.h"
#include "bench_workloads.h"

namespace bench {

std::string device_text(cl_device_id device, cl_device_info param) {
  size_t size = 0;
  if (clGetDeviceInfo(device, param, 0, nullptr, &size) != CL_SUCCESS || size == 0) return {};
  std::string text(size, '\0');
  clGetDeviceInfo(device, param, size, text.data(), nullptr);
  text.resize(size - 1);
  return text;
}

namespace {

std::string build_log(cl_program program, cl_device_id device) {
  size_t size = 0;
  clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &size);
  std::string log(size, '\0');
  clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, size, log.data(), nullptr);
  return log;
}

}  // namespace

void check(cl_int err, const char *what) {
  if (err != CL_SUCCESS) throw std::runtime_error(std::string(what) + " failed with " + std::to_string(err));
}

Side::~Side() {
  if (program) clReleaseProgram(program);
  if (queue) clReleaseCommandQueue(queue);
  if (context) clReleaseContext(context);
}

cl_kernel make_kernel(cl_program program, const char *name) {
  cl_int err;
  cl_kernel kernel = clCreateKernel(program, name, &err);
  check(err, "clCreateKernel");
  return kernel;
}

cl_mem make_buffer(cl_context context, size_t size, cl_mem_flags flags) {
  cl_int err;
  cl_mem mem = clCreateBuffer(context, flags, size, nullptr, &err);
  check(err, "clCreateBuffer");
  return mem;
}

cl_kernel Side::kernel(const char *name) const { return make_kernel(program, name); }

cl_mem Side::buffer(size_t size, cl_mem_flags flags) const { return make_buffer(context, size, flags); }

std::unique_ptr<Side> open_side(const std::string &label, const std::string &name_part, bool is_fedcl) {
  auto side = std::make_unique<Side>();
  side->label = label;
  side->platform = find_platform(name_part, is_fedcl, "run through bench/run.sh, or set OCL_ICD_VENDORS");
  check(clGetDeviceIDs(side->platform, CL_DEVICE_TYPE_ALL, 1, &side->device, nullptr), "clGetDeviceIDs");
  side->description = platform_text(side->platform, CL_PLATFORM_NAME) + " (" +
                      platform_text(side->platform, CL_PLATFORM_VERSION) + "), device " +
                      device_text(side->device, CL_DEVICE_NAME);
  auto device_info = [&](cl_device_info param, size_t size, void *value) {
    check(clGetDeviceInfo(side->device, param, size, value, nullptr), "clGetDeviceInfo");
  };
  device_info(CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof side->max_work_group_size, &side->max_work_group_size);
  device_info(CL_DEVICE_TYPE, sizeof side->device_type, &side->device_type);
  device_info(CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof side->max_mem_alloc, &side->max_mem_alloc);
  device_info(CL_DEVICE_GLOBAL_MEM_SIZE, sizeof side->global_mem, &side->global_mem);

  cl_int err;
  side->context = clCreateContext(nullptr, 1, &side->device, nullptr, nullptr, &err);
  check(err, "clCreateContext");
  side->queue = clCreateCommandQueueWithProperties(side->context, side->device, nullptr, &err);
  check(err, "clCreateCommandQueueWithProperties");
  const char *sources[] = {kTinyKernelSource, kNbodyKernelSource, kSolverKernelSource};
  side->program = clCreateProgramWithSource(side->context, 3, sources, nullptr, &err);
  check(err, "clCreateProgramWithSource");
  // The options NVIDIA's oclNbody builds with.
  if (clBuildProgram(side->program, 1, &side->device, "-cl-fast-relaxed-math", nullptr, nullptr) != CL_SUCCESS)
    throw std::runtime_error(label + ": clBuildProgram failed:\n" + build_log(side->program, side->device));
  return side;
}

}  // namespace bench
