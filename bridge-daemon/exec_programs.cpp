// Programs: from source (exec_objects.cpp), binaries, IL and built-in kernels; build, compile and
// link; and sub-devices.
//
// Build, compile and link can take seconds: they run on libuv's thread pool, their session's
// commands on queues go on meanwhile (Session::background_work_started), and their outcome goes
// back in one reply, a BuildResult.
#include <algorithm>

#include "exec.h"
#include "kernel_names.h"
#include "log.h"
#include "off_loop.h"
#include "program_headers.h"
#include "ptx_entries.h"
#include "server.h"

namespace fedcld {

namespace {

// ---------------------------------------------------------------------------------------------
// What the client mirrors about a program: per-device state and, once there is an executable,
// its kernels' names and argument metadata (so it checks clCreateKernel and clSetKernelArg alone).

std::string build_text(cl_program program, cl_device_id device, cl_program_build_info param) {
  return backend_string([&](size_t size, void *value, size_t *size_ret) {
    return clGetProgramBuildInfo(program, device, param, size, value, size_ret);
  });
}

template <typename T>
T build_value(cl_program program, cl_device_id device, cl_program_build_info param, T fallback) {
  T value = fallback;
  clGetProgramBuildInfo(program, device, param, sizeof value, &value, nullptr);
  return value;
}

std::string arg_text(cl_kernel kernel, cl_uint index, cl_kernel_arg_info param) {
  return backend_string([&](size_t size, void *value, size_t *size_ret) {
    return clGetKernelArgInfo(kernel, index, param, size, value, size_ret);
  });
}

template <typename T>
T arg_value(cl_kernel kernel, cl_uint index, cl_kernel_arg_info param) {
  T value{};
  clGetKernelArgInfo(kernel, index, param, sizeof value, &value, nullptr);
  return value;
}

std::string kernel_name(cl_kernel kernel) {
  return backend_string([&](size_t size, void *value, size_t *size_ret) {
    return clGetKernelInfo(kernel, CL_KERNEL_FUNCTION_NAME, size, value, size_ret);
  });
}

bool has_arg_info(cl_kernel kernel, cl_uint nargs) {
  cl_kernel_arg_address_qualifier address;
  return nargs == 0 || clGetKernelArgInfo(kernel, 0, CL_KERNEL_ARG_ADDRESS_QUALIFIER, sizeof address, &address,
                                          nullptr) == CL_SUCCESS;
}

// Without -cl-kernel-arg-info backends (PoCL, NVIDIA) keep kernel argument metadata to themselves,
// and the client needs it to check clSetKernelArg alone. The application's own build must stay
// exactly as it asked (NVIDIA cannot even build an argument-less kernel with that option), so the
// metadata comes from a twin: the same source built with the option, used for nothing else. It is
// built after the application's build and after its log was read: NVIDIA keeps one build log for
// both (a log read after the twin's build comes back empty). Null when the program has no source,
// the options already ask for the info, or the twin fails. NVIDIA needs no twin: the PTX of the
// application's own build declares what the checks need (ptx_entries.h).
cl_program build_metadata_twin(cl_program program, const std::vector<cl_device_id> &devices, std::string options) {
  if (options.find("-cl-kernel-arg-info") != std::string::npos) return nullptr;
  std::string source = backend_string([&](size_t size, void *value, size_t *size_ret) {
    return clGetProgramInfo(program, CL_PROGRAM_SOURCE, size, value, size_ret);
  });
  cl_context context = nullptr;
  if (source.empty() || clGetProgramInfo(program, CL_PROGRAM_CONTEXT, sizeof context, &context, nullptr) != CL_SUCCESS)
    return nullptr;
  const char *text = source.c_str();
  size_t length = source.size();
  cl_program twin = clCreateProgramWithSource(context, 1, &text, &length, nullptr);
  if (!twin) return nullptr;
  options += " -cl-kernel-arg-info";
  if (clBuildProgram(twin, devices.size(), devices.empty() ? nullptr : devices.data(), options.c_str(), nullptr,
                     nullptr) != CL_SUCCESS) {
    clReleaseProgram(twin);
    return nullptr;
  }
  return twin;
}

// The checks' metadata as the kernel's PTX declares it, and whether a pointer's data is const as
// its source text says (text, when it lists as many parameters; the client lets a kernel's const
// arguments stay current elsewhere). No names, and type names only for the checks (samplers and
// images): the application asks those of a build with -cl-kernel-arg-info, which has them itself.
void describe_args(const std::vector<PtxParam> &params, const KernelText *text,
                   capnp::List<wire::KernelDesc::ArgDesc>::Builder args) {
  bool text_fits = text && text->const_targets.size() == args.size();
  for (cl_uint a = 0; a < args.size(); a++) {
    args[a].setAddressQualifier(params[a].address);
    args[a].setAccessQualifier(params[a].access);
    bool pointer = params[a].address == CL_KERNEL_ARG_ADDRESS_GLOBAL || params[a].address == CL_KERNEL_ARG_ADDRESS_CONSTANT;
    if (params[a].address == CL_KERNEL_ARG_ADDRESS_CONSTANT || (pointer && text_fits && text->const_targets[a]))
      args[a].setTypeQualifier(CL_KERNEL_ARG_TYPE_CONST);
    if (params[a].sampler) args[a].setTypeName("sampler_t");
    // Which image type the PTX does not say; that it is one is all clSetKernelArg's check needs.
    if (params[a].image) args[a].setTypeName("image");
    args[a].setValueSize(params[a].value_size);
  }
}

void describe_args(cl_kernel kernel, capnp::List<wire::KernelDesc::ArgDesc>::Builder args) {
  for (cl_uint a = 0; a < args.size(); a++) {
    args[a].setAddressQualifier(arg_value<cl_kernel_arg_address_qualifier>(kernel, a, CL_KERNEL_ARG_ADDRESS_QUALIFIER));
    args[a].setAccessQualifier(arg_value<cl_kernel_arg_access_qualifier>(kernel, a, CL_KERNEL_ARG_ACCESS_QUALIFIER));
    args[a].setTypeQualifier(arg_value<cl_kernel_arg_type_qualifier>(kernel, a, CL_KERNEL_ARG_TYPE_QUALIFIER));
    args[a].setTypeName(arg_text(kernel, a, CL_KERNEL_ARG_TYPE_NAME));
    args[a].setName(arg_text(kernel, a, CL_KERNEL_ARG_NAME));
  }
}

// The kernel's reqd_work_group_size for the first device that answers (see KernelDesc in the schema).
void describe_compile_work_group_size(cl_kernel kernel, const std::vector<cl_device_id> &devices,
                                      capnp::List<uint64_t>::Builder out) {
  for (cl_device_id device : devices) {
    size_t size[3] = {};
    if (clGetKernelWorkGroupInfo(kernel, device, CL_KERNEL_COMPILE_WORK_GROUP_SIZE, sizeof size, size, nullptr) !=
        CL_SUCCESS)
      continue;
    for (unsigned d = 0; d < 3; d++) out.set(d, size[d]);
    return;
  }
}

std::string program_source(cl_program program) {
  return backend_string([&](size_t size, void *value, size_t *size_ret) {
    return clGetProgramInfo(program, CL_PROGRAM_SOURCE, size, value, size_ret);
  });
}

// The entries of program's PTX binary (all devices' binaries, each entry as often as devices have
// it); empty when the backend gives no binary.
std::vector<PtxEntry> ptx_entries(cl_program program) {
  try {
    std::vector<uint8_t> binaries = program_binaries(program);
    return scan_ptx_entries(std::string(binaries.begin(), binaries.end()));
  } catch (const RequestError &) {
    return {};
  }
}

// The OpenCL C program was made of: its own source, or a linked program's inputs' sources.
std::string program_text(cl_program program, const std::vector<cl_program> &link_inputs) {
  std::string source = program_source(program);
  for (cl_program input : link_inputs) source += "\n" + program_source(input);
  return source;
}

// The names of program's kernels, found without asking the backend to list them: from the OpenCL C
// the program was made of (its own source, or a linked program's inputs' sources), or from its
// binary when that is PTX (programs from binaries on NVIDIA). Empty when neither tells.
std::vector<std::string> kernel_names_from_text(cl_program program, const std::vector<cl_program> &link_inputs) {
  std::string source = program_text(program, link_inputs);
  if (!source.empty()) return scan_kernel_names(source);
  std::vector<std::string> names;
  for (const PtxEntry &entry : ptx_entries(program)) names.push_back(entry.name);
  return names;  // empty without a binary: the backend lists the kernels
}

size_t longest(const std::vector<std::string> &names) {
  size_t most = 0;
  for (const std::string &name : names) most = std::max(most, name.size());
  return most;
}

// Every kernel of program. Where the backend cannot list long names safely (NVIDIA) and the
// program's text shows such a name, its kernels are made by name instead; a linked program's text
// is its inputs' (link_inputs), which the backend does not keep as the program's source.
std::vector<cl_kernel> program_kernels(cl_program program, const BackendPlatform &backend,
                                       const std::vector<cl_program> &link_inputs) {
  std::vector<cl_kernel> kernels;
  if (backend.safe_kernel_name_length) {
    std::vector<std::string> names = kernel_names_from_text(program, link_inputs);
    if (longest(names) > backend.safe_kernel_name_length) {
      for (const std::string &name : names)
        if (cl_kernel kernel = clCreateKernel(program, name.c_str(), nullptr)) kernels.push_back(kernel);
      FEDCLD_LOG(info, "listed %zu kernels of a program with names over %zu characters from its text",
                 kernels.size(), backend.safe_kernel_name_length);
      return kernels;
    }
  }
  cl_uint count = 0;
  if (clCreateKernelsInProgram(program, 0, nullptr, &count) != CL_SUCCESS || count == 0) return kernels;
  kernels.resize(count);
  if (clCreateKernelsInProgram(program, count, kernels.data(), &count) != CL_SUCCESS) kernels.clear();
  return kernels;
}

// twin_options, when given, allows building a metadata twin with them for the kernels whose
// argument metadata the backend withholds (builds run on the thread pool only, never on the loop).
void describe_kernels(cl_program program, const std::vector<cl_device_id> &devices, const BackendPlatform &backend,
                      const std::string *twin_options, const std::vector<cl_program> &link_inputs,
                      wire::BuildResult::Builder result) {
  std::vector<cl_kernel> kernels = program_kernels(program, backend, link_inputs);
  cl_uint count = kernels.size();
  if (count == 0) return;
  cl_program twin = nullptr;
  bool twin_tried = false, ptx_read = false;
  std::vector<PtxEntry> entries;
  std::vector<KernelText> texts;
  auto list = result.initKernels(count);
  for (cl_uint k = 0; k < count; k++) {
    std::string name = kernel_name(kernels[k]);
    cl_uint nargs = 0;
    clGetKernelInfo(kernels[k], CL_KERNEL_NUM_ARGS, sizeof nargs, &nargs, nullptr);
    bool available = has_arg_info(kernels[k], nargs);
    list[k].setName(name);
    list[k].setArgInfoAvailable(available);
    describe_compile_work_group_size(kernels[k], devices, list[k].initCompileWorkGroupSize(3));
    if (!available && backend.ptx_binaries && !ptx_read) {
      entries = ptx_entries(program);
      texts = scan_kernels(program_text(program, link_inputs));
      ptx_read = true;
    }
    auto entry = std::find_if(entries.begin(), entries.end(), [&](const PtxEntry &e) { return e.name == name; });
    if (!available && entry != entries.end() && entry->params.size() == nargs) {
      auto text = std::find_if(texts.begin(), texts.end(), [&](const KernelText &t) { return t.name == name; });
      describe_args(entry->params, text == texts.end() ? nullptr : &*text, list[k].initArgs(nargs));
      clReleaseKernel(kernels[k]);
      continue;
    }
    cl_kernel metadata = kernels[k], twin_kernel = nullptr;
    cl_uint twin_args = 0;
    if (!available && twin_options && !twin_tried) {
      twin = build_metadata_twin(program, devices, *twin_options);
      twin_tried = true;
    }
    if (!available && twin) twin_kernel = clCreateKernel(twin, name.c_str(), nullptr);
    if (twin_kernel && clGetKernelInfo(twin_kernel, CL_KERNEL_NUM_ARGS, sizeof twin_args, &twin_args, nullptr) ==
                           CL_SUCCESS && twin_args == nargs)
      metadata = twin_kernel;
    describe_args(metadata, list[k].initArgs(nargs));
    if (twin_kernel) clReleaseKernel(twin_kernel);
    clReleaseKernel(kernels[k]);
  }
  if (twin) clReleaseProgram(twin);
}

// Fills result for devices (ids in device_ids, 0 where the client did not name the device);
// link_inputs: the programs a linked program was made of.
void describe_program(cl_program program, const std::vector<cl_device_id> &devices,
                      const std::vector<uint64_t> &device_ids, const BackendPlatform &backend,
                      wire::BuildResult::Builder result, const std::string *twin_options = nullptr,
                      const std::vector<cl_program> &link_inputs = {}) {
  auto list = result.initDevices(devices.size());
  bool executable = false;
  for (size_t d = 0; d < devices.size(); d++) {
    auto status = build_value<cl_build_status>(program, devices[d], CL_PROGRAM_BUILD_STATUS, CL_BUILD_NONE);
    auto type = build_value<cl_program_binary_type>(program, devices[d], CL_PROGRAM_BINARY_TYPE, CL_PROGRAM_BINARY_TYPE_NONE);
    list[d].setDevice(device_ids[d]);
    list[d].setStatus(status);
    list[d].setLog(build_text(program, devices[d], CL_PROGRAM_BUILD_LOG));
    list[d].setOptions(build_text(program, devices[d], CL_PROGRAM_BUILD_OPTIONS));
    list[d].setBinaryType(static_cast<uint32_t>(type));
    executable |= status == CL_BUILD_SUCCESS && type == CL_PROGRAM_BINARY_TYPE_EXECUTABLE;
  }
  if (executable) describe_kernels(program, devices, backend, twin_options, link_inputs, result);
}

// Every device of program, for requests that named none.
std::vector<cl_device_id> program_devices(cl_program program) {
  cl_uint count = 0;
  clGetProgramInfo(program, CL_PROGRAM_NUM_DEVICES, sizeof count, &count, nullptr);
  std::vector<cl_device_id> devices(count);
  clGetProgramInfo(program, CL_PROGRAM_DEVICES, count * sizeof(cl_device_id), devices.data(), nullptr);
  return devices;
}

// ---------------------------------------------------------------------------------------------
// Build, compile and link on the thread pool (off_loop.h).

struct ProgramWork final : OffLoopWork {
  uint64_t seq = 0;                    // the request's, for the reply built on the pool
  const char *what;                    // the backend call, for messages
  uint64_t program_id;
  cl_program program = nullptr;        // retained; link sets it on the pool
  cl_context context = nullptr;        // the context of the program link makes
  std::vector<cl_device_id> devices;
  std::vector<uint64_t> device_ids;
  std::string options;
  bool metadata_twin = false;          // a build: argument metadata may come from a twin
  std::vector<cl_program> inputs;      // headers or link inputs, retained
  // The application's headers it builds with: each -I folder's, and what the source includes by
  // absolute name (kept while it runs, should the program be released meanwhile).
  std::vector<std::shared_ptr<HeaderFolder>> headers;
  std::vector<std::string> names;      // header include names
  bool may_print = false;              // the program link makes may call printf (print_gate.h)
  std::function<cl_int(ProgramWork &)> call;  // the backend call
  const BackendPlatform *backend = nullptr;    // the session's (read on the pool)
  cl_int status = CL_SUCCESS;
  // Held by pointer: a message builder's destructor may throw, which an override's may not.
  std::unique_ptr<capnp::MallocMessageBuilder> reply = std::make_unique<capnp::MallocMessageBuilder>();

