// Command buffers (cl_khr_command_buffer 0.9.8): commands recorded here and on the queue's daemon,
// which replays them at each clEnqueueCommandBufferKHR on one small request. Arguments are checked
// by icd/api_command_buffer.cpp; this file keeps the state and talks to the daemon.
#pragma once

#include <CL/cl_fedcl_command_buffer.h>

#include <atomic>
#include <mutex>
#include <utility>
#include <vector>

#include "handles.h"
#include "transfer.h"

struct _cl_command_buffer_khr : fedcl::Object {
  static constexpr fedcl::Magic kMagic = fedcl::Magic::command_buffer;
  cl_command_queue queue;                                  // the one it was created for (held)
  std::vector<cl_command_buffer_properties_khr> properties;  // as given, 0-terminated, or empty
  std::mutex mutex;
  std::atomic<bool> finalized{false};                     // no more commands: read without the lock
  cl_uint commands = 0;                                    // recorded so far: the last sync point
  // The memory objects the commands use (one application reference each, while the buffer lives),
  // and whether a command may write them: they are made current on the queue's daemon before each
  // replay, and the written ones current only there after it.
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
// CL_INVALID_OPERATION once finalized; CL_INVALID_SYNC_POINT_WAIT_LIST_KHR for a sync point that names
// no earlier command.
cl_int command_buffer_record(cl_command_buffer_khr buffer, cl_uint num_sync_points, const cl_sync_point_khr *wait_for,
                             const BuildRequest &build, const std::vector<UsedMem> &mems, cl_sync_point_khr *sync_point);

cl_int command_buffer_finalize(cl_command_buffer_khr buffer);

// Replays buffer on queue (its own, or one of the same device and properties).
cl_int command_buffer_enqueue(cl_command_buffer_khr buffer, cl_command_queue queue, cl_uint num_events,
                              const cl_event *wait_list, cl_event *event);

}  // namespace fedcl
