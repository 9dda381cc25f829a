// Kernels and their arguments. Arguments are checked and kept here; they travel to the daemon with
// the next launch, so clSetKernelArg never touches the network.
#include <algorithm>

#include "api.h"
#include "info.h"
#include "kernel.h"
#include "kernel_args.h"

using namespace fedcl;

namespace {

cl_kernel create_kernel(cl_program program, const KernelDesc *desc) {
  auto *kernel = new _cl_kernel();
  kernel->program = program;
  kernel->desc = desc;
  kernel->args.resize(desc->args.size());
  cl_uint address_bits = program->context->devices[0]->address_bits;
  for (const KernelArgDesc &arg : desc->args) kernel->checks.push_back(kernel_arg_check(arg, address_bits));
  hold(program);
  program->attached_kernels++;
  std::lock_guard<std::mutex> lock(program->mutex);
  for (const auto &entry : program->builds)
    if (entry.second.uniform_work_groups) kernel->uniform_only.push_back(entry.first);
  kernel_create(kernel);
  return kernel;
}

}  // namespace

cl_kernel fedcl::api::clCreateKernel(cl_program program, const char *name, cl_int *errcode_ret) {
  if (!as<_cl_program>(program)) return set_error(errcode_ret, CL_INVALID_PROGRAM), nullptr;
  if (!name) return set_error(errcode_ret, CL_INVALID_VALUE), nullptr;
  const KernelDesc *desc;
  {
    std::lock_guard<std::mutex> lock(program->mutex);
    if (!program->built()) return set_error(errcode_ret, CL_INVALID_PROGRAM_EXECUTABLE), nullptr;
    desc = program->kernel(name);
  }
  if (!desc) return set_error(errcode_ret, CL_INVALID_KERNEL_NAME), nullptr;
  set_error(errcode_ret, CL_SUCCESS);
  return create_kernel(program, desc);
}

cl_int fedcl::api::clCreateKernelsInProgram(cl_program program, cl_uint num_kernels, cl_kernel *kernels,
                                            cl_uint *num_kernels_ret) {
  if (!as<_cl_program>(program)) return CL_INVALID_PROGRAM;
  std::vector<const KernelDesc *> descs;
  {
    std::lock_guard<std::mutex> lock(program->mutex);
    if (!program->built()) return CL_INVALID_PROGRAM_EXECUTABLE;
    for (const auto &desc : program->kernels) descs.push_back(&desc);
  }
  if (kernels && num_kernels < descs.size()) return CL_INVALID_VALUE;
  if (kernels)
    for (size_t i = 0; i < descs.size(); i++) kernels[i] = create_kernel(program, descs[i]);
  if (num_kernels_ret) *num_kernels_ret = static_cast<cl_uint>(descs.size());
  return CL_SUCCESS;
}

cl_kernel fedcl::api::clCloneKernel(cl_kernel source, cl_int *errcode_ret) {
  if (!as<_cl_kernel>(source)) return set_error(errcode_ret, CL_INVALID_KERNEL), nullptr;
  cl_kernel kernel = create_kernel(source->program, source->desc);
  std::lock_guard<std::mutex> lock(source->mutex);
  kernel->args = source->args;
  kernel->generation = source->generation;
  set_error(errcode_ret, CL_SUCCESS);
  return kernel;
}

