#include "program.h"

#include <algorithm>
#include <cstring>
#include <functional>

#include "build_includes.h"
#include "build_options.h"
#include "query.h"

namespace fedcl {

namespace {

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
      desc.args.push_back(
          {a.getAddressQualifier(), a.getAccessQualifier(), a.getTypeQualifier(), a.getTypeName(), a.getName(),
           a.getValueSize()});
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

void set_include_file(wire::IncludeFile::Builder out, const IncludeFile &file) {
  out.setPath(file.path);
  out.setContents(capnp::Data::Reader(reinterpret_cast<const uint8_t *>(file.contents.data()), file.contents.size()));
}

cl_int post_source(Connection *connection, uint64_t id, cl_context context, const std::string &source) {
  RequestMessage request;
  auto create = request.root.initCreateProgramWithSource();
  create.setId(id);
  create.setContext(context->id);
  create.setSource(source);
  std::vector<IncludeFile> headers = absolute_includes(source);
  auto list = create.initHeaders(headers.size());
  for (size_t i = 0; i < headers.size(); i++) set_include_file(list[i], headers[i]);
  return connection->post(request);
}

// Fills one daemon's request of a build, compile or link, given that daemon's device ids.
using FillRequest = std::function<void(wire::Request::Builder request, Connection *connection,
                                       const std::vector<uint64_t> &device_ids)>;

// What build, compile and link share (see program_build); unreported: see program_link.
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

}  // namespace

cl_int program_create_with_source(cl_program program) {
  for (const ContextPart &part : program->context->parts) {
    cl_int err = post_source(part.connection, program->id, program->context, program->source);
    if (err != CL_SUCCESS) return err;
  }
  return CL_SUCCESS;
}

cl_int program_create_with_binaries(cl_program program, const size_t *lengths, const unsigned char **binaries,
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

cl_int program_create_with_built_in_kernels(cl_program program, const std::string &names) {
  for (Connection *connection : connections_of(program->devices)) {
    RequestMessage request;
    auto create = request.root.initCreateProgramWithBuiltInKernels();
    create.setId(program->id);
    create.setContext(program->context->id);
    std::vector<uint64_t> ids = remote_ids(program->devices, connection);
    set_list(create.initDevices(ids.size()), ids);
    create.setNames(names);
    cl_int err = connection->post(request);
    if (err != CL_SUCCESS) return err;
  }
  return CL_SUCCESS;
}

namespace {

// The headers the program's source includes from the application's -I folders go with the request.
void set_includes(capnp::List<wire::IncludeFolder>::Builder out, const BuildIncludes &includes) {
  for (size_t k = 0; k < includes.folders.size(); k++) {
    auto files = out[k].initFiles(includes.folders[k].size());
    for (size_t i = 0; i < includes.folders[k].size(); i++) set_include_file(files[i], includes.folders[k][i]);
  }
}

}  // namespace

cl_int program_build(cl_program program, const std::vector<cl_device_id> &devices, const char *options) {
  BuildIncludes includes = build_includes(options ? options : "", program->source);
  return run_program_operation(program, devices, options, [&](wire::Request::Builder request, Connection *,
                                                              const std::vector<uint64_t> &ids) {
    auto build = request.initBuildProgram();
    build.setProgram(program->id);
    build.setOptions(includes.options);
    set_list(build.initDevices(ids.size()), ids);
    set_includes(build.initIncludes(includes.folders.size()), includes);
  });
}

cl_int program_compile(cl_program program, const std::vector<cl_device_id> &devices, const char *options,
                       cl_uint num_headers, const cl_program *headers, const char **header_names) {
  // A header is a program on the daemon that compiles: its own where its context reaches that
  // daemon, otherwise a copy of its source made there for this compile.
  std::vector<std::pair<Connection *, uint64_t>> copies;
  BuildIncludes includes = build_includes(options ? options : "", program->source);
  auto header_id = [&](Connection *connection, cl_program header) {
    if (header->context->part(connection)) return header->id;
    uint64_t id = new_object_id();
    post_source(connection, id, program->context, header->source);
    copies.emplace_back(connection, id);
    return id;
  };
  cl_int err = run_program_operation(program, devices, options, [&](wire::Request::Builder request,
                                                                    Connection *connection,
                                                                    const std::vector<uint64_t> &ids) {
    auto compile = request.initCompileProgram();
    compile.setProgram(program->id);
    compile.setOptions(includes.options);
    set_list(compile.initDevices(ids.size()), ids);
    set_includes(compile.initIncludes(includes.folders.size()), includes);
    auto list = compile.initHeaders(num_headers);
    for (cl_uint i = 0; i < num_headers; i++) {
      list[i].setName(header_names[i]);
      list[i].setProgram(header_id(connection, headers[i]));
    }
  });
  for (auto &[connection, id] : copies) post_release(connection, id);
  return err;
}

cl_int program_link(cl_program program, const std::vector<cl_device_id> &devices, const char *options,
                    cl_uint num_inputs, const cl_program *inputs, size_t *unreported) {
  cl_int err = run_program_operation(program, devices, options, [&](wire::Request::Builder request, Connection *,
                                                                    const std::vector<uint64_t> &ids) {
    auto link = request.initLinkProgram();
    link.setId(program->id);
    link.setContext(program->context->id);
    link.setOptions(options ? options : "");
    set_list(link.initDevices(ids.size()), ids);
    auto list = link.initInputs(num_inputs);
    for (cl_uint i = 0; i < num_inputs; i++) list.set(i, inputs[i]->id);
  }, unreported);
  link_work_group_rules(program, devices, inputs, num_inputs);
  return err;
}

cl_int program_binaries(cl_program program, std::vector<std::vector<uint8_t>> *binaries) {
  const std::vector<cl_device_id> &devices = program->devices;
  binaries->assign(devices.size(), {});
  for (Connection *connection : connections_of(devices)) {
    std::vector<uint8_t> size_bytes, blob;
    cl_int err =
        remote_info(connection, program->id, wire::InfoKind::PROGRAM, CL_PROGRAM_BINARY_SIZES, 0, 0, &size_bytes);
    if (err == CL_SUCCESS)
      err = remote_info(connection, program->id, wire::InfoKind::PROGRAM, CL_PROGRAM_BINARIES, 0, 0, &blob);
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

cl_int program_build_info(cl_program program, cl_device_id device, cl_program_build_info param,
                          std::vector<uint8_t> *bytes) {
  return remote_info(device->connection, program->id, wire::InfoKind::PROGRAM_BUILD, param, device->remote_id, 0,
                     bytes);
}

bool program_calls_printf(cl_program program) {
  return program->has_source && program->source.find("printf") != std::string::npos;
}

}  // namespace fedcl
