#include "command_buffer.h"

#include <capnp/message.h>
#include <capnp/serialize.h>

#include <algorithm>

#include "coherence.h"
#include "command.h"
#include "kernel.h"

using namespace fedcl;

void _cl_command_buffer_khr::last_release() {
  for (const CommandBufferSegment &segment : segments) post_release(queues[segment.queue_index]->connection, segment.id);
}

_cl_command_buffer_khr::~_cl_command_buffer_khr() {
  for (_cl_mutable_command_khr *launch : launches) unhold(launch);
  for (const RecordedCommand &command : commands) {
    if (command.used.kernel) unhold(command.used.kernel);
    for (cl_sampler sampler : command.used.samplers) unhold(sampler);
  }
  for (const CommandBufferSegment &segment : segments)
    for (const auto &used : segment.mems) release(used.first);
  for (cl_command_queue queue : queues) unhold(queue);
}

_cl_mutable_command_khr::~_cl_mutable_command_khr() { unhold(kernel); }

namespace fedcl {

namespace {

template <typename T>
bool contains(const std::vector<T> &list, const T &value) {
  return std::find(list.begin(), list.end(), value) != list.end();
}

template <typename T>
void add_once(std::vector<T> &list, const T &value) {
  if (!contains(list, value)) list.push_back(value);
}

// Adds mems to what a segment's replays use (one application reference each). Under the buffer's mutex.
void keep_mems(std::vector<std::pair<cl_mem, bool>> &kept, const std::vector<UsedMem> &mems) {
  for (const UsedMem &used : mems) {
    auto same = [&](const std::pair<cl_mem, bool> &entry) { return entry.first == used.mem; };
    auto it = std::find_if(kept.begin(), kept.end(), same);
    if (it != kept.end()) {
      it->second = it->second || used.written;
    } else {
      retain(used.mem);
      kept.emplace_back(used.mem, used.written);
    }
  }
}

void set_sizes(capnp::List<uint64_t>::Builder list, const size_t *values) {
  for (unsigned d = 0; d < list.size(); d++) list.set(d, values[d]);
}

cl_uint queue_index(cl_command_buffer_khr buffer, cl_command_queue queue) {
  return cl_uint(std::find(buffer->queues.begin(), buffer->queues.end(), queue) - buffer->queues.begin());
}

// Queues the creation of a segment on its queue's daemon (under the buffer's mutex, or before the
// buffer is shared). The first one has the buffer's id.
void open_segment(cl_command_buffer_khr buffer, cl_uint queue_index, std::vector<cl_uint> after) {
  CommandBufferSegment segment;
  segment.id = buffer->segments.empty() ? buffer->id : new_object_id();
  segment.queue_index = queue_index;
  segment.after = std::move(after);
  cl_command_queue queue = buffer->queues[queue_index];
  RequestMessage request;
  auto create = request.root.initCreateCommandBuffer();
  create.setId(segment.id);
  create.setQueue(queue->id);
  queue->connection->queue(request);
  buffer->segments.push_back(std::move(segment));
}

// The segment a command on queue_index goes to, given the segments it waits for: the last one, when
// it is on the same queue and already waits for them (or is still empty); else a new one after them
// and after the last barrier of its queue. Under the buffer's mutex.
cl_uint segment_for(cl_command_buffer_khr buffer, cl_uint queue_index, const std::vector<cl_uint> &needs) {
  cl_uint last_index = cl_uint(buffer->segments.size() - 1);
  CommandBufferSegment &last = buffer->segments.back();
  if (last.queue_index == queue_index) {
    std::vector<cl_uint> outside;
    for (cl_uint s : needs)
      if (s != last_index && !contains(last.after, s)) outside.push_back(s);
    if (outside.empty()) return last_index;
    if (last.commands == 0) {
      last.after.insert(last.after.end(), outside.begin(), outside.end());
      return last_index;
    }
  }
  std::vector<cl_uint> after = needs;
  for (auto it = buffer->commands.rbegin(); it != buffer->commands.rend(); ++it)
    if (it->barrier && it->queue_index == queue_index) {
      add_once(after, it->segment);
      break;
    }
  open_segment(buffer, queue_index, std::move(after));
  return last_index + 1;
}

// Records request (a message whose root is the wire::Request) on the buffer's queue queue_index.
cl_int record_request(cl_command_buffer_khr buffer, cl_uint queue_index, cl_uint num_sync_points,
                      const cl_sync_point_khr *wait_for, kj::Array<capnp::word> request, const UsedObjects &used,
                      bool barrier, cl_sync_point_khr *sync_point) {
  Connection *connection = buffer->queues[queue_index]->connection;
  if (!connection->alive()) return CL_DEVICE_NOT_AVAILABLE;
  for (const UsedMem &mem : used.mems) mem_place(mem.mem, connection);
  {
    // A daemon numbers commands in the order they arrive: queued (never the socket) under the lock
    // that numbers them here, flushed after it.
    std::lock_guard<std::mutex> lock(buffer->mutex);
    if (buffer->finalized) return CL_INVALID_OPERATION;
    std::vector<cl_uint> needs;
    for (cl_uint i = 0; i < num_sync_points; i++) {
      if (wait_for[i] == 0 || wait_for[i] > buffer->commands.size()) return CL_INVALID_SYNC_POINT_WAIT_LIST_KHR;
      add_once(needs, buffer->commands[wait_for[i] - 1].segment);
    }
    // A barrier without sync points waits for every earlier command of its queue.
    if (barrier && num_sync_points == 0)
      for (cl_uint s = 0; s < buffer->segments.size(); s++)
        if (buffer->segments[s].queue_index == queue_index && buffer->segments[s].commands) add_once(needs, s);
    cl_uint segment_index = segment_for(buffer, queue_index, needs);
    CommandBufferSegment &segment = buffer->segments[segment_index];
    std::vector<cl_sync_point_khr> local;  // the sync points it waits for within its segment
    for (cl_uint i = 0; i < num_sync_points; i++) {
      const RecordedCommand &earlier = buffer->commands[wait_for[i] - 1];
      if (earlier.segment == segment_index) local.push_back(earlier.local_sync_point);
    }
    RequestMessage message;
    auto record = message.root.initRecordCommand();
    record.setCommandBuffer(segment.id);
    auto list = record.initWaitFor(cl_uint(local.size()));
    for (size_t i = 0; i < local.size(); i++) list.set(cl_uint(i), local[i]);
    capnp::FlatArrayMessageReader stored(request);
    record.setCommand(stored.getRoot<wire::Request>());
    connection->queue(message);
    segment.commands++;
    keep_mems(segment.mems, used.mems);
    RecordedCommand recorded;
    recorded.queue_index = queue_index;
    recorded.wait_for.assign(wait_for, wait_for + num_sync_points);
    recorded.request = std::move(request);
    recorded.used = used;
    if (used.kernel) hold(used.kernel);
    for (cl_sampler sampler : used.samplers) hold(sampler);
    recorded.segment = segment_index;
    recorded.local_sync_point = segment.commands;
    recorded.barrier = barrier;
    buffer->commands.push_back(std::move(recorded));
    if (sync_point) *sync_point = cl_sync_point_khr(buffer->commands.size());
  }
  connection->flush();
  return CL_SUCCESS;
}

kj::Array<capnp::word> built_request(const BuildRequest &build) {
  capnp::MallocMessageBuilder message;
  build(message.initRoot<wire::Request>());
  return capnp::messageToFlatArray(message);
}

// Enqueues one segment on queue behind wait_list; on a context of several daemons its memory
// objects are made current on queue's daemon first, and the written ones current only there after.
cl_int enqueue_segment(const CommandBufferSegment &segment, cl_command_queue queue, cl_uint num_events,
                       const cl_event *wait_list, cl_event *event) {
  bool multi_daemon = queue->context->parts.size() > 1;
  Command command(queue, CL_COMMAND_COMMAND_BUFFER_KHR);
  cl_int err = command.begin(num_events, wait_list, event, multi_daemon);
  command.leave_unwatched();
  if (multi_daemon) {
    for (size_t i = 0; i < segment.mems.size() && err == CL_SUCCESS; i++)
      err = mem_prepare(segment.mems[i].first, command, MemSpan::whole());
  }
  if (err != CL_SUCCESS) return err;
  RequestMessage request;
  auto enqueue = request.root.initEnqueueCommandBuffer();
  command.fill(enqueue.initCommand());
  enqueue.setCommandBuffer(segment.id);
  err = command.send(request);
  if (multi_daemon)
    for (const auto &used : segment.mems)
      if (err == CL_SUCCESS && used.second) mem_written(used.first, queue->connection, command.event(), MemSpan::whole());
  return err;
}

}  // namespace

_cl_command_buffer_khr *command_buffer_create(std::vector<cl_command_queue> queues,
                                              std::vector<cl_command_buffer_properties_khr> properties, cl_int *err) {
  for (cl_command_queue queue : queues)
    if (!queue->connection->alive()) {
      *err = CL_DEVICE_NOT_AVAILABLE;
      return nullptr;
    }
  auto *buffer = new _cl_command_buffer_khr;
  for (cl_command_queue queue : queues) hold(queue);
  buffer->queues = std::move(queues);
  buffer->properties = std::move(properties);
  open_segment(buffer, 0, {});
  buffer->queues[0]->connection->flush();
  *err = CL_SUCCESS;
  return buffer;
}

cl_int command_buffer_record(cl_command_buffer_khr buffer, cl_command_queue queue, cl_uint num_sync_points,
                             const cl_sync_point_khr *wait_for, const BuildRequest &build, const UsedObjects &used,
                             cl_sync_point_khr *sync_point) {
  return record_request(buffer, queue_index(buffer, queue), num_sync_points, wait_for, built_request(build), used,
                        false, sync_point);
}

cl_int command_buffer_record_barrier(cl_command_buffer_khr buffer, cl_command_queue queue, cl_uint num_sync_points,
                                     const cl_sync_point_khr *wait_for, cl_sync_point_khr *sync_point) {
  auto build = [](wire::Request::Builder request) { return request.initBarrier(); };
  return record_request(buffer, queue_index(buffer, queue), num_sync_points, wait_for, built_request(build), {}, true,
                        sync_point);
}

bool command_buffer_ready(cl_command_buffer_khr buffer) {
  for (const _cl_mutable_command_khr *launch : buffer->launches)
    if (!launch->unset_args.empty()) return false;
  return true;
}

cl_int command_buffer_finalize(cl_command_buffer_khr buffer) {
  std::lock_guard<std::mutex> lock(buffer->mutex);
  if (buffer->finalized) return CL_INVALID_OPERATION;
  buffer->finalized = true;
  return CL_SUCCESS;
}

_cl_mutable_command_khr *command_buffer_add_launch(cl_command_buffer_khr buffer, cl_command_queue queue,
                                                   cl_sync_point_khr sync_point, cl_kernel kernel, cl_uint work_dim,
                                                   const size_t *offset, const size_t *global, const size_t *local) {
  auto *launch = new _cl_mutable_command_khr;
  launch->buffer = buffer;
  launch->sync_point = sync_point;
  launch->queue = queue;
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
  for (const LaunchUpdate &update : updates) {
    Connection *connection = update.command->queue->connection;
    if (!connection->alive()) return CL_DEVICE_NOT_AVAILABLE;
    for (const auto &arg : update.args)
      if (arg.second.buffer) mem_place(arg.second.buffer, connection);
  }
  std::vector<Connection *> touched;
  {
    std::lock_guard<std::mutex> lock(buffer->mutex);  // queued under it, flushed after
    for (const LaunchUpdate &update : updates) {
      cl_mutable_command_khr launch = update.command;
      RecordedCommand &recorded = buffer->commands[launch->sync_point - 1];
      CommandBufferSegment &segment = buffer->segments[recorded.segment];
      RequestMessage request;
      auto message = request.root.initUpdateCommand();
      message.setCommandBuffer(segment.id);
      message.setSyncPoint(recorded.local_sync_point);
      auto args = message.initArgs(cl_uint(update.args.size()));
      std::vector<UsedMem> mems;
      for (size_t i = 0; i < update.args.size(); i++) {
        cl_uint index = update.args[i].first;
        const _cl_kernel::Arg &arg = update.args[i].second;
        kernel_arg_to_wire(args[cl_uint(i)], index, arg);
        if (arg.buffer) mems.push_back({arg.buffer, kernel_may_write(launch->kernel, index, arg.buffer)});
        // A remapped copy records the launch with this sampler: held as the recorded ones are.
        if (arg.sampler_handle && !contains(recorded.used.samplers, arg.sampler_handle)) {
          hold(arg.sampler_handle);
          recorded.used.samplers.push_back(arg.sampler_handle);
        }
        auto same = [&](const std::pair<cl_uint, _cl_kernel::Arg> &kept) { return kept.first == index; };
        auto kept = std::find_if(launch->updated_args.begin(), launch->updated_args.end(), same);
        if (kept != launch->updated_args.end()) kept->second = arg;
        else launch->updated_args.emplace_back(index, arg);
        auto &unset = launch->unset_args;
        unset.erase(std::remove(unset.begin(), unset.end(), index), unset.end());
      }
      cl_uint dims = launch->work_dim;
      if (update.offset) set_sizes(message.initOffset(dims), update.offset);
      if (update.global) set_sizes(message.initGlobal(dims), update.global);
      if (update.local) set_sizes(message.initLocal(dims), update.local);
      Connection *connection = launch->queue->connection;
      connection->queue(request);
      add_once(touched, connection);
      keep_mems(segment.mems, mems);
      for (cl_uint d = 0; d < dims; d++) {
        if (update.offset) launch->offset[d] = update.offset[d];
        if (update.global) launch->global[d] = update.global[d];
        if (update.local) launch->local[d] = update.local[d];
      }
    }
  }
  for (Connection *connection : touched) connection->flush();
  return CL_SUCCESS;
}

cl_int command_buffer_enqueue(cl_command_buffer_khr buffer, const cl_command_queue *substitutes, cl_uint num_events,
                              const cl_event *wait_list, cl_event *event) {
  auto queue_at = [&](cl_uint i) { return substitutes ? substitutes[i] : buffer->queues[i]; };
  bool multi_daemon = queue_at(0)->context->parts.size() > 1;
  // Copies without the lock's protection: updates may add memory objects meanwhile. The memory
  // objects matter only where the context has several daemons. A buffer of one segment (the
  // common case) is copied without a list: a replay allocates nothing it does not need.
  CommandBufferSegment only{};
  std::vector<CommandBufferSegment> segments;
  {
    std::lock_guard<std::mutex> lock(buffer->mutex);
    if (!buffer->finalized || !command_buffer_ready(buffer)) return CL_INVALID_OPERATION;
    const auto &recorded = buffer->segments;
    auto has_commands = [](const CommandBufferSegment &s) { return s.commands != 0; };
    if (std::count_if(recorded.begin(), recorded.end(), has_commands) <= 1) {
      auto first = std::find_if(recorded.begin(), recorded.end(), has_commands);
      const CommandBufferSegment &picked = first != recorded.end() ? *first : recorded.front();
      only.id = picked.id;
      only.queue_index = picked.queue_index;
      only.commands = picked.commands;
      if (multi_daemon) only.mems = picked.mems;
    } else {
      for (const CommandBufferSegment &segment : recorded) {
        segments.push_back({segment.id, segment.queue_index, segment.commands, segment.after, {}});
        if (multi_daemon) segments.back().mems = segment.mems;
      }
    }
  }
  if (segments.empty()) return enqueue_segment(only, queue_at(only.queue_index), num_events, wait_list, event);
  // Segments in recorded order, each behind those it waits for (the first ones behind the wait
  // list), then a marker on the first queue that completes with the last of them: the replay's event.
  std::vector<cl_event> done(segments.size(), nullptr);
  std::vector<bool> awaited(segments.size(), false);
  cl_int err = CL_SUCCESS;
  for (size_t s = 0; s < segments.size() && err == CL_SUCCESS; s++) {
    const CommandBufferSegment &segment = segments[s];
    if (!segment.commands) continue;
    std::vector<cl_event> wait;
    if (segment.after.empty()) wait.assign(wait_list, wait_list + num_events);
    for (cl_uint earlier : segment.after)
      if (done[earlier]) {
        wait.push_back(done[earlier]);
        awaited[earlier] = true;
      }
    err = enqueue_segment(segment, queue_at(segment.queue_index), cl_uint(wait.size()),
                          wait.empty() ? nullptr : wait.data(), &done[s]);
  }
  if (err == CL_SUCCESS) {
    std::vector<cl_event> last;
    for (size_t s = 0; s < segments.size(); s++)
      if (done[s] && !awaited[s]) last.push_back(done[s]);
    err = enqueue_marker(queue_at(0), CL_COMMAND_COMMAND_BUFFER_KHR, false, cl_uint(last.size()), last.data(), event);
  }
  for (cl_event segment_event : done)
    if (segment_event) release(segment_event);
  return err;
}

_cl_command_buffer_khr *command_buffer_remap(cl_command_buffer_khr buffer, const std::vector<cl_command_queue> &queues,
                                             const std::vector<cl_uint> &map,
                                             const std::vector<cl_mutable_command_khr> &handles,
                                             cl_mutable_command_khr *handles_ret, cl_int *err) {
  // What the copy needs, taken under the lock: the commands, and the launches as they are now.
  struct Launch {
    cl_mutable_command_khr original;
    cl_uint queue_index;
    cl_kernel kernel;
    cl_uint work_dim;
    size_t offset[3], global[3], local[3];
    std::vector<cl_command_properties_khr> properties;
    fedcl_mutable_dispatch_fields_khr updatable;
    std::vector<cl_uint> unset_args;
    std::vector<std::pair<cl_uint, _cl_kernel::Arg>> updated_args;
  };
  std::vector<RecordedCommand> commands;
  std::vector<Launch> launches;
  bool finalized;
  {
    std::lock_guard<std::mutex> lock(buffer->mutex);
    for (const RecordedCommand &recorded : buffer->commands) {
      RecordedCommand copy;
      copy.queue_index = recorded.queue_index;
      copy.wait_for = recorded.wait_for;
      copy.request = kj::heapArray<capnp::word>(recorded.request.asPtr());
      copy.used = recorded.used;
      copy.barrier = recorded.barrier;
      commands.push_back(std::move(copy));
    }
    for (const _cl_mutable_command_khr *launch : buffer->launches) {
      Launch copy{const_cast<cl_mutable_command_khr>(launch), queue_index(buffer, launch->queue), launch->kernel,
                  launch->work_dim, {}, {}, {}, launch->properties, launch->updatable, launch->unset_args,
                  launch->updated_args};
      std::copy(launch->offset, launch->offset + 3, copy.offset);
      std::copy(launch->global, launch->global + 3, copy.global);
      std::copy(launch->local, launch->local + 3, copy.local);
      launches.push_back(std::move(copy));
    }
    finalized = buffer->finalized;
  }
  cl_command_buffer_khr remapped = command_buffer_create(queues, buffer->properties, err);
  if (!remapped) return nullptr;
  remapped->mutable_dispatch = buffer->mutable_dispatch;
  for (RecordedCommand &command : commands) {
    *err = record_request(remapped, map[command.queue_index], cl_uint(command.wait_for.size()), command.wait_for.data(),
                          std::move(command.request), command.used, command.barrier, nullptr);
    if (*err != CL_SUCCESS) {
      release(remapped);
      return nullptr;
    }
  }
  // The launches as they are now: what updates changed travels as an update of the recorded one.
  std::vector<LaunchUpdate> updates;
  for (const Launch &launch : launches) {
    _cl_mutable_command_khr *copy =
        command_buffer_add_launch(remapped, queues[map[launch.queue_index]], launch.original->sync_point, launch.kernel,
                                  launch.work_dim, launch.offset, launch.global, launch.local[0] ? launch.local : nullptr);
    copy->properties = launch.properties;
    copy->updatable = launch.updatable;
    copy->unset_args = launch.unset_args;
    for (size_t i = 0; i < handles.size(); i++)
      if (handles[i] == launch.original) handles_ret[i] = copy;
    if (!finalized) continue;
    LaunchUpdate update;
    update.command = copy;
    update.args = launch.updated_args;
    update.offset = copy->offset;
    update.global = copy->global;
    if (copy->local[0]) update.local = copy->local;
    updates.push_back(std::move(update));
  }
  if (finalized) {
    command_buffer_finalize(remapped);
    *err = command_buffer_update(remapped, updates);
    if (*err != CL_SUCCESS) {
      release(remapped);
      return nullptr;
    }
  }
  return remapped;
}

}  // namespace fedcl
