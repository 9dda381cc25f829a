// Programs: from source, binaries and built-in kernels; build, compile and link; their info.
//
// A program exists on every daemon that holds one of its devices, under the same id. Build,
// compile and link send one request to each of those daemons at once and wait for all; each
// daemon's BuildResult updates the program's per-device state and, once there is an executable,
// the kernel metadata that clCreateKernel and clSetKernelArg check against.
#include <algorithm>
#include <cstring>
#include <functional>

#include "api.h"
#include "build_options.h"
#include "device.h"
#include "info.h"
#include "query.h"

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

// The daemons that hold devices of the list, in the order of their first device.
std::vector<Connection *> connections_of(const std::vector<cl_device_id> &devices) {
  std::vector<Connection *> connections;
  for (cl_device_id device : devices)
    if (std::find(connections.begin(), connections.end(), device->connection) == connections.end())
      connections.push_back(device->connection);
  return connections;
}

// The ids, on connection's daemon, of the devices of the list that it holds.
std::vector<uint64_t> remote_ids(const std::vector<cl_device_id> &devices, const Connection *connection) {
  std::vector<uint64_t> ids;
  for (cl_device_id device : devices)
    if (device->connection == connection) ids.push_back(device->remote_id);
  return ids;
}

template <typename T>
void set_list(typename capnp::List<T>::Builder list, const std::vector<T> &values) {
  for (size_t i = 0; i < values.size(); i++) list.set(i, values[i]);
}

cl_device_id device_of(cl_program program, const Connection *connection, uint64_t remote_id) {
  for (cl_device_id device : program->devices)
    if (device->connection == connection && device->remote_id == remote_id) return device;
  return nullptr;
}

std::vector<KernelDesc> kernels_from(wire::BuildResult::Reader result) {
  std::vector<KernelDesc> kernels;
  for (auto k : result.getKernels()) {
    KernelDesc desc{k.getName(), {}, k.getArgInfoAvailable()};
    auto compile_size = k.getCompileWorkGroupSize();
    for (unsigned d = 0; d < 3 && d < compile_size.size(); d++) desc.compile_work_group_size[d] = compile_size[d];
    for (auto a : k.getArgs())
      desc.args.push_back({a.getAddressQualifier(), a.getAccessQualifier(), a.getTypeQualifier(), a.getTypeName(), a.getName()});
    kernels.push_back(std::move(desc));
  }
  return kernels;
}

// Takes in what one daemon reported about program; the caller holds program->mutex.
void apply_build_result(cl_program program, const Connection *connection, wire::BuildResult::Reader result) {
  bool executable = false;
  for (auto d : result.getDevices()) {
    cl_device_id device = device_of(program, connection, d.getDevice());
    if (!device) continue;
    auto &build = program->builds[device];
    build.status = d.getStatus();
    build.binary_type = d.getBinaryType();
    build.log = d.getLog();
    build.options = d.getOptions();
    executable |= build.status == CL_BUILD_SUCCESS && build.binary_type == CL_PROGRAM_BINARY_TYPE_EXECUTABLE;
  }
  if (executable) program->kernels = kernels_from(result);
}

// Fills one daemon's request of a build, compile or link, given that daemon's device ids.
using FillRequest = std::function<void(wire::Request::Builder request, Connection *connection,
                                       const std::vector<uint64_t> &device_ids)>;

// Build, compile or link program for devices on every daemon concerned at once; returns the first
// failure. Another operation still running for one of the devices makes it CL_INVALID_OPERATION.
// unreported (if given) receives how many devices no daemon described: a link made no program there.
cl_int run_program_operation(cl_program program, const std::vector<cl_device_id> &devices, const char *options,
                             const FillRequest &fill, size_t *unreported = nullptr) {
  {
    std::lock_guard<std::mutex> lock(program->mutex);
    for (cl_device_id device : devices)
      if (program->builds[device].status == CL_BUILD_IN_PROGRESS) return CL_INVALID_OPERATION;
    for (cl_device_id device : devices) {
      auto &build = program->builds[device];
      build.status = CL_BUILD_IN_PROGRESS;
      build.options = options ? options : "";
      build.uniform_work_groups = build_needs_uniform_work_groups(options);
      build.log.clear();
    }
  }
  std::vector<std::pair<Connection *, std::shared_ptr<PendingReply>>> calls;
  for (Connection *connection : connections_of(devices)) {
    RequestMessage request;
    fill(request.root, connection, remote_ids(devices, connection));
    calls.emplace_back(connection, connection->send_call(request));
  }
  cl_int result = CL_SUCCESS;
  for (auto &[connection, pending] : calls) {
    cl_int status = connection->wait(*pending);
    std::lock_guard<std::mutex> lock(program->mutex);
    if (pending->reader && pending->reply().which() == wire::Reply::BUILD)
      apply_build_result(program, connection, pending->reply().getBuild());
    if (status != CL_SUCCESS && result == CL_SUCCESS) result = status;
  }
  // Devices no daemon described (it went away, or it made no program) failed.
  std::lock_guard<std::mutex> lock(program->mutex);
  size_t missing = 0;
  for (cl_device_id device : devices) {
    if (program->builds[device].status != CL_BUILD_IN_PROGRESS) continue;
    program->builds[device].status = CL_BUILD_ERROR;
    missing++;
  }
  if (unreported) *unreported = missing;
  return result;
}

