// Programs: from source, binaries and built-in kernels; build, compile and link; their info. The
// requests and what the daemons report back are runtime/program.h's.
#include <algorithm>
#include <cstring>

#include "api.h"
#include "device.h"
#include "info.h"
#include "program.h"

using namespace fedcl;

namespace {

using BuildNotify = void(CL_CALLBACK *)(cl_program, void *);

cl_program new_program(cl_context context, std::vector<cl_device_id> devices) {
  auto *program = new _cl_program();
  program->context = context;
  program->devices = std::move(devices);
  hold(context);
  return program;
}

// Copies an application's device list after checking it against the devices it may name; no list
// means all of them.
cl_int device_list_of(cl_uint num_devices, const cl_device_id *list, const std::vector<cl_device_id> &allowed,
                      std::vector<cl_device_id> *devices) {
  if ((num_devices == 0) != (list == nullptr)) return CL_INVALID_VALUE;
  if (!list) {
    *devices = allowed;
    return CL_SUCCESS;
  }
  for (cl_uint i = 0; i < num_devices; i++) {
    if (!as<_cl_device_id>(list[i]) || std::find(allowed.begin(), allowed.end(), list[i]) == allowed.end())
      return CL_INVALID_DEVICE;
    devices->push_back(list[i]);
  }
  return CL_SUCCESS;
}

// Whether every device answers CL_TRUE to a yes/no query (compiler or linker available).
bool all_devices(const std::vector<cl_device_id> &devices, cl_device_info param) {
  for (cl_device_id device : devices) {
    cl_bool yes = CL_FALSE;
    if (device_info(device, param, sizeof yes, &yes, nullptr) != CL_SUCCESS || !yes) return false;
  }
  return true;
}

// Build callbacks run on the runtime's callback thread, after the call returned its status.
void notify_later(cl_program program, BuildNotify notify, void *user_data) {
  if (!notify) return;
  hold(program);
  Runtime::get().defer([program, notify, user_data] {
    notify(program, user_data);
    unhold(program);
  });
}

}  // namespace

cl_program fedcl::api::clCreateProgramWithSource(cl_context context, cl_uint count, const char **strings,
                                                 const size_t *lengths, cl_int *errcode_ret) {
  if (!as<_cl_context>(context)) return set_error(errcode_ret, CL_INVALID_CONTEXT), nullptr;
  if (count == 0 || !strings) return set_error(errcode_ret, CL_INVALID_VALUE), nullptr;
  std::string source;
  for (cl_uint i = 0; i < count; i++) {
    if (!strings[i]) return set_error(errcode_ret, CL_INVALID_VALUE), nullptr;
    if (lengths && lengths[i]) source.append(strings[i], lengths[i]);
    else source.append(strings[i]);
  }
  cl_program program = new_program(context, context->devices);
  program->has_source = true;
  program->source = std::move(source);
  cl_int err = program_create_with_source(program);
  return finish_create(program, err, errcode_ret);
}

cl_program fedcl::api::clCreateProgramWithBinary(cl_context context, cl_uint num_devices, const cl_device_id *device_list,
                                                 const size_t *lengths, const unsigned char **binaries,
                                                 cl_int *binary_status, cl_int *errcode_ret) {
  if (!as<_cl_context>(context)) return set_error(errcode_ret, CL_INVALID_CONTEXT), nullptr;
  if (!device_list || num_devices == 0 || !lengths || !binaries) return set_error(errcode_ret, CL_INVALID_VALUE), nullptr;
  std::vector<cl_device_id> devices;
  cl_int err = device_list_of(num_devices, device_list, context->devices, &devices);
  if (err != CL_SUCCESS) return set_error(errcode_ret, err), nullptr;
  std::vector<cl_int> statuses(num_devices, CL_SUCCESS);
  for (cl_uint i = 0; i < num_devices; i++)
    if (lengths[i] == 0 || !binaries[i]) statuses[i] = err = CL_INVALID_VALUE;
  cl_program program = nullptr;
  if (err == CL_SUCCESS) {
    program = new_program(context, std::move(devices));
    err = program_create_with_binaries(program, lengths, binaries, &statuses);
  }
  if (binary_status) std::copy(statuses.begin(), statuses.end(), binary_status);
  return finish_create(program, err, errcode_ret);
}

