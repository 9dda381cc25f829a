/* fedcl's transfer engine, MPI commands (part of cl_fedcl_transfer): MPI messages as OpenCL commands,
 * with the clDataTransfer paper's signatures. Include it in MPI programs; it needs <mpi.h>.
 *
 * The functions live in libfedcl_mpi.so, built against the system's Open MPI, so that the ICD
 * (loaded into every OpenCL program) never pulls in MPI: clGetExtensionFunctionAddressForPlatform
 * loads it the first time a program asks for one of them, and it uses the program's own MPI (the
 * same communicators). With MPI_THREAD_MULTIPLE a thread of fedcl's moves the messages in the
 * background; at lower levels fedcl calls MPI only on the application's main thread, while it is
 * inside fedcl (these functions, clWaitForEvents, clFinish, blocking commands).
 * docs/transfer-engine.md has the semantics, the threshold of the direct path and the tag that
 * fedcl reserves (MPI_TAG_UB). */
#ifndef CL_FEDCL_MPI_H
#define CL_FEDCL_MPI_H

#include <CL/cl_fedcl_transfer.h>
#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Sends size bytes of buffer at offset to rank dest with tag on comm, as a command of queue: the
 * device's bytes are read when the queue and the wait list let the command run, and its event
 * (command type CL_COMMAND_MARKER) completes once MPI has taken them, or the daemons have moved
 * them. Below the threshold (FEDCL_MPI_DIRECT_MIN, 1 MiB) the message is plain bytes, which a host
 * MPI_Recv takes; from it on, a receiving fedcl device takes them straight from this device's
 * daemon, and a host takes them with clFedclIrecvFromDevice. dest may be MPI_PROC_NULL. */
typedef cl_int(CL_API_CALL *clEnqueueSendBuffer_fn)(cl_command_queue queue, cl_mem buffer, cl_bool blocking_send,
                                                    size_t offset, size_t size, int dest, int tag, MPI_Comm comm,
                                                    cl_uint num_events_in_wait_list, const cl_event *event_wait_list,
                                                    cl_event *event);

/* Receives a message of exactly size bytes from rank src (or MPI_ANY_SOURCE, or MPI_PROC_NULL) with
 * tag on comm into buffer at offset, as a command of queue: the message is matched as soon as it
 * comes, in the order the receives were enqueued, and written to the device when the queue and the
 * wait list let the command run; its event (CL_COMMAND_WRITE_BUFFER) completes when the bytes are in
 * the buffer. A message of another size fails the command (CL_INVALID_VALUE; a longer one is MPI's
 * truncation error, a shorter one would leave the range partly unwritten). Accepts what a host
 * MPI_Send sends as well as what clEnqueueSendBuffer sends. blocking_recv: returns once the message is
 * taken. Below the threshold, with MPI_THREAD_MULTIPLE, that is when its bytes are on their way into
 * the buffer in the queue's order, as a blocking clEnqueueWriteBuffer returns (the event still says
 * when they are in the buffer); otherwise when the event completes. */
typedef cl_int(CL_API_CALL *clEnqueueRecvBuffer_fn)(cl_command_queue queue, cl_mem buffer, cl_bool blocking_recv,
                                                    size_t offset, size_t size, int src, int tag, MPI_Comm comm,
                                                    cl_uint num_events_in_wait_list, const cl_event *event_wait_list,
                                                    cl_event *event);

/* MPI_Sendrecv as one command: sends send_size bytes of send_buffer at send_offset to dest with
 * send_tag and receives recv_size bytes from source with recv_tag into recv_buffer at recv_offset,
 * both behind the wait list; its event (CL_COMMAND_MARKER) completes when both halves have. dest or
 * source may be MPI_PROC_NULL (the edges of a domain), and the two buffers may be the same. */
typedef cl_int(CL_API_CALL *clEnqueueSendrecvBuffer_fn)(cl_command_queue queue, cl_mem send_buffer,
                                                        cl_mem recv_buffer, cl_bool blocking, size_t send_offset,
                                                        size_t send_size, int dest, int send_tag, size_t recv_offset,
                                                        size_t recv_size, int source, int recv_tag, MPI_Comm comm,
                                                        cl_uint num_events_in_wait_list,
                                                        const cl_event *event_wait_list, cl_event *event);

/* A user event of context that completes when the MPI request does (CL_OUT_OF_RESOURCES status if it
 * fails), so that commands can wait for a host's non-blocking MPI call. The request becomes fedcl's:
 * *request is set to MPI_REQUEST_NULL, and fedcl completes and frees it. */
typedef cl_event(CL_API_CALL *clCreateEventFromMPIRequest_fn)(cl_context context, MPI_Request *request,
                                                              cl_int *errcode_ret);

/* The host end of a device send of any size (the paper's MPI_Irecv with MPI_CL_MEM): starts
 * receiving size bytes from source with tag into host memory, as a non-blocking MPI request (a
 * generalized request: MPI_Wait and MPI_Test take it with MPI_THREAD_MULTIPLE; at lower levels
 * wait for it through clCreateEventFromMPIRequest and clWaitForEvents). Takes plain messages too.
 * Returns an MPI error code. */
typedef int(CL_API_CALL *clFedclIrecvFromDevice_fn)(void *buffer, size_t size, int source, int tag, MPI_Comm comm,
                                                    MPI_Request *request);

#ifndef CL_NO_EXTENSION_PROTOTYPES
extern CL_API_ENTRY cl_int CL_API_CALL clEnqueueSendBuffer(cl_command_queue queue, cl_mem buffer, cl_bool blocking_send,
                                                           size_t offset, size_t size, int dest, int tag, MPI_Comm comm,
                                                           cl_uint num_events_in_wait_list,
                                                           const cl_event *event_wait_list, cl_event *event);
extern CL_API_ENTRY cl_int CL_API_CALL clEnqueueRecvBuffer(cl_command_queue queue, cl_mem buffer, cl_bool blocking_recv,
                                                           size_t offset, size_t size, int src, int tag, MPI_Comm comm,
                                                           cl_uint num_events_in_wait_list,
                                                           const cl_event *event_wait_list, cl_event *event);
extern CL_API_ENTRY cl_int CL_API_CALL clEnqueueSendrecvBuffer(cl_command_queue queue, cl_mem send_buffer,
                                                               cl_mem recv_buffer, cl_bool blocking,
                                                               size_t send_offset, size_t send_size, int dest,
                                                               int send_tag, size_t recv_offset, size_t recv_size,
                                                               int source, int recv_tag, MPI_Comm comm,
                                                               cl_uint num_events_in_wait_list,
                                                               const cl_event *event_wait_list, cl_event *event);
extern CL_API_ENTRY cl_event CL_API_CALL clCreateEventFromMPIRequest(cl_context context, MPI_Request *request,
                                                                     cl_int *errcode_ret);
extern CL_API_ENTRY int CL_API_CALL clFedclIrecvFromDevice(void *buffer, size_t size, int source, int tag,
                                                           MPI_Comm comm, MPI_Request *request);
#endif

#ifdef __cplusplus
}
#endif

#endif /* CL_FEDCL_MPI_H */
