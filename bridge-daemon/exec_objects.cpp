// Requests that create, change or release objects.
#include <uv.h>

#include "exec.h"
#include "log.h"
#include "server.h"

namespace fedcld {

namespace {

std::vector<cl_device_id> devices_of(ObjectTable &objects, capnp::List<uint64_t>::Reader ids) {
  std::vector<cl_device_id> devices;
  for (uint64_t id : ids) devices.push_back(objects.handle<cl_device_id>(id, ObjectKind::device));
  return devices;
}

}  // namespace

void exec_create_context(Call &call, wire::Request::CreateContext::Reader request) {
  call.object = request.getId();
  std::vector<cl_device_id> devices = devices_of(call.session.objects(), request.getDevices());
  if (devices.empty()) fail(CL_INVALID_VALUE, "a context needs at least one device");
  cl_platform_id platform = nullptr;
  clGetDeviceInfo(devices[0], CL_DEVICE_PLATFORM, sizeof platform, &platform, nullptr);
  cl_context_properties properties[] = {CL_CONTEXT_PLATFORM, reinterpret_cast<cl_context_properties>(platform), 0};
  cl_int err = CL_SUCCESS;
  cl_context context = clCreateContext(properties, devices.size(), devices.data(), nullptr, nullptr, &err);
  check(err, "clCreateContext");
  call.session.objects().add(request.getId(), ObjectKind::context, context, context);
}

void exec_create_queue(Call &call, wire::Request::CreateQueue::Reader request) {
  call.object = request.getId();
  ObjectTable &objects = call.session.objects();
  auto context = objects.handle<cl_context>(request.getContext(), ObjectKind::context);
  auto device = objects.handle<cl_device_id>(request.getDevice(), ObjectKind::device);
  cl_int err = CL_SUCCESS;
  cl_command_queue queue = clCreateCommandQueue(context, device, request.getProperties(), &err);
  check(err, "clCreateCommandQueue");
  objects.add(request.getId(), ObjectKind::queue, queue, context);
  objects.get(request.getId(), ObjectKind::queue).queue->profiling =
      (request.getProperties() & CL_QUEUE_PROFILING_ENABLE) != 0;
}

void exec_create_buffer(Call &call, wire::Request::CreateBuffer::Reader request, Frame &frame) {
  call.object = request.getId();
  ObjectTable &objects = call.session.objects();
  auto context = objects.handle<cl_context>(request.getContext(), ObjectKind::context);
  cl_mem_flags flags = request.getFlags() & ~(cl_mem_flags)(CL_MEM_USE_HOST_PTR | CL_MEM_COPY_HOST_PTR);
  void *contents = nullptr;
  if (request.getInitialContents()) {
    if (frame.header.payload_bytes != request.getSize())
      fail(CL_INVALID_VALUE, "buffer contents do not match the buffer size");
    flags |= CL_MEM_COPY_HOST_PTR;
    contents = frame.payload.get();
  }
  cl_int err = CL_SUCCESS;
  cl_mem mem = clCreateBuffer(context, flags, request.getSize(), contents, &err);
  check(err, "clCreateBuffer");
  objects.add(request.getId(), ObjectKind::mem, mem, context);
}

void exec_create_sub_buffer(Call &call, wire::Request::CreateSubBuffer::Reader request) {
  call.object = request.getId();
  ObjectTable &objects = call.session.objects();
  Object &parent = objects.get(request.getParent(), ObjectKind::mem);
  cl_buffer_region region{request.getOrigin(), request.getSize()};
  cl_int err = CL_SUCCESS;
  cl_mem mem = clCreateSubBuffer(static_cast<cl_mem>(parent.handle), request.getFlags(),
                                 CL_BUFFER_CREATE_TYPE_REGION, &region, &err);
  check(err, "clCreateSubBuffer");
  objects.add(request.getId(), ObjectKind::mem, mem, parent.context);
}

void exec_create_program(Call &call, wire::Request::CreateProgramWithSource::Reader request) {
  call.object = request.getId();
  ObjectTable &objects = call.session.objects();
  auto context = objects.handle<cl_context>(request.getContext(), ObjectKind::context);
  const char *source = request.getSource().cStr();
  size_t length = request.getSource().size();
  cl_int err = CL_SUCCESS;
  cl_program program = clCreateProgramWithSource(context, 1, &source, &length, &err);
  check(err, "clCreateProgramWithSource");
  objects.add(request.getId(), ObjectKind::program, program, context);
}

namespace {

// A build runs on libuv's thread pool while its session waits; the result goes back in one reply.
struct BuildWork {
  uv_work_t work;
  std::shared_ptr<Session> session;
  uint64_t seq;
  uint64_t program_id;
  cl_program program;
  std::vector<cl_device_id> devices;
  std::vector<uint64_t> device_ids;
  std::string options;
  cl_int status = CL_SUCCESS;
  capnp::MallocMessageBuilder reply;
};

std::string text_info(cl_kernel kernel, cl_uint index, cl_kernel_arg_info param) {
  size_t size = 0;
  if (clGetKernelArgInfo(kernel, index, param, 0, nullptr, &size) != CL_SUCCESS || size == 0) return {};
  std::string text(size, '\0');
  clGetKernelArgInfo(kernel, index, param, size, text.data(), nullptr);
  text.resize(text.find('\0') == std::string::npos ? text.size() : text.find('\0'));
  return text;
}

template <typename T>
T arg_info(cl_kernel kernel, cl_uint index, cl_kernel_arg_info param) {
  T value{};
  clGetKernelArgInfo(kernel, index, param, sizeof value, &value, nullptr);
  return value;
}

// Kernel names and argument metadata, so that the client checks clCreateKernel and clSetKernelArg
// without asking.
void describe_kernels(cl_program program, wire::BuildResult::Builder result) {
  cl_uint count = 0;
  if (clCreateKernelsInProgram(program, 0, nullptr, &count) != CL_SUCCESS || count == 0) return;
  std::vector<cl_kernel> kernels(count);
  clCreateKernelsInProgram(program, count, kernels.data(), nullptr);
  auto list = result.initKernels(count);
  for (cl_uint k = 0; k < count; k++) {
    char name[1024] = {};
    clGetKernelInfo(kernels[k], CL_KERNEL_FUNCTION_NAME, sizeof name - 1, name, nullptr);
    cl_uint nargs = 0;
    clGetKernelInfo(kernels[k], CL_KERNEL_NUM_ARGS, sizeof nargs, &nargs, nullptr);
    list[k].setName(name);
    auto args = list[k].initArgs(nargs);
    for (cl_uint a = 0; a < nargs; a++) {
      args[a].setAddressQualifier(arg_info<cl_kernel_arg_address_qualifier>(kernels[k], a, CL_KERNEL_ARG_ADDRESS_QUALIFIER));
      args[a].setAccessQualifier(arg_info<cl_kernel_arg_access_qualifier>(kernels[k], a, CL_KERNEL_ARG_ACCESS_QUALIFIER));
      args[a].setTypeQualifier(arg_info<cl_kernel_arg_type_qualifier>(kernels[k], a, CL_KERNEL_ARG_TYPE_QUALIFIER));
      args[a].setTypeName(text_info(kernels[k], a, CL_KERNEL_ARG_TYPE_NAME));
      args[a].setName(text_info(kernels[k], a, CL_KERNEL_ARG_NAME));
    }
    clReleaseKernel(kernels[k]);
  }
}

void build_on_pool(uv_work_t *work) {
  auto *build = static_cast<BuildWork *>(work->data);
  build->status = clBuildProgram(build->program, build->devices.size(),
                                 build->devices.empty() ? nullptr : build->devices.data(),
                                 build->options.c_str(), nullptr, nullptr);
  auto reply = build->reply.initRoot<wire::Reply>();
  reply.setSeq(build->seq);
  reply.setStatus(build->status);
  auto result = reply.initBuild();
  auto devices = result.initDevices(build->devices.size());
  for (size_t d = 0; d < build->devices.size(); d++) {
    cl_build_status status = CL_BUILD_NONE;
    clGetProgramBuildInfo(build->program, build->devices[d], CL_PROGRAM_BUILD_STATUS, sizeof status, &status, nullptr);
    size_t log_size = 0;
    clGetProgramBuildInfo(build->program, build->devices[d], CL_PROGRAM_BUILD_LOG, 0, nullptr, &log_size);
    std::string log(log_size, '\0');
    if (log_size) clGetProgramBuildInfo(build->program, build->devices[d], CL_PROGRAM_BUILD_LOG, log_size, log.data(), nullptr);
    while (!log.empty() && log.back() == '\0') log.pop_back();
    devices[d].setDevice(build->device_ids[d]);
    devices[d].setStatus(status);
    devices[d].setLog(log);
  }
  if (build->status == CL_SUCCESS) describe_kernels(build->program, result);
  else reply.setMessage("clBuildProgram failed with " + std::to_string(build->status));
}

void build_done(uv_work_t *work, int) {
  std::unique_ptr<BuildWork> build(static_cast<BuildWork *>(work->data));
  Session &session = *build->session;
  if (session.closed()) return;
  if (build->seq != 0) session.send_reply(build->reply);
  else if (build->status != CL_SUCCESS)
    session.notify_error(build->program_id, 0, build->status, "clBuildProgram failed");
  session.resume();
}

}  // namespace

void exec_build_program(Call &call, wire::Request::BuildProgram::Reader request) {
  call.object = request.getProgram();
  ObjectTable &objects = call.session.objects();
  Object &program = objects.get(request.getProgram(), ObjectKind::program);
  auto build = std::make_unique<BuildWork>();
  build->session = call.session.shared_from_this();
  build->seq = call.seq;
  build->program_id = request.getProgram();
  build->program = static_cast<cl_program>(program.handle);
  build->options = request.getOptions();
  for (uint64_t id : request.getDevices()) build->device_ids.push_back(id);
  build->devices = devices_of(objects, request.getDevices());
  if (build->devices.empty()) {
    // Every device of the program: ask the backend which those are.
    cl_uint count = 0;
    clGetProgramInfo(build->program, CL_PROGRAM_NUM_DEVICES, sizeof count, &count, nullptr);
    build->devices.resize(count);
    clGetProgramInfo(build->program, CL_PROGRAM_DEVICES, count * sizeof(cl_device_id), build->devices.data(), nullptr);
    build->device_ids.assign(count, 0);
  }
  build->work.data = build.get();
  check(uv_queue_work(call.session.server().loop(), &build->work, build_on_pool, build_done) == 0 ? CL_SUCCESS
                                                                                                 : CL_OUT_OF_HOST_MEMORY,
        "uv_queue_work");
  build.release();
  call.replied = true;
  call.session.pause();
}

void exec_create_kernel(Call &call, wire::Request::CreateKernel::Reader request) {
  call.object = request.getId();
  ObjectTable &objects = call.session.objects();
  Object &program = objects.get(request.getProgram(), ObjectKind::program);
  cl_int err = CL_SUCCESS;
  cl_kernel kernel = clCreateKernel(static_cast<cl_program>(program.handle), request.getName().cStr(), &err);
  check(err, "clCreateKernel");
  objects.add(request.getId(), ObjectKind::kernel, kernel, program.context);
}

void exec_create_user_event(Call &call, wire::Request::CreateUserEvent::Reader request) {
  call.object = request.getId();
  ObjectTable &objects = call.session.objects();
  auto context = objects.handle<cl_context>(request.getContext(), ObjectKind::context);
  cl_int err = CL_SUCCESS;
  cl_event event = clCreateUserEvent(context, &err);
  check(err, "clCreateUserEvent");
  objects.add(request.getId(), ObjectKind::event, event, context);
}

void exec_set_user_event_status(Call &call, wire::Request::SetUserEventStatus::Reader request) {
  call.object = request.getEvent();
  auto event = call.session.objects().handle<cl_event>(request.getEvent(), ObjectKind::event);
  check(clSetUserEventStatus(event, request.getStatus()), "clSetUserEventStatus");
}

void exec_release(Call &call, uint64_t id) {
  call.object = id;
  call.session.objects().release(id);
}

}  // namespace fedcld
