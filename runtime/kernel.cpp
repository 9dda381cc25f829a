#include "kernel.h"

#include "coherence.h"
#include "command_buffer.h"
#include "command.h"
#include "query.h"

namespace fedcl {

void kernel_create(cl_kernel kernel) {
  cl_program program = kernel->program;
  for (const ContextPart &part : program->context->parts) {
    bool built_here = false;
    for (const auto &entry : program->builds)
      if (entry.first->connection == part.connection && entry.second.status == CL_BUILD_SUCCESS) built_here = true;
    if (!built_here) continue;
    RequestMessage request;
    auto create = request.root.initCreateKernel();
    create.setId(kernel->id);
    create.setProgram(program->id);
    create.setName(kernel->desc->name);
    part.connection->post(request);
    kernel->present |= bit(part.connection);
  }
}

namespace {

void set_sizes(wire::Request::NDRange::Builder launch, cl_uint work_dim, const size_t *global_offset,
               const size_t *global_size, const size_t *local_size) {
  auto sizes = [&](auto list, const size_t *values) {
    for (cl_uint d = 0; d < work_dim; d++) list.set(d, values[d]);
  };
  sizes(launch.initGlobal(work_dim), global_size);
  if (global_offset) sizes(launch.initOffset(work_dim), global_offset);
  if (local_size) sizes(launch.initLocal(work_dim), local_size);
}

}  // namespace

void kernel_arg_to_wire(wire::KernelArg::Builder out, size_t index, const _cl_kernel::Arg &arg) {
  out.setIndex(index);
  switch (arg.kind) {
    case _cl_kernel::Arg::value: out.setValue(kj::arrayPtr(arg.bytes.data(), arg.bytes.size())); break;
    case _cl_kernel::Arg::memory: out.setMemObject(arg.object); break;
    case _cl_kernel::Arg::local: out.setLocalSize(arg.local_size); break;
    case _cl_kernel::Arg::sampler: out.setSampler(arg.object); break;
    case _cl_kernel::Arg::unset: break;
  }
}

bool kernel_may_write(cl_kernel kernel, size_t index, cl_mem buffer) {
  const KernelArgDesc &desc = kernel->desc->args[index];
  bool read_only = (desc.type_qualifier & CL_KERNEL_ARG_TYPE_CONST) || desc.access == CL_KERNEL_ARG_ACCESS_READ_ONLY ||
                   (buffer->flags & CL_MEM_READ_ONLY);
  return !read_only;
}

namespace {

// The buffers kernel's arguments name, and whether it may write each. Under kernel->mutex.
std::vector<UsedMem> arg_buffers(cl_kernel kernel) {
  std::vector<UsedMem> buffers;
  for (size_t i = 0; i < kernel->args.size(); i++)
    if (kernel->args[i].buffer) buffers.push_back({kernel->args[i].buffer, kernel_may_write(kernel, i, kernel->args[i].buffer)});
  return buffers;
}

}  // namespace

cl_int kernel_launch(cl_command_queue queue, cl_kernel kernel, cl_uint work_dim, const size_t *global_offset,
                     const size_t *global_size, const size_t *local_size, cl_uint num_events,
                     const cl_event *wait_list, cl_event *event) {
  Connection *connection = queue->connection;
  bool multi_daemon = queue->context->parts.size() > 1;
  Command command(queue, CL_COMMAND_NDRANGE_KERNEL);
  cl_int err = command.begin(num_events, wait_list, event, multi_daemon);
  if (err != CL_SUCCESS) return err;
  command.leave_unwatched();
  RequestMessage request;
  auto launch = request.root.initNdRange();
  launch.setKernel(kernel->id);
  set_sizes(launch, work_dim, global_offset, global_size, local_size);
  // The buffers are made ready first (which may fail), and only a launch that left marks its
  // arguments sent and its buffers written. Making them ready may take round trips (a copy through
  // this process): not under the kernel's lock.
  std::vector<UsedMem> buffers;
  if (multi_daemon) {
    {
      std::lock_guard<std::mutex> lock(kernel->mutex);
      buffers = arg_buffers(kernel);
    }
    // A write-only buffer's old contents never move: fedcl takes the kernel to write all of it
    // (docs/design-decisions.md, "Coherence by byte range").
    for (size_t b = 0; b < buffers.size() && err == CL_SUCCESS; b++)
      err = mem_prepare(buffers[b].mem, command, MemSpan::whole(buffers[b].mem->flags & CL_MEM_WRITE_ONLY));
  }
  if (err != CL_SUCCESS) return err;
  std::lock_guard<std::mutex> lock(kernel->mutex);
  command.fill(launch.initCommand());  // with the copies it waits for
  std::vector<uint32_t> &sent = kernel->sent[connection->index()];
  sent.resize(kernel->args.size(), 0);
  size_t changed = 0;
  for (size_t i = 0; i < kernel->args.size(); i++)
    if (kernel->args[i].generation != sent[i]) changed++;
  auto args = launch.initArgs(changed);
  size_t n = 0;
  for (size_t i = 0; i < kernel->args.size(); i++)
    if (kernel->args[i].generation != sent[i]) kernel_arg_to_wire(args[n++], i, kernel->args[i]);
  err = command.send(request);
  if (err != CL_SUCCESS) return err;
  for (size_t i = 0; i < kernel->args.size(); i++) sent[i] = kernel->args[i].generation;
  for (const UsedMem &buffer : buffers)
    if (buffer.written) mem_written(buffer.mem, connection, command.event(), MemSpan::whole());
  return CL_SUCCESS;
}

cl_int kernel_record(cl_command_buffer_khr buffer, cl_command_queue queue, cl_kernel kernel, cl_uint work_dim,
                     const size_t *global_offset, const size_t *global_size, const size_t *local_size,
                     cl_uint num_sync_points, const cl_sync_point_khr *wait_for, cl_sync_point_khr *sync_point,
                     _cl_mutable_command_khr **handle) {
  std::vector<_cl_kernel::Arg> args;
  UsedObjects used;
  used.kernel = kernel;
  {
    std::lock_guard<std::mutex> lock(kernel->mutex);
    args = kernel->args;
    used.mems = arg_buffers(kernel);
  }
  for (const _cl_kernel::Arg &arg : args)
    if (arg.sampler_handle) used.samplers.push_back(arg.sampler_handle);
  auto build = [&](wire::Request::Builder request) {
    auto launch = request.initNdRange();
    launch.setKernel(kernel->id);
    set_sizes(launch, work_dim, global_offset, global_size, local_size);
    size_t set = 0;
    for (const _cl_kernel::Arg &arg : args) set += arg.kind != _cl_kernel::Arg::unset;
    auto list = launch.initArgs(set);
    for (size_t i = 0, n = 0; i < args.size(); i++)
      if (args[i].kind != _cl_kernel::Arg::unset) kernel_arg_to_wire(list[n++], i, args[i]);
    return launch.initCommand();
  };
  cl_sync_point_khr recorded = 0;
  cl_int err = command_buffer_record(buffer, queue, num_sync_points, wait_for, build, used, &recorded);
  if (err != CL_SUCCESS) return err;
  if (sync_point) *sync_point = recorded;
  if (handle) {
    *handle = command_buffer_add_launch(buffer, queue, recorded, kernel, work_dim, global_offset, global_size, local_size);
    std::lock_guard<std::mutex> lock(buffer->mutex);
    for (size_t i = 0; i < args.size(); i++)
      if (args[i].kind == _cl_kernel::Arg::unset) (*handle)->unset_args.push_back(i);
  }
  return CL_SUCCESS;
}

namespace {
Connection *first_connection(cl_kernel kernel) {
  for (const ContextPart &part : kernel->program->context->parts)
    if (kernel->present & bit(part.connection)) return part.connection;
  return kernel->program->context->parts.front().connection;
}
}  // namespace

cl_int kernel_info(cl_kernel kernel, cl_kernel_info param, std::vector<uint8_t> *bytes) {
  return remote_info(first_connection(kernel), kernel->id, wire::InfoKind::KERNEL, param, 0, 0, bytes);
}

cl_int kernel_work_group_info(cl_kernel kernel, cl_device_id device, cl_kernel_work_group_info param,
                              std::vector<uint8_t> *bytes) {
  return remote_info(device->connection, kernel->id, wire::InfoKind::KERNEL_WORK_GROUP, param, device->remote_id, 0,
                     bytes);
}

cl_int kernel_sub_group_info(cl_kernel kernel, cl_device_id device, cl_kernel_sub_group_info param,
                             const void *input, size_t input_size, std::vector<uint8_t> *bytes) {
  return remote_info(device->connection, kernel->id, wire::InfoKind::KERNEL_SUB_GROUP, param, device->remote_id, 0,
                     bytes, input, input_size);
}

}  // namespace fedcl
