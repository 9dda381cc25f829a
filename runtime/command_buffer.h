// Command buffers (cl_khr_command_buffer 0.9.8, with mutable dispatch 0.9.5 and multi-device 0.9.2):
// commands recorded here and on the daemons of their queues, which replay them at each
// clEnqueueCommandBufferKHR on one small request each. A buffer over several queues is recorded as
// segments: runs of consecutive commands on one queue, each a command buffer of its own on that
// queue's daemon, replayed in order behind the segments they wait for. Arguments are checked by
// icd/api_command_buffer.cpp; this file keeps the state and talks to the daemons.
#pragma once

#include <CL/cl_fedcl_command_buffer.h>
#include <kj/array.h>

#include <atomic>
#include <mutex>
#include <utility>
#include <vector>

#include "handles.h"
#include "transfer.h"

// A recorded launch that clUpdateMutableCommandsKHR may change; it lives as long as its buffer.
struct _cl_mutable_command_khr : fedcl::Object {
  static constexpr fedcl::Magic kMagic = fedcl::Magic::mutable_command;
  cl_command_buffer_khr buffer;
  cl_sync_point_khr sync_point;                            // its place in the buffer
  cl_command_queue queue;                                  // the one of the buffer's queues it runs on
  cl_kernel kernel;                                        // held
  std::vector<cl_command_properties_khr> properties;       // as given, 0-terminated, or empty
  fedcl_mutable_dispatch_fields_khr updatable = 0;
  // The sizes as recorded or last updated (under the buffer's mutex); offset and local are all 0
  // where the application gave none.
  cl_uint work_dim = 0;
  size_t offset[3] = {}, global[3] = {}, local[3] = {};
  std::vector<cl_uint> unset_args;                         // set by no update yet (under the buffer's mutex)
  // The last value each update gave an argument (under the buffer's mutex): a remapped copy of the
  // buffer applies them to the launch as recorded.
  std::vector<std::pair<cl_uint, _cl_kernel::Arg>> updated_args;
  _cl_mutable_command_khr() : Object(kMagic) {}
  ~_cl_mutable_command_khr();
};

namespace fedcl {

// A memory object a recorded command uses, and whether the command may write it.
struct UsedMem {
  cl_mem mem;
  bool written;
};

// What a recorded command names: its memory objects, and a launch's kernel and samplers. The buffer
// holds the kernel and the samplers while it lives (the segments hold the memory objects): its
// remapped copies record the command again by their ids, whatever the application released since.
struct UsedObjects {
  std::vector<UsedMem> mems;
  cl_kernel kernel = nullptr;
  std::vector<cl_sampler> samplers;
};

// A run of consecutive commands of a command buffer on one of its queues: a command buffer of its
// own on that queue's daemon, whose sync points count from 1 again.
struct CommandBufferSegment {
  uint64_t id;                                   // the daemon's command buffer
  cl_uint queue_index;                           // into the buffer's queues
  cl_uint commands = 0;                          // recorded in it so far
  std::vector<cl_uint> after;                    // earlier segments its first command waits for
  // The memory objects its commands use and whether one may write them: made current on its
  // daemon before each replay, the written ones current only there after it.
  std::vector<std::pair<cl_mem, bool>> mems;
};

// A command as recorded, kept for clRemapCommandBufferKHR: its queue, the sync points it waits for
// (the buffer's numbering), its wire request, what it uses, and where it went.
struct RecordedCommand {
  cl_uint queue_index;
  std::vector<cl_sync_point_khr> wait_for;
  kj::Array<capnp::word> request;                // a message whose root is the wire::Request
  UsedObjects used;                              // with the samplers updates gave its launch
  cl_uint segment;
  cl_sync_point_khr local_sync_point;            // in its segment
  bool barrier = false;
};

}  // namespace fedcl

