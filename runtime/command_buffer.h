// Command buffers (cl_khr_command_buffer 0.9.8, with mutable dispatch 0.9.5): commands recorded here
// and on the queue's daemon, which replays them at each clEnqueueCommandBufferKHR on one small
// request. Arguments are checked by icd/api_command_buffer.cpp; this file keeps the state and talks
// to the daemon.
#pragma once

#include <CL/cl_fedcl_command_buffer.h>

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
  cl_kernel kernel;                                        // held
  std::vector<cl_command_properties_khr> properties;       // as given, 0-terminated, or empty
  fedcl_mutable_dispatch_fields_khr updatable = 0;
  // The sizes as recorded or last updated (under the buffer's mutex); offset and local are all 0
  // where the application gave none.
  cl_uint work_dim = 0;
  size_t offset[3] = {}, global[3] = {}, local[3] = {};
  std::vector<cl_uint> unset_args;                         // set by no update yet (under the buffer's mutex)
  _cl_mutable_command_khr() : Object(kMagic) {}
  ~_cl_mutable_command_khr();
};

struct _cl_command_buffer_khr : fedcl::Object {
  static constexpr fedcl::Magic kMagic = fedcl::Magic::command_buffer;
  cl_command_queue queue;                                  // the one it was created for (held)
  std::vector<cl_command_buffer_properties_khr> properties;  // as given, 0-terminated, or empty
  bool mutable_dispatch = false;                           // created with CL_COMMAND_BUFFER_MUTABLE_KHR
  std::mutex mutex;
  std::vector<_cl_mutable_command_khr *> launches;         // the handles it gave out (owned)
  std::atomic<bool> finalized{false};                     // no more commands: read without the lock
  cl_uint commands = 0;                                    // recorded so far: the last sync point
  // The memory objects the commands use (one application reference each, while the buffer lives),
  // and whether a command may write them: they are made current on the queue's daemon before each
  // replay, and the written ones current only there after it. Updates add to it: under the mutex.
  std::vector<std::pair<cl_mem, bool>> mems;
  _cl_command_buffer_khr() : Object(kMagic) {}
  ~_cl_command_buffer_khr();
  void last_release();
};

namespace fedcl {

// A memory object a recorded command uses, and whether the command may write it.
struct UsedMem {
  cl_mem mem;
  bool written;
};

_cl_command_buffer_khr *command_buffer_create(cl_command_queue queue,
                                              std::vector<cl_command_buffer_properties_khr> properties, cl_int *err);

// Records the command build describes (its Command left empty), after the sync points wait_for.
// The request is queued under the buffer's lock, which numbers commands in the order the daemon
// sees them, and flushed after it; what the daemon refuses comes back asynchronously, also with
// FEDCL_SYNC.
// CL_INVALID_OPERATION once finalized; CL_INVALID_SYNC_POINT_WAIT_LIST_KHR for a sync point that names
// no earlier command.
cl_int command_buffer_record(cl_command_buffer_khr buffer, cl_uint num_sync_points, const cl_sync_point_khr *wait_for,
                             const BuildRequest &build, const std::vector<UsedMem> &mems, cl_sync_point_khr *sync_point);

// Records a barrier: the commands after it wait for every command before it (or for wait_for's).
cl_int command_buffer_record_barrier(cl_command_buffer_khr buffer, cl_uint num_sync_points,
                                     const cl_sync_point_khr *wait_for, cl_sync_point_khr *sync_point);

cl_int command_buffer_finalize(cl_command_buffer_khr buffer);
// Whether every recorded launch has all its arguments (under the buffer's mutex): a finalized
// buffer runs only then.
bool command_buffer_ready(cl_command_buffer_khr buffer);

// The handle of the launch recorded at sync_point, for clUpdateMutableCommandsKHR (the buffer owns
// it), made by kernel_record.
_cl_mutable_command_khr *command_buffer_add_launch(cl_command_buffer_khr buffer, cl_sync_point_khr sync_point,
                                                   cl_kernel kernel, cl_uint work_dim, const size_t *offset,
                                                   const size_t *global, const size_t *local);

// One checked update of a recorded launch: the arguments that change (index and value as
// clSetKernelArg would keep it) and the sizes given (null: unchanged).
struct LaunchUpdate {
  cl_mutable_command_khr command;
  std::vector<std::pair<cl_uint, _cl_kernel::Arg>> args;
  const size_t *offset = nullptr, *global = nullptr, *local = nullptr;
};
// Sends the updates, in order, for the replays that follow.
cl_int command_buffer_update(cl_command_buffer_khr buffer, const std::vector<LaunchUpdate> &updates);

// Replays buffer on queue (its own, or one of the same device and properties).
cl_int command_buffer_enqueue(cl_command_buffer_khr buffer, cl_command_queue queue, cl_uint num_events,
                              const cl_event *wait_list, cl_event *event);

}  // namespace fedcl
