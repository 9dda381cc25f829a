#include "command_buffer.h"

#include <CL/cl_ext.h>

#include <string>

namespace fedcld {

namespace {

// A kernel of the recording's own, so that arguments the application sets later (or that later
// launches of the same kernel send) leave the recorded launch alone.
cl_kernel own_kernel(cl_kernel source) {
  cl_program program = nullptr;
  check(clGetKernelInfo(source, CL_KERNEL_PROGRAM, sizeof program, &program, nullptr), "clGetKernelInfo");
  size_t size = 0;
  check(clGetKernelInfo(source, CL_KERNEL_FUNCTION_NAME, 0, nullptr, &size), "clGetKernelInfo");
  std::string name(size, '\0');
  check(clGetKernelInfo(source, CL_KERNEL_FUNCTION_NAME, size, name.data(), nullptr), "clGetKernelInfo");
  cl_int err = CL_SUCCESS;
  cl_kernel kernel = clCreateKernel(program, name.c_str(), &err);
  check(err, "clCreateKernel");
  return kernel;
}

// The memory objects args name.
std::vector<cl_mem> mems_of(ObjectTable &objects, capnp::List<wire::KernelArg>::Reader args) {
  std::vector<cl_mem> mems;
  for (auto arg : args)
    if (arg.which() == wire::KernelArg::MEM_OBJECT && arg.getMemObject())
      mems.push_back(objects.handle<cl_mem>(arg.getMemObject(), ObjectKind::mem));
  return mems;
}

}  // namespace

void destroy_command_buffer(CommandBuffer *buffer) { delete buffer; }

CommandBuffer::~CommandBuffer() {
  for (cl_kernel kernel : own_kernels_) clReleaseKernel(kernel);
  for (cl_mem mem : held_mems_) clReleaseMemObject(mem);
}

void CommandBuffer::record(ObjectTable &objects, capnp::List<uint32_t>::Reader wait_for, wire::Request::Reader request) {
  Recorded recorded;
  for (uint32_t sync_point : wait_for) {
    if (sync_point == 0 || sync_point > commands_.size())
      fail(CL_INVALID_SYNC_POINT_WAIT_LIST_KHR, "sync point " + std::to_string(sync_point) + " names no earlier command");
    recorded.wait_for.push_back(sync_point - 1);
  }
  cl_kernel kernel = nullptr;
  switch (request.which()) {
    case wire::Request::BARRIER:
      recorded.barrier = true;
      recorded.command = {"clEnqueueMarkerWithWaitList", {}, [](cl_command_queue q, cl_uint n, const cl_event *w, cl_event *e) {
                            return clEnqueueMarkerWithWaitList(q, n, w, e);
                          }};
      break;
    case wire::Request::ND_RANGE: {
      auto launch = request.getNdRange();
      auto geometry = std::make_shared<LaunchGeometry>(launch_geometry(launch));
      kernel = own_kernel(objects.handle<cl_kernel>(launch.getKernel(), ObjectKind::kernel));
      try {
        set_kernel_args(objects, kernel, launch.getArgs());
      } catch (...) {
        clReleaseKernel(kernel);
        throw;
      }
      recorded.kernel = kernel;
      recorded.geometry = geometry;
      recorded.command = {"clEnqueueNDRangeKernel", mems_of(objects, launch.getArgs()),
                          [kernel, geometry](cl_command_queue q, cl_uint n, const cl_event *w, cl_event *e) {
                            const LaunchGeometry &g = *geometry;
                            return clEnqueueNDRangeKernel(q, kernel, g.dims, g.offset_or_null(), g.global,
                                                          g.local_or_null(), n, w, e);
                          }};
      break;
    }
    default: recorded.command = describe_device_command(objects, request);
  }
  if (kernel) own_kernels_.push_back(kernel);
  for (cl_mem mem : recorded.command.mems) hold(mem);
  commands_.push_back(std::move(recorded));
}

void CommandBuffer::hold(cl_mem mem) {
  clRetainMemObject(mem);
  held_mems_.push_back(mem);
}

void CommandBuffer::update(ObjectTable &objects, wire::Request::UpdateCommand::Reader request) {
  uint32_t sync_point = request.getSyncPoint();
  if (sync_point == 0 || sync_point > commands_.size() || !commands_[sync_point - 1].kernel)
    fail(CL_INVALID_MUTABLE_COMMAND_KHR, "sync point " + std::to_string(sync_point) + " is no recorded launch");
  Recorded &launch = commands_[sync_point - 1];
  LaunchGeometry &g = *launch.geometry;
  auto sizes = {request.getOffset(), request.getGlobal(), request.getLocal()};
  for (auto list : sizes)
    if (list.size() && list.size() != g.dims) fail(CL_INVALID_VALUE, "an update's sizes must have work_dim entries");
  // Every object is resolved (which may fail) before anything changes.
  std::vector<cl_mem> mems = mems_of(objects, request.getArgs());
  set_kernel_args(objects, launch.kernel, request.getArgs());
  for (cl_mem mem : mems) hold(mem);
  for (cl_uint d = 0; d < g.dims; d++) {
    if (request.getOffset().size()) g.offset[d] = request.getOffset()[d];
    if (request.getGlobal().size()) g.global[d] = request.getGlobal()[d];
    if (request.getLocal().size()) g.local[d] = request.getLocal()[d];
  }
  g.has_offset = g.has_offset || request.getOffset().size();
  g.has_local = g.has_local || request.getLocal().size();
}

void CommandBuffer::refused(const RequestError &error, const char *what) {
  if (failed_ != CL_SUCCESS) return;  // the first reason is the one to fix
  failed_ = error.status;
  failure_ = std::string("the command buffer cannot run: ") + what + " failed: " + error.message;
}

void CommandBuffer::replay(cl_command_queue queue, bool in_order, const std::vector<cl_event> &wait, cl_event *event) {
  if (failed_ != CL_SUCCESS) fail(failed_, failure_);
  auto run = [](const Recorded &recorded, cl_command_queue q, const std::vector<cl_event> &deps, cl_event *out) {
    check(recorded.command.enqueue(q, cl_uint(deps.size()), deps.empty() ? nullptr : deps.data(), out),
          recorded.command.call);
  };
  if (commands_.empty()) {
    check(clEnqueueMarkerWithWaitList(queue, cl_uint(wait.size()), wait.empty() ? nullptr : wait.data(), event),
          "clEnqueueMarkerWithWaitList");
    return;
  }
  if (in_order) {
    // The queue keeps the order (which any sync points allow); the wait list holds back the first
    // command, and the last one's event is the whole buffer's.
    static const std::vector<cl_event> none;
    for (size_t i = 0; i < commands_.size(); i++)
      run(commands_[i], queue, i == 0 ? wait : none, i + 1 == commands_.size() ? event : nullptr);
    return;
  }
  std::vector<cl_event> events;
  events.reserve(commands_.size());
  auto release_all = [&] {
    for (cl_event e : events) clReleaseEvent(e);
  };
  try {
    cl_event last_barrier = nullptr;
    for (const Recorded &recorded : commands_) {
      std::vector<cl_event> deps;
      for (uint32_t index : recorded.wait_for) deps.push_back(events[index]);
      // Recorded in order, each command waits for the one before. Otherwise a barrier without sync
      // points waits for everything recorded before it, and every command after a barrier for it.
      if (recorded_in_order_) deps.assign(events.end() - std::min<size_t>(events.size(), 1), events.end());
      else if (recorded.barrier && recorded.wait_for.empty()) deps = events;
      else if (last_barrier) deps.push_back(last_barrier);
      if (deps.empty()) deps = wait;
      cl_event done = nullptr;
      run(recorded, queue, deps, &done);
      events.push_back(done);
      if (recorded.barrier) last_barrier = done;
    }
    if (event)
      check(clEnqueueMarkerWithWaitList(queue, cl_uint(events.size()), events.data(), event), "clEnqueueMarkerWithWaitList");
  } catch (...) {
    release_all();
    throw;
  }
  release_all();
}

void exec_create_command_buffer(Call &call, wire::Request::CreateCommandBuffer::Reader request) {
  call.object = request.getId();
  ObjectTable &objects = call.session.objects();
  Object &queue = objects.get(request.getQueue(), ObjectKind::queue);
  objects.add(request.getId(), ObjectKind::command_buffer, new CommandBuffer(queue.queue->in_order), queue.context);
}

namespace {

// The command buffer a recording or an update names, with the context its errors are told to.
CommandBuffer *command_buffer_of(Call &call, uint64_t id) {
  call.object = id;
  Object &object = call.session.objects().get(id, ObjectKind::command_buffer);
  call.context = object.context;
  return static_cast<CommandBuffer *>(object.handle);
}

}  // namespace

void exec_record_command(Call &call, wire::Request::RecordCommand::Reader request) {
  CommandBuffer *buffer = command_buffer_of(call, request.getCommandBuffer());
  try {
    buffer->record(call.session.objects(), request.getWaitFor(), request.getCommand());
  } catch (const RequestError &error) {
    buffer->refused(error, "recording a command");
    throw;
  }
}

void exec_update_command(Call &call, wire::Request::UpdateCommand::Reader request) {
  CommandBuffer *buffer = command_buffer_of(call, request.getCommandBuffer());
  try {
    buffer->update(call.session.objects(), request);
  } catch (const RequestError &error) {
    buffer->refused(error, "updating a command");
    throw;
  }
}

void exec_enqueue_command_buffer(Call &call, wire::Request::EnqueueCommandBuffer::Reader request) {
  Resolved r = resolve(call, request.getCommand());
  auto *buffer = call.session.objects().handle<CommandBuffer *>(request.getCommandBuffer(), ObjectKind::command_buffer);
  buffer->replay(r.queue, r.state->in_order, r.wait, event_out(call, r));
  track(call, r);
}

}  // namespace fedcld
