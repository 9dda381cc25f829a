#include "command_buffer.h"

#include <algorithm>

#include "coherence.h"
#include "command.h"
#include "kernel.h"

using namespace fedcl;

void _cl_command_buffer_khr::last_release() { post_release(queue->connection, id); }

_cl_command_buffer_khr::~_cl_command_buffer_khr() {
  for (_cl_mutable_command_khr *launch : launches) unhold(launch);
  for (auto &used : mems) release(used.first);
  unhold(queue);
}

_cl_mutable_command_khr::~_cl_mutable_command_khr() { unhold(kernel); }

namespace fedcl {

namespace {

// Adds mems to what buffer's replays use. Under the buffer's mutex.
void keep_mems(cl_command_buffer_khr buffer, const std::vector<UsedMem> &mems) {
  for (const UsedMem &used : mems) {
    auto same = [&](const std::pair<cl_mem, bool> &kept) { return kept.first == used.mem; };
    auto it = std::find_if(buffer->mems.begin(), buffer->mems.end(), same);
    if (it != buffer->mems.end()) {
      it->second = it->second || used.written;
    } else {
      retain(used.mem);
      buffer->mems.emplace_back(used.mem, used.written);
    }
  }
}

void set_sizes(capnp::List<uint64_t>::Builder list, const size_t *values) {
  for (unsigned d = 0; d < list.size(); d++) list.set(d, values[d]);
}

}  // namespace

_cl_command_buffer_khr *command_buffer_create(cl_command_queue queue,
                                              std::vector<cl_command_buffer_properties_khr> properties, cl_int *err) {
  if (!queue->connection->alive()) {
    *err = CL_DEVICE_NOT_AVAILABLE;
    return nullptr;
  }
  auto *buffer = new _cl_command_buffer_khr;
  buffer->queue = queue;
  hold(queue);
  buffer->properties = std::move(properties);
  RequestMessage request;
  auto create = request.root.initCreateCommandBuffer();
  create.setId(buffer->id);
  create.setQueue(queue->id);
  *err = queue->connection->post(request);
  if (*err != CL_SUCCESS) {
    release(buffer);
    return nullptr;
  }
  return buffer;
}

cl_int command_buffer_record(cl_command_buffer_khr buffer, cl_uint num_sync_points, const cl_sync_point_khr *wait_for,
                             const BuildRequest &build, const std::vector<UsedMem> &mems, cl_sync_point_khr *sync_point) {
  Connection *connection = buffer->queue->connection;
  if (!connection->alive()) return CL_DEVICE_NOT_AVAILABLE;
  for (const UsedMem &used : mems) mem_place(used.mem, connection);
  {
    // The daemon numbers commands in the order they arrive: queued (never the socket) under the
    // lock that numbers them here, flushed after it.
    std::lock_guard<std::mutex> lock(buffer->mutex);
    if (buffer->finalized) return CL_INVALID_OPERATION;
    for (cl_uint i = 0; i < num_sync_points; i++)
      if (wait_for[i] == 0 || wait_for[i] > buffer->commands) return CL_INVALID_SYNC_POINT_WAIT_LIST_KHR;
    RequestMessage request;
    auto record = request.root.initRecordCommand();
    record.setCommandBuffer(buffer->id);
    auto list = record.initWaitFor(num_sync_points);
    for (cl_uint i = 0; i < num_sync_points; i++) list.set(i, wait_for[i]);
    build(record.initCommand());
    connection->queue(request);
    buffer->commands++;
    if (sync_point) *sync_point = buffer->commands;
    keep_mems(buffer, mems);
  }
  connection->flush();
  return CL_SUCCESS;
}

bool command_buffer_ready(cl_command_buffer_khr buffer) {
  for (const _cl_mutable_command_khr *launch : buffer->launches)
    if (!launch->unset_args.empty()) return false;
  return true;
}

cl_int command_buffer_record_barrier(cl_command_buffer_khr buffer, cl_uint num_sync_points,
                                     const cl_sync_point_khr *wait_for, cl_sync_point_khr *sync_point) {
  auto build = [](wire::Request::Builder request) { return request.initBarrier(); };
  return command_buffer_record(buffer, num_sync_points, wait_for, build, {}, sync_point);
}

cl_int command_buffer_finalize(cl_command_buffer_khr buffer) {
  std::lock_guard<std::mutex> lock(buffer->mutex);
  if (buffer->finalized) return CL_INVALID_OPERATION;
  buffer->finalized = true;
  return CL_SUCCESS;
}

_cl_mutable_command_khr *command_buffer_add_launch(cl_command_buffer_khr buffer, cl_sync_point_khr sync_point,
                                                   cl_kernel kernel, cl_uint work_dim, const size_t *offset,
                                                   const size_t *global, const size_t *local) {
  auto *launch = new _cl_mutable_command_khr;
  launch->buffer = buffer;
  launch->sync_point = sync_point;
  launch->kernel = kernel;
  hold(kernel);
  launch->work_dim = work_dim;
  for (cl_uint d = 0; d < work_dim; d++) {
    launch->global[d] = global[d];
    launch->offset[d] = offset ? offset[d] : 0;
    launch->local[d] = local ? local[d] : 0;
  }
  std::lock_guard<std::mutex> lock(buffer->mutex);
  buffer->launches.push_back(launch);
  return launch;
}

cl_int command_buffer_update(cl_command_buffer_khr buffer, const std::vector<LaunchUpdate> &updates) {
  Connection *connection = buffer->queue->connection;
  if (!connection->alive()) return CL_DEVICE_NOT_AVAILABLE;
  for (const LaunchUpdate &update : updates)
    for (const auto &arg : update.args)
      if (arg.second.buffer) mem_place(arg.second.buffer, connection);
  {
    std::lock_guard<std::mutex> lock(buffer->mutex);  // queued under it, flushed after
    for (const LaunchUpdate &update : updates) {
      cl_mutable_command_khr launch = update.command;
      RequestMessage request;
      auto message = request.root.initUpdateCommand();
      message.setCommandBuffer(buffer->id);
      message.setSyncPoint(launch->sync_point);
      auto args = message.initArgs(update.args.size());
      std::vector<UsedMem> mems;
      for (size_t i = 0; i < update.args.size(); i++) {
        const _cl_kernel::Arg &arg = update.args[i].second;
        kernel_arg_to_wire(args[i], update.args[i].first, arg);
        if (arg.buffer) mems.push_back({arg.buffer, kernel_may_write(launch->kernel, update.args[i].first, arg.buffer)});
      }
      cl_uint dims = launch->work_dim;
      if (update.offset) set_sizes(message.initOffset(dims), update.offset);
      if (update.global) set_sizes(message.initGlobal(dims), update.global);
      if (update.local) set_sizes(message.initLocal(dims), update.local);
      connection->queue(request);
      keep_mems(buffer, mems);
      for (const auto &arg : update.args) {
        auto &unset = launch->unset_args;
        unset.erase(std::remove(unset.begin(), unset.end(), arg.first), unset.end());
      }
      for (cl_uint d = 0; d < dims; d++) {
        if (update.offset) launch->offset[d] = update.offset[d];
        if (update.global) launch->global[d] = update.global[d];
        if (update.local) launch->local[d] = update.local[d];
      }
    }
  }
  connection->flush();
  return CL_SUCCESS;
}

cl_int command_buffer_enqueue(cl_command_buffer_khr buffer, cl_command_queue queue, cl_uint num_events,
                              const cl_event *wait_list, cl_event *event) {
  bool multi_daemon = queue->context->parts.size() > 1;
  std::vector<std::pair<cl_mem, bool>> mems;  // a copy: updates may add to the list meanwhile
  {
    std::lock_guard<std::mutex> lock(buffer->mutex);
    if (!buffer->finalized || !command_buffer_ready(buffer)) return CL_INVALID_OPERATION;
    if (multi_daemon) mems = buffer->mems;
  }
  Command command(queue, CL_COMMAND_COMMAND_BUFFER_KHR);
  cl_int err = command.begin(num_events, wait_list, event, multi_daemon);
  for (size_t i = 0; i < mems.size() && err == CL_SUCCESS; i++) err = mem_prepare(mems[i].first, command, MemSpan::whole());
  if (err != CL_SUCCESS) return err;
  RequestMessage request;
  auto enqueue = request.root.initEnqueueCommandBuffer();
  command.fill(enqueue.initCommand());
  enqueue.setCommandBuffer(buffer->id);
  err = command.send(request);
  for (const auto &used : mems)
    if (err == CL_SUCCESS && used.second) mem_written(used.first, queue->connection, command.event(), MemSpan::whole());
  return err;
}

}  // namespace fedcl
