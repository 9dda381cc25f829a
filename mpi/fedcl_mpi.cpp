// libfedcl_mpi.so: the transfer engine's MPI commands (include/CL/cl_fedcl_mpi.h), a library of
// their own so that the ICD never links MPI. The ICD loads it the first time a program asks for one
// of its functions and hands it the transfer port (runtime/transfer_port.h), through which its
// commands reach the daemons; it uses the program's own MPI. The entry points check what MPI needs
// and start operations (mpi_operations.h) that mpi_progress.h runs.
#include <cstdio>
#include <vector>

#include "mpi_operations.h"

using namespace fedcl_mpi;

extern "C" int fedcl_mpi_attach(fedcl::TransferPort *port) {
  if (!port || port->version() != fedcl::TransferPort::kVersion) return -1;
  Progress::get().attach(port);
  return 0;
}

namespace {

cl_int mpi_ready(const char *function) {
  std::string problem = Progress::get().check_mpi();
  if (problem.empty()) return CL_SUCCESS;
  std::fprintf(stderr, "fedcl: %s: %s\n", function, problem.c_str());
  return CL_INVALID_OPERATION;
}

cl_context context_of(cl_command_queue queue) {
  cl_context context = nullptr;
  clGetCommandQueueInfo(queue, CL_QUEUE_CONTEXT, sizeof context, &context, nullptr);
  return context;
}

// A command that only orders: to or from MPI_PROC_NULL, as MPI completes such calls at once.
cl_int ordering_only(cl_command_queue queue, cl_uint num_events, const cl_event *wait_list, cl_event *done) {
  return clEnqueueMarkerWithWaitList(queue, num_events, wait_list, done);
}

cl_int send(cl_command_queue queue, cl_mem buffer, size_t offset, size_t size, Route to, bool blocking,
            cl_uint num_events, const cl_event *wait_list, cl_event *done) {
  if (to.rank == MPI_PROC_NULL) return ordering_only(queue, num_events, wait_list, done);
  return start_device_send(queue, buffer, offset, size, to, blocking, num_events, wait_list, done);
}

// *taken: the message is taken and its bytes are on their way (start_device_receive).
cl_int receive(cl_command_queue queue, cl_mem buffer, size_t offset, size_t size, Route from, bool blocking,
               bool wants_event, cl_uint num_events, const cl_event *wait_list, cl_event *done, bool *taken) {
  *taken = false;
  if (from.rank == MPI_PROC_NULL) return ordering_only(queue, num_events, wait_list, done);
  if (size > 0)
    return start_device_receive(queue, buffer, offset, size, from, blocking, wants_event, num_events, wait_list, done,
                                taken);
  // An empty message writes nothing: the command waits for it to be taken, like a host receive.
  cl_context context = context_of(queue);
  if (!context) return CL_INVALID_COMMAND_QUEUE;
  MPI_Request request;
  if (start_host_receive(nullptr, 0, from, &request) != MPI_SUCCESS) return CL_OUT_OF_RESOURCES;
  cl_int err = CL_SUCCESS;
  cl_event arrived = start_request_event(context, request, &err);
  if (err != CL_SUCCESS) return err;
  std::vector<cl_event> waits(wait_list, wait_list + num_events);
  waits.push_back(arrived);
  err = clEnqueueMarkerWithWaitList(queue, cl_uint(waits.size()), waits.data(), done);
  clReleaseEvent(arrived);
  return err;
}

}  // namespace

extern "C" CL_API_ENTRY cl_int CL_API_CALL clEnqueueSendBuffer(cl_command_queue queue, cl_mem buffer,
                                                               cl_bool blocking, size_t offset, size_t size, int dest,
                                                               int tag, MPI_Comm comm, cl_uint num_events,
                                                               const cl_event *wait_list, cl_event *event) {
  cl_int err = mpi_ready("clEnqueueSendBuffer");
  cl_event done = nullptr;
  if (err == CL_SUCCESS)
    err = send(queue, buffer, offset, size, {dest, tag, comm}, blocking, num_events, wait_list, &done);
  if (err != CL_SUCCESS) return err;
  if (Progress::get().poll_here()) Progress::get().wake();  // a send made here may still be under way
  return hand_out(done, blocking, event);
}