// No fedcl device reports an IL version (CL_DEVICE_IL_VERSION is ""): the backends tested so far
// take no SPIR-V, so fedcl does not offer IL programs.
cl_program fedcl::api::clCreateProgramWithIL(cl_context context, const void *il, size_t length, cl_int *errcode_ret) {
  if (!as<_cl_context>(context)) return set_error(errcode_ret, CL_INVALID_CONTEXT), nullptr;
  if (!il || length == 0) return set_error(errcode_ret, CL_INVALID_VALUE), nullptr;
  return set_error(errcode_ret, CL_INVALID_OPERATION), nullptr;
}

cl_program fedcl::api::clCreateProgramWithBuiltInKernels(cl_context context, cl_uint num_devices,
                                                         const cl_device_id *device_list, const char *kernel_names,
                                                         cl_int *errcode_ret) {
  if (!as<_cl_context>(context)) return set_error(errcode_ret, CL_INVALID_CONTEXT), nullptr;
  if (!device_list || num_devices == 0 || !kernel_names) return set_error(errcode_ret, CL_INVALID_VALUE), nullptr;
  std::vector<cl_device_id> devices;
  cl_int err = device_list_of(num_devices, device_list, context->devices, &devices);
  if (err != CL_SUCCESS) return set_error(errcode_ret, err), nullptr;
  // Every name must be a built-in kernel of at least one of the devices.
  std::vector<std::string> offered;
  for (cl_device_id device : devices) {
    size_t size = 0;
    device_info(device, CL_DEVICE_BUILT_IN_KERNELS, 0, nullptr, &size);
    std::string list(size, '\0');
    device_info(device, CL_DEVICE_BUILT_IN_KERNELS, size, list.data(), nullptr);
    offered.push_back(";" + std::string(list.c_str()) + ";");
  }
  std::string names = kernel_names;
  for (size_t begin = 0; begin <= names.size();) {
    size_t end = std::min(names.find(';', begin), names.size());
    std::string name = ";" + names.substr(begin, end - begin) + ";";
    bool known = name != ";;" && std::any_of(offered.begin(), offered.end(),
                                             [&](const std::string &list) { return list.find(name) != std::string::npos; });
    if (!known) return set_error(errcode_ret, CL_INVALID_VALUE), nullptr;
    begin = end + 1;
  }
  cl_program program = new_program(context, devices);
  err = program_create_with_built_in_kernels(program, names);
  return finish_create(program, err, errcode_ret);
}

cl_int fedcl::api::clBuildProgram(cl_program program, cl_uint num_devices, const cl_device_id *device_list,
                                  const char *options, BuildNotify notify, void *user_data) {
  if (!as<_cl_program>(program)) return CL_INVALID_PROGRAM;
  if (!notify && user_data) return CL_INVALID_VALUE;
  std::vector<cl_device_id> devices;
  cl_int err = device_list_of(num_devices, device_list, program->devices, &devices);
  if (err != CL_SUCCESS) return err;
  if (program->attached_kernels.load() > 0) return CL_INVALID_OPERATION;
  if (program->has_source && !all_devices(devices, CL_DEVICE_COMPILER_AVAILABLE)) return CL_COMPILER_NOT_AVAILABLE;
  err = program_build(program, devices, options);
  notify_later(program, notify, user_data);
  return err;
}

cl_int fedcl::api::clCompileProgram(cl_program program, cl_uint num_devices, const cl_device_id *device_list,
                                    const char *options, cl_uint num_input_headers, const cl_program *input_headers,
                                    const char **header_include_names, BuildNotify notify, void *user_data) {
  if (!as<_cl_program>(program)) return CL_INVALID_PROGRAM;
  if (!notify && user_data) return CL_INVALID_VALUE;
  if ((num_input_headers == 0) != (input_headers == nullptr) ||
      (num_input_headers == 0) != (header_include_names == nullptr))
    return CL_INVALID_VALUE;
  std::vector<cl_device_id> devices;
  cl_int err = device_list_of(num_devices, device_list, program->devices, &devices);
  if (err != CL_SUCCESS) return err;
  for (cl_uint i = 0; i < num_input_headers; i++) {
    if (!as<_cl_program>(input_headers[i])) return CL_INVALID_PROGRAM;
    if (!header_include_names[i]) return CL_INVALID_VALUE;
  }
  if (!program->has_source || program->attached_kernels.load() > 0) return CL_INVALID_OPERATION;
  if (!all_devices(devices, CL_DEVICE_COMPILER_AVAILABLE)) return CL_COMPILER_NOT_AVAILABLE;

  err = program_compile(program, devices, options, num_input_headers, input_headers, header_include_names);
  notify_later(program, notify, user_data);
  return err;
}

