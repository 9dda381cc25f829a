// The commands that run on the device alone (copies and fills of buffers and images), described once
// from their request: run at once (exec_device_command) or recorded into a command buffer
// (command_buffer.h) and run at each replay.
#pragma once

#include <functional>
#include <vector>

#include "exec.h"

namespace fedcld {

// Origins and regions travel as up to three values; missing ones are 0 (origins) or 1 (regions).
struct Triple {
  size_t v[3];
};
Triple origin(capnp::List<uint64_t>::Reader list);
Triple region(capnp::List<uint64_t>::Reader list);

// Enqueues the command on a queue behind a wait list; the event out may be null.
using EnqueueFn = std::function<cl_int(cl_command_queue, cl_uint, const cl_event *, cl_event *)>;

struct DeviceCommand {
  const char *call;         // the backend call, for its errors
  std::vector<cl_mem> mems; // the memory objects it uses
  EnqueueFn enqueue;
};

// request's copy or fill, its objects resolved in objects; throws RequestError for unknown objects
// and for any other request.
DeviceCommand describe_device_command(ObjectTable &objects, wire::Request::Reader request);

// Runs request's copy or fill now on the command's queue.
void exec_device_command(Call &call, wire::Command::Reader command, wire::Request::Reader request);

}  // namespace fedcld
