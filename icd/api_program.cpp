// Programs.
#include <cstring>

#include "api.h"
#include "info.h"
#include "query.h"

using namespace fedcl;

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
  auto *program = new _cl_program();
  program->context = context;
  program->source = std::move(source);
  hold(context);
  for (const ContextPart &part : context->parts) {
    RequestMessage request;
    auto create = request.root.initCreateProgramWithSource();
    create.setId(program->id);
    create.setContext(context->id);
    create.setSource(program->source);
    cl_int err = part.connection->post(request);
    if (err != CL_SUCCESS) {
      release(program);
      return set_error(errcode_ret, err), nullptr;
    }
  }
  set_error(errcode_ret, CL_SUCCESS);
  return program;
}

cl_int fedcl::api::clRetainProgram(cl_program program) {
  return as<_cl_program>(program) ? retain(program) : CL_INVALID_PROGRAM;
}

cl_int fedcl::api::clReleaseProgram(cl_program program) {
  return as<_cl_program>(program) ? release(program) : CL_INVALID_PROGRAM;
}

namespace {

std::vector<KernelDesc> kernels_from(wire::BuildResult::Reader result) {
  std::vector<KernelDesc> kernels;
  for (auto k : result.getKernels()) {
    KernelDesc desc{k.getName(), {}};
    for (auto a : k.getArgs())
      desc.args.push_back({a.getAddressQualifier(), a.getAccessQualifier(), a.getTypeQualifier(), a.getTypeName(), a.getName()});
    kernels.push_back(std::move(desc));
  }
  return kernels;
}

cl_device_id device_of(cl_context context, Connection *connection, uint64_t remote_id) {
  for (cl_device_id device : context->devices)
    if (device->connection == connection && device->remote_id == remote_id) return device;
  return nullptr;
}

}  // namespace

cl_int fedcl::api::clBuildProgram(cl_program program, cl_uint num_devices, const cl_device_id *device_list,
                                  const char *options, void(CL_CALLBACK *notify)(cl_program, void *),
                                  void *user_data) {
  if (!as<_cl_program>(program)) return CL_INVALID_PROGRAM;
  if ((num_devices == 0) != (device_list == nullptr) || (!notify && user_data)) return CL_INVALID_VALUE;
  cl_context context = program->context;
  std::vector<cl_device_id> devices(device_list, device_list + num_devices);
  if (devices.empty()) devices = context->devices;
  for (cl_device_id device : devices)
    if (!as<_cl_device_id>(device) || !context->has_device(device)) return CL_INVALID_DEVICE;
  if (program->attached_kernels.load() > 0) return CL_INVALID_OPERATION;

  // One build request per daemon, all in flight at once.
  std::vector<std::pair<Connection *, std::shared_ptr<PendingReply>>> builds;
  for (const ContextPart &part : context->parts) {
    RequestMessage request;
    auto build = request.root.initBuildProgram();
    build.setProgram(program->id);
    build.setOptions(options ? options : "");
    std::vector<uint64_t> ids;
    for (cl_device_id device : devices)
      if (device->connection == part.connection) ids.push_back(device->remote_id);
    if (ids.empty()) continue;
    auto list = build.initDevices(ids.size());
    for (size_t i = 0; i < ids.size(); i++) list.set(i, ids[i]);
    builds.emplace_back(part.connection, part.connection->send_call(request));
  }
  cl_int result = CL_SUCCESS;
  for (auto &[connection, pending] : builds) {
    cl_int status = connection->wait(*pending);
    std::lock_guard<std::mutex> lock(program->mutex);
    if (pending->reader && pending->reply().which() == wire::Reply::BUILD) {
      auto build = pending->reply().getBuild();
      for (auto d : build.getDevices()) {
        cl_device_id device = device_of(context, connection, d.getDevice());
        if (!device) continue;
        auto &entry = program->builds[device];
        entry.status = d.getStatus();
        entry.log = d.getLog();
        entry.options = options ? options : "";
      }
      if (status == CL_SUCCESS) program->kernels = kernels_from(build);
    }
    if (status != CL_SUCCESS && result == CL_SUCCESS) result = status;
  }
  if (notify) {
    hold(program);
    Runtime::get().defer([program, notify, user_data] {
      notify(program, user_data);
      unhold(program);
    });
  }
  return result;
}

namespace {

// CL_PROGRAM_BINARY_SIZES and CL_PROGRAM_BINARIES, in the order of the context's devices.
cl_int program_binaries(cl_program program, std::vector<std::vector<uint8_t>> *binaries) {
  cl_context context = program->context;
  binaries->assign(context->devices.size(), {});
  for (const ContextPart &part : context->parts) {
    std::vector<uint8_t> size_bytes, blob;
    cl_int err = remote_info(part.connection, program->id, wire::InfoKind::PROGRAM, CL_PROGRAM_BINARY_SIZES, 0, 0, &size_bytes);
    if (err == CL_SUCCESS) err = remote_info(part.connection, program->id, wire::InfoKind::PROGRAM, CL_PROGRAM_BINARIES, 0, 0, &blob);
    if (err != CL_SUCCESS) return err;
    std::vector<size_t> sizes(size_bytes.size() / sizeof(size_t));
    std::memcpy(sizes.data(), size_bytes.data(), sizes.size() * sizeof(size_t));
    size_t offset = 0, index = 0;
    for (size_t d = 0; d < context->devices.size(); d++) {
      if (context->devices[d]->connection != part.connection || index >= sizes.size()) continue;
      size_t size = std::min(sizes[index++], blob.size() - offset);
      (*binaries)[d].assign(blob.begin() + offset, blob.begin() + offset + size);
      offset += size;
    }
  }
  return CL_SUCCESS;
}

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
    case CL_PROGRAM_NUM_DEVICES: return info_value(size, value, size_ret, cl_uint(program->context->devices.size()));
    case CL_PROGRAM_DEVICES: return info_vector(size, value, size_ret, program->context->devices);
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
      size_t needed = program->context->devices.size() * sizeof(unsigned char *);
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
  if (!as<_cl_device_id>(device) || !program->context->has_device(device)) return CL_INVALID_DEVICE;
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
    case CL_PROGRAM_BINARY_TYPE:
      return info_value(size, value, size_ret,
                        cl_program_binary_type(build.status == CL_BUILD_SUCCESS ? CL_PROGRAM_BINARY_TYPE_EXECUTABLE
                                                                                : CL_PROGRAM_BINARY_TYPE_NONE));
    case CL_PROGRAM_BUILD_GLOBAL_VARIABLE_TOTAL_SIZE: {
      std::vector<uint8_t> bytes;
      cl_int err = remote_info(device->connection, program->id, wire::InfoKind::PROGRAM_BUILD, param,
                               device->remote_id, 0, &bytes);
      if (err != CL_SUCCESS) return err;
      return info_bytes(size, value, size_ret, bytes.data(), bytes.size());
    }
    default: return CL_INVALID_VALUE;
  }
}

