// Requests that create, change or release objects.
#include <algorithm>
#include <vector>

#include "exec.h"
#include "off_loop.h"
#include "server.h"
#include "peer_signal.h"
#include "peer_transfer.h"
#include "program_headers.h"

namespace fedcld {

std::vector<cl_device_id> devices_of(ObjectTable &objects, capnp::List<uint64_t>::Reader ids) {
  std::vector<cl_device_id> devices;
  for (uint64_t id : ids) devices.push_back(objects.handle<cl_device_id>(id, ObjectKind::device));
  return devices;
}

namespace {

// clCreateContext takes tens of milliseconds on some drivers: off the loop (off_loop.h).
class ContextWork final : public OffLoopWork {
 public:
  ContextWork(uint64_t id, std::vector<cl_device_id> devices) : id_(id), devices_(std::move(devices)) {}
  ~ContextWork() override {
    if (context_) clReleaseContext(context_);
  }
  void run() override {
    cl_platform_id platform = nullptr;
    clGetDeviceInfo(devices_[0], CL_DEVICE_PLATFORM, sizeof platform, &platform, nullptr);
    cl_context_properties properties[] = {CL_CONTEXT_PLATFORM, reinterpret_cast<cl_context_properties>(platform), 0};
    cl_int err = CL_SUCCESS;
    context_ = clCreateContext(properties, devices_.size(), devices_.data(), nullptr, nullptr, &err);
    check(err, "clCreateContext");
  }
  bool finish(Session &session, uint64_t seq) override {
    cl_context context = context_;
    context_ = nullptr;  // the session's now (add releases it if it refuses the id)
    keep_made_object(session, seq, id_, ObjectKind::context, context, context);
    return true;
  }

