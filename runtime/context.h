// Contexts and command queues on the daemons.
#pragma once

#include "handles.h"

namespace fedcl {

// Creates context on part's daemon, with that daemon's devices of it.
cl_int context_create(cl_context context, const ContextPart &part);

// Creates queue id of context for device (its id on connection's daemon) there.
cl_int queue_create(Connection *connection, uint64_t id, cl_context context, uint64_t device,
                    cl_command_queue_properties properties);

// Sends queue's commands to its daemon now (clFlush).
cl_int queue_flush(cl_command_queue queue);

// Waits until queue's daemon has finished the queue's commands; returns what the daemon answered.
cl_int queue_finish(cl_command_queue queue);

}  // namespace fedcl