  ~ProgramWork() override {
    for (cl_program input : inputs) clReleaseProgram(input);
    if (program) clReleaseProgram(program);
  }

  void run() override {
    status = call(*this);
    auto root = reply->initRoot<wire::Reply>();
    root.setSeq(seq);
    root.setStatus(status);
    if (status != CL_SUCCESS) root.setMessage(std::string(what) + " failed with " + std::to_string(status));
    auto result = root.initBuild();
    if (!program) return;
    if (devices.empty()) {
      devices = program_devices(program);
      device_ids.assign(devices.size(), 0);
    }
    describe_program(program, devices, device_ids, *backend, result, metadata_twin ? &options : nullptr,
                     context ? inputs : std::vector<cl_program>{});
  }

  bool finish(Session &session, uint64_t) override {
    // A program that link made joins the session's objects, even when linking failed: the client
    // reads its build log.
    if (context && program) {
      clRetainProgram(program);
      session.objects().add(program_id, ObjectKind::program, program, context);
      session.objects().get(program_id, ObjectKind::program).may_print = may_print;
    }
    if (seq != 0) session.send_reply(*reply);
    else if (status != CL_SUCCESS) session.notify_error(program_id, 0, status, std::string(what) + " failed");
    return status == CL_SUCCESS;
  }
};

// Queues job; its reply is sent when it is done, and what may not overtake it waits until then.
void start_program_work(Call &call, std::unique_ptr<ProgramWork> job) {
  job->seq = call.seq;
  const char *what = job->what;
  run_off_loop(call, what, std::move(job));
}

// Writes the application's -I folders (BuildProgram.includes), a HeaderFolder each, and names them
// to the backend with -I, in their order.
void write_includes(ProgramWork &job, capnp::List<wire::IncludeFolder>::Reader folders) {
  for (auto folder : folders) {
    job.headers.push_back(HeaderFolder::make());
    for (auto file : folder.getFiles()) job.headers.back()->write(file.getPath(), file.getContents());
    job.options += " -I" + job.headers.back()->path();  // no quotes: PoCL splits options at blanks, quotes and all
  }
}

std::unique_ptr<ProgramWork> program_work(Call &call, const char *what, uint64_t program_id,
                                          capnp::List<uint64_t>::Reader device_ids, capnp::Text::Reader options,
                                          capnp::List<wire::IncludeFolder>::Reader includes = {}) {
  auto job = std::make_unique<ProgramWork>();
  job->what = what;
  job->backend = &call.session.backend();
  job->program_id = program_id;
  job->devices = devices_of(call.session.objects(), device_ids);
  for (uint64_t id : device_ids) job->device_ids.push_back(id);
  job->options = options;
  write_includes(*job, includes);
  ObjectTable &objects = call.session.objects();
  if (objects.contains(program_id) && objects.get(program_id, ObjectKind::program).headers)
    job->headers.push_back(objects.get(program_id, ObjectKind::program).headers);
  return job;
}

cl_program retained_program(ObjectTable &objects, uint64_t id) {
  auto program = objects.handle<cl_program>(id, ObjectKind::program);
  clRetainProgram(program);
  return program;
}

const cl_device_id *device_list(const ProgramWork &job) { return job.devices.empty() ? nullptr : job.devices.data(); }

}  // namespace

void exec_build_program(Call &call, wire::Request::BuildProgram::Reader request) {
  call.object = request.getProgram();
  auto job = program_work(call, "clBuildProgram", request.getProgram(), request.getDevices(), request.getOptions(),
                          request.getIncludes());
  job->program = retained_program(call.session.objects(), request.getProgram());
  job->metadata_twin = true;
  if (source_may_print(job->options.data(), job->options.size()))  // -D macros may name printf
    call.session.objects().get(request.getProgram(), ObjectKind::program).may_print = true;
  job->call = [](ProgramWork &job) {
    return clBuildProgram(job.program, job.devices.size(), device_list(job), job.options.c_str(), nullptr, nullptr);
  };
  start_program_work(call, std::move(job));
}

void exec_compile_program(Call &call, wire::Request::CompileProgram::Reader request) {
  call.object = request.getProgram();
  ObjectTable &objects = call.session.objects();
  auto job = program_work(call, "clCompileProgram", request.getProgram(), request.getDevices(), request.getOptions(),
                          request.getIncludes());
  job->program = retained_program(objects, request.getProgram());
  bool may_print = source_may_print(job->options.data(), job->options.size());
  for (auto header : request.getHeaders()) {
    job->inputs.push_back(retained_program(objects, header.getProgram()));
    job->names.push_back(header.getName());
    may_print = may_print || objects.get(header.getProgram(), ObjectKind::program).may_print;
  }
  if (may_print) objects.get(request.getProgram(), ObjectKind::program).may_print = true;
  job->call = [](ProgramWork &job) {
    std::vector<const char *> names;
    for (const std::string &name : job.names) names.push_back(name.c_str());
    return clCompileProgram(job.program, job.devices.size(), device_list(job), job.options.c_str(),
                            job.inputs.size(), job.inputs.empty() ? nullptr : job.inputs.data(),
                            names.empty() ? nullptr : names.data(), nullptr, nullptr);
  };
  start_program_work(call, std::move(job));
}

void exec_link_program(Call &call, wire::Request::LinkProgram::Reader request) {
  call.object = request.getId();
  ObjectTable &objects = call.session.objects();
  if (request.getId() < wire::FIRST_CLIENT_ID || objects.contains(request.getId()))
    fail(CL_INVALID_VALUE, "object id " + std::to_string(request.getId()) + " is reserved or already in use");
  auto job = program_work(call, "clLinkProgram", request.getId(), request.getDevices(), request.getOptions());
  job->context = objects.handle<cl_context>(request.getContext(), ObjectKind::context);
  for (uint64_t input : request.getInputs()) {
    job->inputs.push_back(retained_program(objects, input));
    job->may_print = job->may_print || objects.get(input, ObjectKind::program).may_print;
  }
  job->call = [](ProgramWork &job) {
    cl_int err = CL_SUCCESS;
    job.program = clLinkProgram(job.context, job.devices.size(), device_list(job), job.options.c_str(),
                                job.inputs.size(), job.inputs.data(), nullptr, nullptr, &err);
    return err;
  };
  start_program_work(call, std::move(job));
}

namespace {

// A program from binaries: on NVIDIA its PTX is compiled for the device there, which can take as
// long as a build, so it runs off the loop (off_loop.h) with copies of the binaries.
class BinaryProgramWork final : public OffLoopWork {
 public:
  BinaryProgramWork(Call &call, wire::Request::CreateProgramWithBinary::Reader request)
      : id_(request.getId()), backend_(&call.session.backend()) {
    ObjectTable &objects = call.session.objects();
    context_ = objects.handle<cl_context>(request.getContext(), ObjectKind::context);
    devices_ = devices_of(objects, request.getDevices());
    for (uint64_t id : request.getDevices()) device_ids_.push_back(id);
    auto binaries = request.getBinaries();
    if (devices_.empty() || binaries.size() != devices_.size()) fail(CL_INVALID_VALUE, "one binary per device is needed");
    for (auto binary : binaries) {
      binaries_.emplace_back(binary.begin(), binary.end());
      may_print_ = may_print_ || binary_may_print(binary.begin(), binary.size());
    }
    clRetainContext(context_);
  }
  ~BinaryProgramWork() override {
    if (program_) clReleaseProgram(program_);
    clReleaseContext(context_);
  }