 private:
  uint64_t id_;
  std::vector<cl_device_id> devices_;
  cl_context context_ = nullptr;
};

}  // namespace

void exec_create_context(Call &call, wire::Request::CreateContext::Reader request) {
  call.object = request.getId();
  std::vector<cl_device_id> devices = devices_of(call.session.objects(), request.getDevices());
  if (devices.empty()) fail(CL_INVALID_VALUE, "a context needs at least one device");
  run_off_loop(call, "clCreateContext", std::make_unique<ContextWork>(request.getId(), std::move(devices)));
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
  QueueState &state = *objects.get(request.getId(), ObjectKind::queue).queue;
  state.profiling = (request.getProperties() & CL_QUEUE_PROFILING_ENABLE) != 0;
  state.in_order = (request.getProperties() & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE) == 0;
  // It pays on GPUs; on a CPU device it would be plain memory, and its map, enqueued on the
  // application's queue, would stay pending behind a command that never runs.
  PageLockedReads choice = call.session.server().options().page_locked_reads;
  cl_device_type type = 0;
  bool gpu = clGetDeviceInfo(device, CL_DEVICE_TYPE, sizeof type, &type, nullptr) == CL_SUCCESS && (type & CL_DEVICE_TYPE_GPU);
  if (choice == PageLockedReads::all || (choice == PageLockedReads::gpus && gpu))
    state.staging = std::make_unique<StagingPool>(context, queue);
}

namespace {

// An empty buffer, then its contents written on a queue of its own, a piece at a time, each write
// done before the next (BackendPlatform::uploads_host_copies_late): the backend keeps no host copy
// of the whole, and the first command that uses the buffer finds it on the device.
cl_mem create_buffer_then_write(cl_context context, cl_mem_flags flags, uint64_t size, const uint8_t *contents,
                                cl_int *err) {
  constexpr uint64_t kPieceBytes = 64 << 20;
  size_t devices_bytes = 0;
  *err = clGetContextInfo(context, CL_CONTEXT_DEVICES, 0, nullptr, &devices_bytes);
  if (*err != CL_SUCCESS) return nullptr;
  std::vector<cl_device_id> devices(devices_bytes / sizeof(cl_device_id));
  *err = clGetContextInfo(context, CL_CONTEXT_DEVICES, devices_bytes, devices.data(), nullptr);
  if (*err != CL_SUCCESS || devices.empty()) return nullptr;
  cl_mem mem = clCreateBuffer(context, flags, size, nullptr, err);
  if (*err != CL_SUCCESS) return nullptr;
  cl_command_queue queue = clCreateCommandQueueWithProperties(context, devices[0], nullptr, err);
  for (uint64_t at = 0; *err == CL_SUCCESS && at < size; at += kPieceBytes)
    *err = clEnqueueWriteBuffer(queue, mem, CL_TRUE, at, std::min(kPieceBytes, size - at), contents + at, 0, nullptr,
                                nullptr);
  if (queue) clReleaseCommandQueue(queue);
  if (*err == CL_SUCCESS) return mem;
  clReleaseMemObject(mem);
  return nullptr;
}

}  // namespace

void exec_create_buffer(Call &call, wire::Request::CreateBuffer::Reader request, Frame &frame) {
  call.object = request.getId();
  ObjectTable &objects = call.session.objects();
  auto context = objects.handle<cl_context>(request.getContext(), ObjectKind::context);
  cl_mem_flags flags = request.getFlags() & ~(cl_mem_flags)(CL_MEM_USE_HOST_PTR | CL_MEM_COPY_HOST_PTR);
  std::shared_ptr<uint8_t[]> contents;
  uint64_t size = request.getSize(), contents_bytes = 0;
  if (request.getInitialContents()) {
    contents = take_payload(frame, size, "buffer contents do not match the buffer size");
    contents_bytes = size;
    flags |= CL_MEM_COPY_HOST_PTR;
  }
  objects.charge(size);
  // Not where the host may not write the buffer: clEnqueueWriteBuffer is refused there.
  bool write_after = contents_bytes >= kOffLoopContentsBytes && call.session.backend().uploads_host_copies_late &&
                     !(flags & (CL_MEM_HOST_READ_ONLY | CL_MEM_HOST_NO_ACCESS));
  make_mem_object(call, request.getId(), context, contents_bytes, size, std::move(contents), "clCreateBuffer",
                  [context, flags, size, write_after](void *host, cl_int *err) {
                    if (write_after)
                      return create_buffer_then_write(context, flags & ~cl_mem_flags(CL_MEM_COPY_HOST_PTR), size,
                                                      static_cast<const uint8_t *>(host), err);
                    return clCreateBuffer(context, flags, size, host, err);
                  });
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
  objects.add_sub_buffer(request.getId(), mem, static_cast<cl_mem>(parent.handle), parent.context);
}

void exec_create_program(Call &call, wire::Request::CreateProgramWithSource::Reader request) {
  call.object = request.getId();
  ObjectTable &objects = call.session.objects();
  auto context = objects.handle<cl_context>(request.getContext(), ObjectKind::context);
  SourceWithHeaders text = source_with_headers(request.getSource(), request.getHeaders());
  const char *source = text.source.c_str();
  size_t length = text.source.size();
  cl_int err = CL_SUCCESS;
  cl_program program = clCreateProgramWithSource(context, 1, &source, &length, &err);
  check(err, "clCreateProgramWithSource");
  objects.add(request.getId(), ObjectKind::program, program, context);
  Object &object = objects.get(request.getId(), ObjectKind::program);
  object.may_print = source_may_print(source, length);
  object.headers = std::move(text.folder);
}

void exec_create_kernel(Call &call, wire::Request::CreateKernel::Reader request) {
  call.object = request.getId();
  ObjectTable &objects = call.session.objects();
  Object &program = objects.get(request.getProgram(), ObjectKind::program);
  cl_int err = CL_SUCCESS;
  cl_kernel kernel = clCreateKernel(static_cast<cl_program>(program.handle), request.getName().cStr(), &err);
  check(err, "clCreateKernel");
  bool may_print = program.may_print;
  objects.add(request.getId(), ObjectKind::kernel, kernel, program.context);
  objects.get(request.getId(), ObjectKind::kernel).may_print = may_print;
}

void exec_create_user_event(Call &call, wire::Request::CreateUserEvent::Reader request) {
  call.object = request.getId();
  ObjectTable &objects = call.session.objects();
  auto context = objects.handle<cl_context>(request.getContext(), ObjectKind::context);
  cl_int err = CL_SUCCESS;
  cl_event event = clCreateUserEvent(context, &err);
  check(err, "clCreateUserEvent");
  objects.add(request.getId(), ObjectKind::event, event, context);
  if (request.getSignalledBy() != 0) exec_create_stand_in(call, request, event);
}

void exec_set_user_event_status(Call &call, wire::Request::SetUserEventStatus::Reader request) {
  call.object = request.getEvent();
  auto event = call.session.objects().handle<cl_event>(request.getEvent(), ObjectKind::event);
  // The client relays failures of other daemons' events even where a peer signals them, and the
  // failure of a transfer's sending side to its receiving side: whichever comes first decides.
  cl_int status = CL_QUEUED;
  if (clGetEventInfo(event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr) == CL_SUCCESS &&
      status <= CL_COMPLETE)
    return;
  if (cl_event stand_in = call.session.inbox().take_stand_in(request.getEvent())) clReleaseEvent(stand_in);
  set_user_event_status(event, request.getStatus());
  peer_receive_settled(call.session, request.getEvent());
}

void exec_release(Call &call, uint64_t id) {
  call.object = id;
  call.session.objects().release(id);
}

}  // namespace fedcld
