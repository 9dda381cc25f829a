#include "command_buffer.h"

#include <algorithm>

#include "coherence.h"
#include "command.h"

using namespace fedcl;

void _cl_command_buffer_khr::last_release() { post_release(queue->connection, id); }

_cl_command_buffer_khr::~_cl_command_buffer_khr() {
  for (auto &used : mems) release(used.first);
  unhold(queue);
}

namespace fedcl {

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
  std::lock_guard<std::mutex> lock(buffer->mutex);
  if (buffer->finalized) return CL_INVALID_OPERATION;
  for (cl_uint i = 0; i < num_sync_points; i++)
    if (wait_for[i] == 0 || wait_for[i] > buffer->commands) return CL_INVALID_SYNC_POINT_WAIT_LIST_KHR;
  for (const UsedMem &used : mems) mem_place(used.mem, buffer->queue->connection);
  RequestMessage request;
  auto record = request.root.initRecordCommand();
  record.setCommandBuffer(buffer->id);
  auto list = record.initWaitFor(num_sync_points);
  for (cl_uint i = 0; i < num_sync_points; i++) list.set(i, wait_for[i]);
  build(record.initCommand());
  cl_int err = buffer->queue->connection->post(request);
  if (err != CL_SUCCESS) return err;
  buffer->commands++;
  if (sync_point) *sync_point = buffer->commands;
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
  return CL_SUCCESS;
}

cl_int command_buffer_finalize(cl_command_buffer_khr buffer) {
  std::lock_guard<std::mutex> lock(buffer->mutex);
  if (buffer->finalized) return CL_INVALID_OPERATION;
  buffer->finalized = true;
  return CL_SUCCESS;
}

cl_int command_buffer_enqueue(cl_command_buffer_khr buffer, cl_command_queue queue, cl_uint num_events,
                              const cl_event *wait_list, cl_event *event) {
  // Finalized, the buffer no longer changes: its list of memory objects is read without the lock.
  if (!buffer->finalized) return CL_INVALID_OPERATION;
  bool multi_daemon = queue->context->parts.size() > 1;
  Command command(queue, CL_COMMAND_COMMAND_BUFFER_KHR);
  cl_int err = command.begin(num_events, wait_list, event, multi_daemon);
  if (multi_daemon)
    for (size_t i = 0; i < buffer->mems.size() && err == CL_SUCCESS; i++)
      err = mem_prepare(buffer->mems[i].first, command, false);
  if (err != CL_SUCCESS) return err;
  RequestMessage request;
  auto enqueue = request.root.initEnqueueCommandBuffer();
  command.fill(enqueue.initCommand());
  enqueue.setCommandBuffer(buffer->id);
  err = command.send(request);
  if (err == CL_SUCCESS && multi_daemon)
    for (const auto &used : buffer->mems)
      if (used.second) mem_written(used.first, queue->connection, command.event());
  return err;
}

}  // namespace fedcl
