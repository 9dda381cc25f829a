// Contexts and command queues on the daemons.
#pragma once

#include "handles.h"

namespace fedcl {

// Creates context on each of its daemons, with that daemon's devices of it, and waits for their
// verdicts: the one create that does (all asked first, one round trip in all), so that a backend
// out of contexts or memory refuses here, with its error, and not as a CL_INVALID_PROGRAM or
// CL_INVALID_COMMAND_QUEUE in later calls on a context that was never made. Contexts are rare and
// cost the backend milliseconds, so the round trip is cheap. Returns the first failure.
cl_int context_create(cl_context context);

// Creates queue id of context for device (its id on connection's daemon) there.
cl_int queue_create(Connection *connection, uint64_t id, cl_context context, uint64_t device,
                    cl_command_queue_properties properties);

// Sends queue's commands to its daemon now (clFlush).
cl_int queue_flush(cl_command_queue queue);

// Waits until queue's daemon has finished the queue's commands; returns what the daemon answered.
cl_int queue_finish(cl_command_queue queue);

}  // namespace fedcl