extern "C" CL_API_ENTRY cl_int CL_API_CALL clEnqueueRecvBuffer(cl_command_queue queue, cl_mem buffer,
                                                               cl_bool blocking, size_t offset, size_t size, int src,
                                                               int tag, MPI_Comm comm, cl_uint num_events,
                                                               const cl_event *wait_list, cl_event *event) {
  cl_int err = mpi_ready("clEnqueueRecvBuffer");
  cl_event done = nullptr;
  bool taken = false;
  if (err == CL_SUCCESS)
    err = receive(queue, buffer, offset, size, {src, tag, comm}, blocking, event != nullptr, num_events, wait_list,
                  &done, &taken);
  if (err != CL_SUCCESS) return err;
  Progress::get().poll_here();
  return hand_out(done, blocking && !taken, event);
}

extern "C" CL_API_ENTRY cl_int CL_API_CALL clEnqueueSendrecvBuffer(
    cl_command_queue queue, cl_mem send_buffer, cl_mem recv_buffer, cl_bool blocking, size_t send_offset,
    size_t send_size, int dest, int send_tag, size_t recv_offset, size_t recv_size, int source, int recv_tag,
    MPI_Comm comm, cl_uint num_events, const cl_event *wait_list, cl_event *event) {
  cl_int err = mpi_ready("clEnqueueSendrecvBuffer");
  if (err != CL_SUCCESS) return err;
  // Both halves behind the same wait list; the command is a marker behind both.
  cl_event halves[2] = {nullptr, nullptr};
  // Not read on this thread even when blocking: the receive must be posted before anything waits.
  err = send(queue, send_buffer, send_offset, send_size, {dest, send_tag, comm}, false, num_events, wait_list,
             &halves[0]);
  if (err != CL_SUCCESS) return err;
  bool taken = false;  // never, for a receive that does not block
  err = receive(queue, recv_buffer, recv_offset, recv_size, {source, recv_tag, comm}, false, true, num_events,
                wait_list, &halves[1], &taken);
  cl_event done = nullptr;
  if (err == CL_SUCCESS) err = clEnqueueMarkerWithWaitList(queue, 2, halves, &done);
  for (cl_event half : halves)
    if (half) clReleaseEvent(half);
  if (err != CL_SUCCESS) return err;  // a half already enqueued still runs, as its own command would
  Progress::get().poll_here();
  return hand_out(done, blocking, event);
}

extern "C" CL_API_ENTRY cl_event CL_API_CALL clCreateEventFromMPIRequest(cl_context context, MPI_Request *request,
                                                                         cl_int *errcode_ret) {
  cl_int err = mpi_ready("clCreateEventFromMPIRequest");
  cl_event event = nullptr;
  if (err == CL_SUCCESS && (!request || *request == MPI_REQUEST_NULL)) err = CL_INVALID_VALUE;
  if (err == CL_SUCCESS) event = start_request_event(context, *request, &err);
  if (err == CL_SUCCESS) {
    *request = MPI_REQUEST_NULL;  // fedcl's now: it completes (and frees) it
    Progress::get().poll_here();
  }
  if (errcode_ret) *errcode_ret = err;
  return event;
}

extern "C" CL_API_ENTRY int CL_API_CALL clFedclIrecvFromDevice(void *buffer, size_t size, int source, int tag,
                                                               MPI_Comm comm, MPI_Request *request) {
  if (mpi_ready("clFedclIrecvFromDevice") != CL_SUCCESS || !request || (size && !buffer)) return MPI_ERR_ARG;
  if (source == MPI_PROC_NULL) return MPI_Irecv(buffer, 0, MPI_BYTE, source, tag, comm, request);
  int err = start_host_receive(buffer, size, {source, tag, comm}, request);
  Progress::get().poll_here();
  return err;
}