cl_program fedcl::api::clLinkProgram(cl_context context, cl_uint num_devices, const cl_device_id *device_list,
                                     const char *options, cl_uint num_input_programs, const cl_program *input_programs,
                                     BuildNotify notify, void *user_data, cl_int *errcode_ret) {
  if (!as<_cl_context>(context)) return set_error(errcode_ret, CL_INVALID_CONTEXT), nullptr;
  if (num_input_programs == 0 || !input_programs || (!notify && user_data))
    return set_error(errcode_ret, CL_INVALID_VALUE), nullptr;
  for (cl_uint i = 0; i < num_input_programs; i++)
    if (!as<_cl_program>(input_programs[i]) || input_programs[i]->context != context)
      return set_error(errcode_ret, CL_INVALID_PROGRAM), nullptr;
  std::vector<cl_device_id> devices;
  if (device_list) {
    cl_int err = device_list_of(num_devices, device_list, context->devices, &devices);
    if (err != CL_SUCCESS) return set_error(errcode_ret, err), nullptr;
  } else {
    if (num_devices != 0) return set_error(errcode_ret, CL_INVALID_VALUE), nullptr;
    // The devices of the context for which every input holds a compiled object or a library.
    for (cl_device_id device : context->devices) {
      bool linkable = std::all_of(input_programs, input_programs + num_input_programs, [&](cl_program input) {
        std::lock_guard<std::mutex> lock(input->mutex);
        auto it = input->builds.find(device);
        return it != input->builds.end() && (it->second.binary_type == CL_PROGRAM_BINARY_TYPE_COMPILED_OBJECT ||
                                             it->second.binary_type == CL_PROGRAM_BINARY_TYPE_LIBRARY);
      });
      if (linkable) devices.push_back(device);
    }
    if (devices.empty()) return set_error(errcode_ret, CL_INVALID_OPERATION), nullptr;
  }
  if (!all_devices(devices, CL_DEVICE_LINKER_AVAILABLE)) return set_error(errcode_ret, CL_LINKER_NOT_AVAILABLE), nullptr;

  cl_program program = new_program(context, devices);
  size_t unreported = 0;
  cl_int err = program_link(program, devices, options, num_input_programs, input_programs, &unreported);
  // A link that failed may still make a program, whose build log says why: the application gets it
  // when every backend made one.
  if (err != CL_SUCCESS && (err != CL_LINK_PROGRAM_FAILURE || unreported > 0)) {
    release(program);
    return set_error(errcode_ret, err), nullptr;
  }
  notify_later(program, notify, user_data);
  set_error(errcode_ret, err);
  return program;
}

// fedcl offers no program-scope global constructors or destructors (no device takes IL), so by
// the specification there is no release callback to register.
cl_int fedcl::api::clSetProgramReleaseCallback(cl_program program, BuildNotify notify, void *user_data) {
  if (!as<_cl_program>(program)) return CL_INVALID_PROGRAM;
  if (!notify) return CL_INVALID_VALUE;
  return CL_INVALID_OPERATION;
}

// Specialization constants belong to IL programs, which no fedcl device takes.
cl_int fedcl::api::clSetProgramSpecializationConstant(cl_program program, cl_uint spec_id, size_t spec_size,
                                                      const void *spec_value) {
  if (!as<_cl_program>(program)) return CL_INVALID_PROGRAM;
  return CL_INVALID_OPERATION;
}

namespace {

std::string kernel_names(cl_program program) {
  std::string names;
  for (const auto &kernel : program->kernels) names += (names.empty() ? "" : ";") + kernel.name;
  return names;
}

}  // namespace