  void run() override {
    std::vector<size_t> lengths;
    std::vector<const unsigned char *> pointers;
    for (const auto &binary : binaries_) {
      lengths.push_back(binary.size());
      pointers.push_back(binary.data());
    }
    statuses_.assign(devices_.size(), CL_SUCCESS);
    program_ = clCreateProgramWithBinary(context_, devices_.size(), devices_.data(), lengths.data(), pointers.data(),
                                         statuses_.data(), &status_);
    if (status_ != CL_SUCCESS) return;
    auto reply = reply_->initRoot<wire::Reply>();
    describe_program(program_, devices_, device_ids_, *backend_, reply.initBuild());
  }

  bool finish(Session &session, uint64_t seq) override {
    std::string failed = "clCreateProgramWithBinary failed with " + std::to_string(status_);
    if (status_ != CL_SUCCESS) {
      if (seq == 0) fail(status_, failed);
      // The client needs every device's verdict, not only the call's.
      capnp::MallocMessageBuilder message;
      auto reply = message.initRoot<wire::Reply>();
      reply.setSeq(seq);
      reply.setStatus(status_);
      reply.setMessage(failed);
      reply.setInfo(kj::arrayPtr(reinterpret_cast<const uint8_t *>(statuses_.data()), statuses_.size() * sizeof(cl_int)));
      session.send_reply(message);
      return false;
    }
    cl_program program = program_;
    program_ = nullptr;  // the session's now (add releases it if it refuses the id)
    session.objects().add(id_, ObjectKind::program, program, context_);
    session.objects().get(id_, ObjectKind::program).may_print = may_print_;
    if (seq == 0) return true;
    reply_->getRoot<wire::Reply>().setSeq(seq);
    session.send_reply(*reply_);
    return true;
  }

