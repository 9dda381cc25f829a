/* fedcl's transfer engine, MPI commands (part of cl_fedcl_transfer): MPI messages as OpenCL commands,
 * with the clDataTransfer paper's signatures. Include it in MPI programs; it needs <mpi.h>.
 *
 * The functions live in libfedcl_mpi.so, built against the system's Open MPI, so that the ICD
 * (loaded into every OpenCL program) never pulls in MPI: clGetExtensionFunctionAddressForPlatform
 * loads it the first time a program asks for one of them, and it uses the program's own MPI (the
 * same communicators). The program must have initialised MPI with MPI_THREAD_MULTIPLE: the commands
 * call MPI from threads of their own (lower levels are refused with CL_INVALID_OPERATION for now).
 * docs/transfer-engine.md has the semantics. */
#ifndef CL_FEDCL_MPI_H
#define CL_FEDCL_MPI_H

#include <CL/cl_fedcl_transfer.h>
#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Sends size bytes of buffer at offset to rank dest with tag on comm, as a command of queue: the
 * device's bytes are read when the queue and the wait list let the command run, and its event
 * (command type CL_COMMAND_MARKER) completes once MPI has taken them (MPI_Send returned). */
typedef cl_int(CL_API_CALL *clEnqueueSendBuffer_fn)(cl_command_queue queue, cl_mem buffer, cl_bool blocking_send,
                                                    size_t offset, size_t size, int dest, int tag, MPI_Comm comm,
                                                    cl_uint num_events_in_wait_list, const cl_event *event_wait_list,
                                                    cl_event *event);

/* Receives a message of exactly size bytes from rank src with tag on comm into buffer at offset, as a
 * command of queue: the message is received as soon as it comes, and written to the device when the
 * queue and the wait list let the command run; its event (CL_COMMAND_WRITE_BUFFER) completes when the
 * bytes are in the buffer. A message of another size fails the command (CL_INVALID_VALUE; a longer
 * one is MPI's truncation error, a shorter one would leave the range partly unwritten). Accepts what a
 * host MPI_Send sends as well as what clEnqueueSendBuffer sends. */
typedef cl_int(CL_API_CALL *clEnqueueRecvBuffer_fn)(cl_command_queue queue, cl_mem buffer, cl_bool blocking_recv,
                                                    size_t offset, size_t size, int src, int tag, MPI_Comm comm,
                                                    cl_uint num_events_in_wait_list, const cl_event *event_wait_list,
                                                    cl_event *event);

#ifndef CL_NO_EXTENSION_PROTOTYPES
extern CL_API_ENTRY cl_int CL_API_CALL clEnqueueSendBuffer(cl_command_queue queue, cl_mem buffer, cl_bool blocking_send,
                                                           size_t offset, size_t size, int dest, int tag, MPI_Comm comm,
                                                           cl_uint num_events_in_wait_list,
                                                           const cl_event *event_wait_list, cl_event *event);
extern CL_API_ENTRY cl_int CL_API_CALL clEnqueueRecvBuffer(cl_command_queue queue, cl_mem buffer, cl_bool blocking_recv,
                                                           size_t offset, size_t size, int src, int tag, MPI_Comm comm,
                                                           cl_uint num_events_in_wait_list,
                                                           const cl_event *event_wait_list, cl_event *event);
#endif

#ifdef __cplusplus
}
#endif

#endif /* CL_FEDCL_MPI_H */
