// The operations behind the MPI commands (mpi_progress.h runs them).
#pragma once

#include <CL/cl_fedcl_mpi.h>

#include <string>

#include "mpi_progress.h"

namespace fedcl_mpi {

// MPI counts are ints: a plain message above this goes as pieces of at most this many bytes, in
// order (MPI keeps the order of messages with the same source, tag and communicator).
constexpr size_t kPieceBytes = size_t(1) << 30;

// A device send: the range's bytes, read by the daemon when the command may run, go to route.
// Returns the command's event (the daemon's send: complete once the bytes have left it), or an
// error with nothing enqueued. blocking: the caller waits for the event next.
cl_int start_device_send(cl_command_queue queue, cl_mem buffer, size_t offset, size_t size, Route to, bool blocking,
                         cl_uint num_events, const cl_event *wait_list, cl_event *done);

// A device receive: returns the command's event (the daemon's write of the range). blocking: the
// caller waits next, for the event unless *taken says this thread took the message and handed its
// bytes to a blocking write (they are fedcl's, on their way into the buffer in the queue's order);
// then *done is null unless wants_event (a write's event costs the daemon a completion notice).
cl_int start_device_receive(cl_command_queue queue, cl_mem buffer, size_t offset, size_t size, Route from,
                            bool blocking, bool wants_event, cl_uint num_events, const cl_event *wait_list,
                            cl_event *done, bool *taken);

// The host end of a device send (clFedclIrecvFromDevice): a generalized MPI request.
int start_host_receive(void *host, size_t size, Route from, MPI_Request *request);

// An event that follows an MPI request (clCreateEventFromMPIRequest).
cl_event start_request_event(cl_context context, MPI_Request request, cl_int *err);

}  // namespace fedcl_mpi