cl_int fedcl::make_kernel_arg(cl_kernel kernel, cl_uint index, size_t size, const void *value, _cl_kernel::Arg *arg) {
  if (index >= kernel->checks.size()) return CL_INVALID_ARG_INDEX;
  ArgClass kind = kernel->checks[index].kind;
  if (kind == ArgClass::unknown) {
    // No metadata from the backend: go by what the application passed.
    // A handle must never travel as bytes: the daemon would hand the backend a pointer of this process.
    void *handle = (size == sizeof(void *) && value) ? *static_cast<void *const *>(value) : nullptr;
    bool known = handle_registered(handle);
    kind = known && as<_cl_mem>(handle) ? ArgClass::memory : known && as<_cl_sampler>(handle) ? ArgClass::sampler
           : value                 ? ArgClass::value
                                   : ArgClass::local;
  }
  uint64_t object = 0;
  cl_mem mem = nullptr;
  cl_sampler sampler = nullptr;
  switch (kind) {
    case ArgClass::memory:
      if (size != sizeof(cl_mem)) return CL_INVALID_ARG_SIZE;
      mem = value ? *static_cast<const cl_mem *>(value) : nullptr;
      if (mem && (!as<_cl_mem>(mem) || mem->context != kernel->program->context)) return CL_INVALID_MEM_OBJECT;
      if (mem && kernel->checks[index].image && mem->type == CL_MEM_OBJECT_BUFFER) return CL_INVALID_MEM_OBJECT;
      object = mem ? mem->id : 0;
      break;
    case ArgClass::local:
      if (value) return CL_INVALID_ARG_VALUE;
      if (size == 0) return CL_INVALID_ARG_SIZE;
      break;
    case ArgClass::sampler: {
      if (size != sizeof(cl_sampler)) return CL_INVALID_ARG_SIZE;
      sampler = value ? *static_cast<const cl_sampler *>(value) : nullptr;
      if (!as<_cl_sampler>(sampler)) return CL_INVALID_SAMPLER;
      object = sampler->id;
      break;
    }
    case ArgClass::value:
    case ArgClass::unknown: {
      size_t expected = kernel->checks[index].value_size;
      if (!value) return CL_INVALID_ARG_VALUE;
      if (size == 0 || (expected && size != expected)) return CL_INVALID_ARG_SIZE;
      break;
    }
  }
  switch (kind) {
    case ArgClass::memory: arg->kind = _cl_kernel::Arg::memory; break;
    case ArgClass::local: arg->kind = _cl_kernel::Arg::local; break;
    case ArgClass::sampler: arg->kind = _cl_kernel::Arg::sampler; break;
    default: arg->kind = _cl_kernel::Arg::value; break;
  }
  arg->buffer = mem;
  arg->sampler_handle = sampler;
  arg->object = object;
  arg->local_size = kind == ArgClass::local ? size : 0;
  if (arg->kind == _cl_kernel::Arg::value) {
    const auto *bytes = static_cast<const uint8_t *>(value);
    arg->bytes.assign(bytes, bytes + size);
  }
  return CL_SUCCESS;
}

cl_int fedcl::api::clSetKernelArg(cl_kernel kernel, cl_uint index, size_t size, const void *value) {
  if (!as<_cl_kernel>(kernel)) return CL_INVALID_KERNEL;
  // The slot is updated in place so that setting an argument allocates nothing once it has run. No
  // lock: the specification leaves concurrent clSetKernelArg on one kernel to the application.
  if (index >= kernel->args.size()) return CL_INVALID_ARG_INDEX;
  _cl_kernel::Arg &arg = kernel->args[index];
  cl_int err = make_kernel_arg(kernel, index, size, value, &arg);
  if (err == CL_SUCCESS) arg.generation = ++kernel->generation;
  return err;
}

cl_int fedcl::api::clGetKernelInfo(cl_kernel kernel, cl_kernel_info param, size_t size, void *value, size_t *size_ret) {
  if (!as<_cl_kernel>(kernel)) return CL_INVALID_KERNEL;
  switch (param) {
    case CL_KERNEL_FUNCTION_NAME: return info_string(size, value, size_ret, kernel->desc->name);
    case CL_KERNEL_NUM_ARGS: return info_value(size, value, size_ret, cl_uint(kernel->desc->args.size()));
    case CL_KERNEL_REFERENCE_COUNT: return info_value(size, value, size_ret, kernel->refcount.load());
    case CL_KERNEL_CONTEXT: return info_value(size, value, size_ret, kernel->program->context);
    case CL_KERNEL_PROGRAM: return info_value(size, value, size_ret, kernel->program);
    case CL_KERNEL_ATTRIBUTES: {
      std::vector<uint8_t> bytes;
      cl_int err = kernel_info(kernel, param, &bytes);
      if (err != CL_SUCCESS) return err;
      return info_bytes(size, value, size_ret, bytes.data(), bytes.size());
    }
    default: return CL_INVALID_VALUE;
  }
}