cl_int fedcl::api::clGetProgramInfo(cl_program program, cl_program_info param, size_t size, void *value,
                                    size_t *size_ret) {
  if (!as<_cl_program>(program)) return CL_INVALID_PROGRAM;
  switch (param) {
    case CL_PROGRAM_REFERENCE_COUNT: return info_value(size, value, size_ret, program->refcount.load());
    case CL_PROGRAM_CONTEXT: return info_value(size, value, size_ret, program->context);
    case CL_PROGRAM_NUM_DEVICES: return info_value(size, value, size_ret, cl_uint(program->devices.size()));
    case CL_PROGRAM_DEVICES: return info_vector(size, value, size_ret, program->devices);
    case CL_PROGRAM_SOURCE: return info_string(size, value, size_ret, program->source);
    case CL_PROGRAM_IL: return info_bytes(size, value, size_ret, nullptr, 0);
    case CL_PROGRAM_SCOPE_GLOBAL_CTORS_PRESENT:
    case CL_PROGRAM_SCOPE_GLOBAL_DTORS_PRESENT: return info_value(size, value, size_ret, cl_bool(CL_FALSE));
    case CL_PROGRAM_NUM_KERNELS: {
      std::lock_guard<std::mutex> lock(program->mutex);
      if (!program->built()) return CL_INVALID_PROGRAM_EXECUTABLE;
      return info_value(size, value, size_ret, size_t(program->kernels.size()));
    }
    case CL_PROGRAM_KERNEL_NAMES: {
      std::lock_guard<std::mutex> lock(program->mutex);
      if (!program->built()) return CL_INVALID_PROGRAM_EXECUTABLE;
      return info_string(size, value, size_ret, kernel_names(program));
    }
    case CL_PROGRAM_BINARY_SIZES: {
      std::vector<std::vector<uint8_t>> binaries;
      cl_int err = program_binaries(program, &binaries);
      if (err != CL_SUCCESS) return err;
      std::vector<size_t> sizes;
      for (const auto &binary : binaries) sizes.push_back(binary.size());
      return info_vector(size, value, size_ret, sizes);
    }
    case CL_PROGRAM_BINARIES: {
      size_t needed = program->devices.size() * sizeof(unsigned char *);
      if (size_ret) *size_ret = needed;
      if (!value) return CL_SUCCESS;
      if (size < needed) return CL_INVALID_VALUE;
      std::vector<std::vector<uint8_t>> binaries;
      cl_int err = program_binaries(program, &binaries);
      if (err != CL_SUCCESS) return err;
      auto **out = static_cast<unsigned char **>(value);
      for (size_t d = 0; d < binaries.size(); d++)
        if (out[d]) std::memcpy(out[d], binaries[d].data(), binaries[d].size());
      return CL_SUCCESS;
    }
    default: return CL_INVALID_VALUE;
  }
}

cl_int fedcl::api::clGetProgramBuildInfo(cl_program program, cl_device_id device, cl_program_build_info param,
                                         size_t size, void *value, size_t *size_ret) {
  if (!as<_cl_program>(program)) return CL_INVALID_PROGRAM;
  const std::vector<cl_device_id> &devices = program->devices;
  if (!as<_cl_device_id>(device) || std::find(devices.begin(), devices.end(), device) == devices.end())
    return CL_INVALID_DEVICE;
  _cl_program::DeviceBuild build;
  {
    std::lock_guard<std::mutex> lock(program->mutex);
    auto it = program->builds.find(device);
    if (it != program->builds.end()) build = it->second;
  }
  switch (param) {
    case CL_PROGRAM_BUILD_STATUS: return info_value(size, value, size_ret, build.status);
    case CL_PROGRAM_BUILD_OPTIONS: return info_string(size, value, size_ret, build.options);
    case CL_PROGRAM_BUILD_LOG: return info_string(size, value, size_ret, build.log);
    case CL_PROGRAM_BINARY_TYPE: return info_value(size, value, size_ret, build.binary_type);
    case CL_PROGRAM_BUILD_GLOBAL_VARIABLE_TOTAL_SIZE: {
      std::vector<uint8_t> bytes;
      cl_int err = program_build_info(program, device, param, &bytes);
      if (err != CL_SUCCESS) return err;
      return info_bytes(size, value, size_ret, bytes.data(), bytes.size());
    }
    default: return CL_INVALID_VALUE;
  }
}