 private:
  uint64_t id_;
  const BackendPlatform *backend_;
  cl_context context_;
  std::vector<cl_device_id> devices_;
  std::vector<uint64_t> device_ids_;
  std::vector<std::vector<unsigned char>> binaries_;
  bool may_print_ = false;
  cl_program program_ = nullptr;
  cl_int status_ = CL_SUCCESS;
  std::vector<cl_int> statuses_;
  // Held by pointer: a message builder's destructor may throw, which an override's may not.
  std::unique_ptr<capnp::MallocMessageBuilder> reply_ = std::make_unique<capnp::MallocMessageBuilder>();
};

// A program from SPIR-V: the backend translates the module there (PoCL through LLVM), which takes
// as long as a compile.
class ILProgramWork final : public OffLoopWork {
 public:
  ILProgramWork(uint64_t id, cl_context context, capnp::Data::Reader il)
      : id_(id), context_(context), il_(il.begin(), il.end()) {
    clRetainContext(context_);
  }
  ~ILProgramWork() override {
    if (program_) clReleaseProgram(program_);
    clReleaseContext(context_);
  }

  void run() override {
    cl_int err = CL_SUCCESS;
    program_ = clCreateProgramWithIL(context_, il_.data(), il_.size(), &err);
    check(err, "clCreateProgramWithIL");
  }