// A linked program needs uniform work-groups on a device where any input was compiled needing them
// (link options cannot change the language version).
void link_work_group_rules(cl_program program, const std::vector<cl_device_id> &devices, const cl_program *inputs,
                           cl_uint count) {
  for (cl_device_id device : devices) {
    bool uniform = std::any_of(inputs, inputs + count, [&](cl_program input) {
      std::lock_guard<std::mutex> lock(input->mutex);
      auto it = input->builds.find(device);
      return it == input->builds.end() || it->second.uniform_work_groups;
    });
    std::lock_guard<std::mutex> lock(program->mutex);
    program->builds[device].uniform_work_groups = uniform;
  }
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

namespace {

// Creates program from one binary per device of the program on each daemon concerned; statuses
// receives each device's verdict. Returns the first failure.
cl_int load_binaries(cl_program program, const size_t *lengths, const unsigned char **binaries,
                     std::vector<cl_int> *statuses) {
  const std::vector<cl_device_id> &devices = program->devices;
  std::vector<std::pair<Connection *, std::shared_ptr<PendingReply>>> calls;
  for (Connection *connection : connections_of(devices)) {
    RequestMessage request;
    auto create = request.root.initCreateProgramWithBinary();
    create.setId(program->id);
    create.setContext(program->context->id);
    std::vector<uint64_t> ids = remote_ids(devices, connection);
    set_list(create.initDevices(ids.size()), ids);
    auto list = create.initBinaries(ids.size());
    for (size_t i = 0, n = 0; i < devices.size(); i++)
      if (devices[i]->connection == connection) list.set(n++, kj::arrayPtr(binaries[i], lengths[i]));
    calls.emplace_back(connection, connection->send_call(request));
  }
  cl_int result = CL_SUCCESS;
  for (auto &[connection, pending] : calls) {
    cl_int status = connection->wait(*pending);
    if (status != CL_SUCCESS && result == CL_SUCCESS) result = status;
    if (!pending->reader) continue;
    auto reply = pending->reply();
    if (reply.which() == wire::Reply::BUILD) {
      std::lock_guard<std::mutex> lock(program->mutex);
      apply_build_result(program, connection, reply.getBuild());
    } else if (reply.which() == wire::Reply::INFO) {
      // The daemon's verdicts, one cl_int per device in the order its request listed them.
      auto info = reply.getInfo();
      size_t n = 0;
      for (size_t i = 0; i < devices.size(); i++) {
        if (devices[i]->connection != connection) continue;
        if ((n + 1) * sizeof(cl_int) <= info.size())
          std::memcpy(&(*statuses)[i], info.begin() + n * sizeof(cl_int), sizeof(cl_int));
        n++;
      }
    }
  }
  return result;
}

}  // namespace

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
    err = load_binaries(program, lengths, binaries, &statuses);
  }
  if (binary_status) std::copy(statuses.begin(), statuses.end(), binary_status);
  if (err != CL_SUCCESS) {
    if (program) release(program);
    return set_error(errcode_ret, err), nullptr;
  }
  set_error(errcode_ret, CL_SUCCESS);
  return program;
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
  for (Connection *connection : connections_of(devices)) {
    RequestMessage request;
    auto create = request.root.initCreateProgramWithBuiltInKernels();
    create.setId(program->id);
    create.setContext(context->id);
    std::vector<uint64_t> ids = remote_ids(devices, connection);
    set_list(create.initDevices(ids.size()), ids);
    create.setNames(names);
    err = connection->post(request);
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

cl_int fedcl::api::clBuildProgram(cl_program program, cl_uint num_devices, const cl_device_id *device_list,
                                  const char *options, BuildNotify notify, void *user_data) {
  if (!as<_cl_program>(program)) return CL_INVALID_PROGRAM;
  if (!notify && user_data) return CL_INVALID_VALUE;
  std::vector<cl_device_id> devices;
  cl_int err = device_list_of(num_devices, device_list, program->devices, &devices);
  if (err != CL_SUCCESS) return err;
  if (program->attached_kernels.load() > 0) return CL_INVALID_OPERATION;
  if (program->has_source && !all_devices(devices, CL_DEVICE_COMPILER_AVAILABLE)) return CL_COMPILER_NOT_AVAILABLE;
  err = run_program_operation(program, devices, options, [&](wire::Request::Builder request, Connection *,
                                                             const std::vector<uint64_t> &ids) {
    auto build = request.initBuildProgram();
    build.setProgram(program->id);
    build.setOptions(options ? options : "");
    set_list(build.initDevices(ids.size()), ids);
  });
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

  // A header is a program on the daemon that compiles: its own where its context reaches that
  // daemon, otherwise a copy of its source made there for this compile.
  std::vector<std::pair<Connection *, uint64_t>> copies;
  auto header_id = [&](Connection *connection, cl_program header) {
    if (header->context->part(connection)) return header->id;
    uint64_t id = new_object_id();
    RequestMessage request;
    auto create = request.root.initCreateProgramWithSource();
    create.setId(id);
    create.setContext(program->context->id);
    create.setSource(header->source);
    connection->post(request);
    copies.emplace_back(connection, id);
    return id;
  };
  err = run_program_operation(program, devices, options, [&](wire::Request::Builder request, Connection *connection,
                                                             const std::vector<uint64_t> &ids) {
    auto compile = request.initCompileProgram();
    compile.setProgram(program->id);
    compile.setOptions(options ? options : "");
    set_list(compile.initDevices(ids.size()), ids);
    auto headers = compile.initHeaders(num_input_headers);
    for (cl_uint i = 0; i < num_input_headers; i++) {
      headers[i].setName(header_include_names[i]);
      headers[i].setProgram(header_id(connection, input_headers[i]));
    }
  });
  for (auto &[connection, id] : copies) {
    RequestMessage request;
    request.root.setRelease(id);
    connection->post(request);
  }
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
  cl_int err = run_program_operation(program, devices, options, [&](wire::Request::Builder request, Connection *,
                                                                    const std::vector<uint64_t> &ids) {
    auto link = request.initLinkProgram();
    link.setId(program->id);
    link.setContext(context->id);
    link.setOptions(options ? options : "");
    set_list(link.initDevices(ids.size()), ids);
    auto inputs = link.initInputs(num_input_programs);
    for (cl_uint i = 0; i < num_input_programs; i++) inputs.set(i, input_programs[i]->id);
  }, &unreported);
  link_work_group_rules(program, devices, input_programs, num_input_programs);
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

// CL_PROGRAM_BINARY_SIZES and CL_PROGRAM_BINARIES, in the order of the program's devices.
cl_int program_binaries(cl_program program, std::vector<std::vector<uint8_t>> *binaries) {
  const std::vector<cl_device_id> &devices = program->devices;
  binaries->assign(devices.size(), {});
  for (Connection *connection : connections_of(devices)) {
    std::vector<uint8_t> size_bytes, blob;
    cl_int err = remote_info(connection, program->id, wire::InfoKind::PROGRAM, CL_PROGRAM_BINARY_SIZES, 0, 0, &size_bytes);
    if (err == CL_SUCCESS) err = remote_info(connection, program->id, wire::InfoKind::PROGRAM, CL_PROGRAM_BINARIES, 0, 0, &blob);
    if (err != CL_SUCCESS) return err;
    std::vector<size_t> sizes(size_bytes.size() / sizeof(size_t));
    std::memcpy(sizes.data(), size_bytes.data(), sizes.size() * sizeof(size_t));
    size_t offset = 0, index = 0;
    for (size_t d = 0; d < devices.size(); d++) {
      if (devices[d]->connection != connection || index >= sizes.size()) continue;
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
      cl_int err = remote_info(device->connection, program->id, wire::InfoKind::PROGRAM_BUILD, param,
                               device->remote_id, 0, &bytes);
      if (err != CL_SUCCESS) return err;
      return info_bytes(size, value, size_ret, bytes.data(), bytes.size());
    }
    default: return CL_INVALID_VALUE;
  }
}