struct _cl_command_buffer_khr : fedcl::Object {
  static constexpr fedcl::Magic kMagic = fedcl::Magic::command_buffer;
  std::vector<cl_command_queue> queues;                    // those it was created for (held)
  std::vector<cl_command_buffer_properties_khr> properties;  // as given, 0-terminated, or empty
  bool mutable_dispatch = false;                           // created with CL_COMMAND_BUFFER_MUTABLE_KHR
  std::mutex mutex;
  std::vector<_cl_mutable_command_khr *> launches;         // the handles it gave out (owned)
  std::atomic<bool> finalized{false};                     // no more commands: read without the lock
  std::vector<fedcl::RecordedCommand> commands;            // sync point k is commands[k - 1]
  std::vector<fedcl::CommandBufferSegment> segments;       // the first is created with the buffer
  _cl_command_buffer_khr() : Object(kMagic) {}
  ~_cl_command_buffer_khr();
  void last_release();
  cl_context context() const { return queues.front()->context; }
};

namespace fedcl {

// queues: checked (valid, one context). The first segment is created on queues[0]'s daemon.
_cl_command_buffer_khr *command_buffer_create(std::vector<cl_command_queue> queues,
                                              std::vector<cl_command_buffer_properties_khr> properties, cl_int *err);

// Records the command build describes (its Command left empty) on queue (one of the buffer's),
// after the sync points wait_for. The requests are queued under the buffer's lock, which numbers
// commands in the order the daemons see them, and flushed after it; what a daemon refuses comes
// back asynchronously, also with FEDCL_SYNC.
// CL_INVALID_OPERATION once finalized; CL_INVALID_SYNC_POINT_WAIT_LIST_KHR for a sync point that names
// no earlier command.
cl_int command_buffer_record(cl_command_buffer_khr buffer, cl_command_queue queue, cl_uint num_sync_points,
                             const cl_sync_point_khr *wait_for, const BuildRequest &build, const UsedObjects &used,
                             cl_sync_point_khr *sync_point);

// Records a barrier on queue: its later commands wait for every earlier one of queue (or for
// wait_for's).
cl_int command_buffer_record_barrier(cl_command_buffer_khr buffer, cl_command_queue queue, cl_uint num_sync_points,
                                     const cl_sync_point_khr *wait_for, cl_sync_point_khr *sync_point);

cl_int command_buffer_finalize(cl_command_buffer_khr buffer);
// Whether every recorded launch has all its arguments (under the buffer's mutex): a finalized
// buffer runs only then.
bool command_buffer_ready(cl_command_buffer_khr buffer);

// The handle of the launch recorded at sync_point, for clUpdateMutableCommandsKHR (the buffer owns
// it), made by kernel_record.
_cl_mutable_command_khr *command_buffer_add_launch(cl_command_buffer_khr buffer, cl_command_queue queue,
                                                   cl_sync_point_khr sync_point, cl_kernel kernel, cl_uint work_dim,
                                                   const size_t *offset, const size_t *global, const size_t *local);

// One checked update of a recorded launch: the arguments that change (index and value as
// clSetKernelArg would keep it) and the sizes given (null: unchanged).
struct LaunchUpdate {
  cl_mutable_command_khr command;
  std::vector<std::pair<cl_uint, _cl_kernel::Arg>> args;
  const size_t *offset = nullptr, *global = nullptr, *local = nullptr;
};
// Sends the updates, in order, for the replays that follow.
cl_int command_buffer_update(cl_command_buffer_khr buffer, const std::vector<LaunchUpdate> &updates);

// Replays buffer on its own queues, or on substitutes (null, or one queue of the same device for
// each of the buffer's, in the same order, checked by the caller).
cl_int command_buffer_enqueue(cl_command_buffer_khr buffer, const cl_command_queue *substitutes, cl_uint num_events,
                              const cl_event *wait_list, cl_event *event);

// A copy of buffer whose commands run on queues: the command recorded on the buffer's queue i on
// queues[map[i]]. It is in buffer's state, with the updates its launches have had. handles: launches
// of buffer, whose copies go to handles_ret. queues: checked (valid, buffer's context).
_cl_command_buffer_khr *command_buffer_remap(cl_command_buffer_khr buffer, const std::vector<cl_command_queue> &queues,
                                             const std::vector<cl_uint> &map,
                                             const std::vector<cl_mutable_command_khr> &handles,
                                             cl_mutable_command_khr *handles_ret, cl_int *err);

}  // namespace fedcl