  bool finish(Session &session, uint64_t seq) override {
    cl_program program = program_;
    program_ = nullptr;  // the session's now (add releases it if it refuses the id)
    // SPIR-V names printf by number.
    keep_made_object(session, seq, id_, ObjectKind::program, program, context_).may_print = true;
    return true;
  }

 private:
  uint64_t id_;
  cl_context context_;
  std::vector<uint8_t> il_;
  cl_program program_ = nullptr;
};

}  // namespace

void exec_create_program_with_binary(Call &call, wire::Request::CreateProgramWithBinary::Reader request) {
  call.object = request.getId();
  run_off_loop(call, "clCreateProgramWithBinary", std::make_unique<BinaryProgramWork>(call, request));
}

void exec_create_program_with_il(Call &call, wire::Request::CreateProgramWithIL::Reader request) {
  call.object = request.getId();
  auto context = call.session.objects().handle<cl_context>(request.getContext(), ObjectKind::context);
  run_off_loop(call, "clCreateProgramWithIL", std::make_unique<ILProgramWork>(request.getId(), context, request.getIl()));
}

void exec_create_program_with_built_in_kernels(Call &call,
                                               wire::Request::CreateProgramWithBuiltInKernels::Reader request) {
  call.object = request.getId();
  ObjectTable &objects = call.session.objects();
  auto context = objects.handle<cl_context>(request.getContext(), ObjectKind::context);
  std::vector<cl_device_id> devices = devices_of(objects, request.getDevices());
  cl_int err = CL_SUCCESS;
  cl_program program = clCreateProgramWithBuiltInKernels(context, devices.size(), devices.data(),
                                                         request.getNames().cStr(), &err);
  check(err, "clCreateProgramWithBuiltInKernels");
  objects.add(request.getId(), ObjectKind::program, program, context);
}

void exec_set_specialization_constant(Call &call, wire::Request::SetSpecializationConstant::Reader request) {
  call.object = request.getProgram();
  auto program = call.session.objects().handle<cl_program>(request.getProgram(), ObjectKind::program);
  auto value = request.getValue();
  check(clSetProgramSpecializationConstant(program, request.getSpecId(), value.size(), value.begin()),
        "clSetProgramSpecializationConstant");
}

// ---------------------------------------------------------------------------------------------
// Sub-devices

void exec_create_sub_devices(Call &call, wire::Request::CreateSubDevices::Reader request) {
  call.object = request.getDevice();
  ObjectTable &objects = call.session.objects();
  auto device = objects.handle<cl_device_id>(request.getDevice(), ObjectKind::device);
  std::vector<cl_device_partition_property> properties;
  for (int64_t property : request.getProperties()) properties.push_back(property);
  properties.push_back(0);
  cl_uint count = 0;
  check(clCreateSubDevices(device, properties.data(), 0, nullptr, &count), "clCreateSubDevices");
  capnp::MallocMessageBuilder message;
  auto reply = message.initRoot<wire::Reply>();
  reply.setSeq(call.seq);
  if (request.getMaxDevices() == 0) {
    reply.setInfo(kj::arrayPtr(reinterpret_cast<const uint8_t *>(&count), sizeof count));
  } else {
    if (count > request.getMaxDevices())
      fail(CL_INVALID_VALUE, "the partition makes " + std::to_string(count) + " sub-devices, more than the " +
                                 std::to_string(request.getMaxDevices()) + " asked for");
    uint64_t first = request.getFirstId();
    for (cl_uint i = 0; i < count; i++)
      if (first + i < wire::FIRST_CLIENT_ID || objects.contains(first + i))
        fail(CL_INVALID_VALUE, "object id " + std::to_string(first + i) + " is reserved or already in use");
    std::vector<cl_device_id> subs(count);
    check(clCreateSubDevices(device, properties.data(), count, subs.data(), nullptr), "clCreateSubDevices");
    auto list = reply.initSubDevices(count);
    for (cl_uint i = 0; i < count; i++) {
      objects.add(first + i, ObjectKind::device, subs[i]);
      std::vector<InfoValue> info = backend_device_info(subs[i]);
      list[i].setId(first + i);
      fill_info(list[i].initInfo(info.size()), info);
    }
  }
  if (call.seq == 0) return;
  call.session.send_reply(message);
  call.replied = true;
}

}  // namespace fedcld