cl_int fedcl::api::clGetKernelWorkGroupInfo(cl_kernel kernel, cl_device_id device, cl_kernel_work_group_info param,
                                            size_t size, void *value, size_t *size_ret) {
  if (!as<_cl_kernel>(kernel)) return CL_INVALID_KERNEL;
  cl_context context = kernel->program->context;
  if (!device) {
    if (context->devices.size() != 1) return CL_INVALID_DEVICE;
    device = context->devices[0];
  }
  if (!as<_cl_device_id>(device) || !context->has_device(device)) return CL_INVALID_DEVICE;
  // These answers do not change for a built kernel; the local memory size depends on the arguments.
  bool cacheable = param != CL_KERNEL_LOCAL_MEM_SIZE;
  std::vector<uint8_t> bytes;
  {
    std::lock_guard<std::mutex> lock(kernel->mutex);
    auto &cache = kernel->work_group_info[device];
    auto it = cache.find(param);
    if (cacheable && it != cache.end()) bytes = it->second;
  }
  if (bytes.empty()) {
    cl_int err = kernel_work_group_info(kernel, device, param, &bytes);
    if (err != CL_SUCCESS) return err;
    if (cacheable) {
      std::lock_guard<std::mutex> lock(kernel->mutex);
      kernel->work_group_info[device][param] = bytes;
    }
  }
  return info_bytes(size, value, size_ret, bytes.data(), bytes.size());
}

cl_int fedcl::api::clGetKernelArgInfo(cl_kernel kernel, cl_uint index, cl_kernel_arg_info param, size_t size,
                                      void *value, size_t *size_ret) {
  if (!as<_cl_kernel>(kernel)) return CL_INVALID_KERNEL;
  if (index >= kernel->desc->args.size()) return CL_INVALID_ARG_INDEX;
  const KernelArgDesc &desc = kernel->desc->args[index];
  if (!kernel->desc->arg_info_available || desc.type_name.empty()) return CL_KERNEL_ARG_INFO_NOT_AVAILABLE;
  switch (param) {
    case CL_KERNEL_ARG_ADDRESS_QUALIFIER: return info_value(size, value, size_ret, desc.address);
    case CL_KERNEL_ARG_ACCESS_QUALIFIER: return info_value(size, value, size_ret, desc.access);
    case CL_KERNEL_ARG_TYPE_NAME: return info_string(size, value, size_ret, desc.type_name);
    case CL_KERNEL_ARG_TYPE_QUALIFIER: return info_value(size, value, size_ret, desc.type_qualifier);
    case CL_KERNEL_ARG_NAME: return info_string(size, value, size_ret, desc.name);
    default: return CL_INVALID_VALUE;
  }
}

cl_int fedcl::api::clGetKernelSubGroupInfo(cl_kernel kernel, cl_device_id device, cl_kernel_sub_group_info param,
                                           size_t input_size, const void *input, size_t size, void *value,
                                           size_t *size_ret) {
  if (!as<_cl_kernel>(kernel)) return CL_INVALID_KERNEL;
  const std::vector<cl_device_id> &devices = kernel->program->devices;
  if (!device) {
    if (devices.size() != 1) return CL_INVALID_DEVICE;
    device = devices[0];
  }
  if (!as<_cl_device_id>(device) || std::find(devices.begin(), devices.end(), device) == devices.end() ||
      !(kernel->present & bit(device->connection)))
    return CL_INVALID_DEVICE;
  // The answers depend on the input value and on whether the device has sub-groups at all (if not,
  // the backend says CL_INVALID_OPERATION): the daemon asks the backend.
  std::vector<uint8_t> bytes;
  cl_int err = kernel_sub_group_info(kernel, device, param, input, input_size, &bytes);
  if (err != CL_SUCCESS) return err;
  return info_bytes(size, value, size_ret, bytes.data(), bytes.size());
}

// cl_khr_subgroups: the same query under its extension name.
cl_int fedcl::api::clGetKernelSubGroupInfoKHR(cl_kernel kernel, cl_device_id device, cl_kernel_sub_group_info param,
                                              size_t input_size, const void *input, size_t size, void *value,
                                              size_t *size_ret) {
  return api::clGetKernelSubGroupInfo(kernel, device, param, input_size, input, size, value, size_ret);
}
