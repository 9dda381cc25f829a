/* fedcl's transfer engine: file and MPI transfers as OpenCL commands (the clDataTransfer API).
 *
 * The platform lists the extension "cl_fedcl_transfer" in CL_PLATFORM_EXTENSIONS; reach the
 * functions with clGetExtensionFunctionAddressForPlatform(platform, "<name>"). (The deprecated
 * clGetExtensionFunctionAddress(name) of the ocl-icd and Khronos loaders asks a platform only for
 * names ending in its ICD suffix, which the clDataTransfer names do not.) docs/transfer-engine.md
 * has the semantics. */
#ifndef CL_FEDCL_TRANSFER_H
#define CL_FEDCL_TRANSFER_H

#include <CL/cl.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CL_FEDCL_TRANSFER_EXTENSION_NAME "cl_fedcl_transfer"

/* Reads size bytes from file (from its current position) into buffer at offset, as a command of
 * queue: ordered by the queue and the wait list, with an event (command type CL_COMMAND_WRITE_BUFFER)
 * that completes when the bytes are in the buffer. The stream is read in chunks while earlier chunks
 * travel and land. It belongs to the command until its event completes (the file position then
 * stands after the bytes read). A file shorter than size, or a stream not open for reading, fails the
 * command: its event ends with CL_INVALID_VALUE and the context's notify callback says why. */
typedef cl_int(CL_API_CALL *clEnqueueWriteBufferFromStdioFile_fn)(
    cl_command_queue queue, cl_mem buffer, cl_bool blocking_write, size_t offset, size_t size, FILE *file,
    cl_uint num_events_in_wait_list, const cl_event *event_wait_list, cl_event *event);

/* Writes size bytes of buffer at offset to file (at its current position), as a command of queue
 * (command type CL_COMMAND_READ_BUFFER). The device's side runs when the queue and the wait list let
 * it; the event completes once every byte is in the file (the stream flushed). A stream not open for
 * writing fails the command with CL_INVALID_VALUE, another write error with CL_OUT_OF_RESOURCES, and
 * the context's notify callback says why. Commands of other daemons of the context that wait for
 * the event are released once the file is written too. */
typedef cl_int(CL_API_CALL *clEnqueueReadBufferToStdioFile_fn)(
    cl_command_queue queue, cl_mem buffer, cl_bool blocking_read, size_t offset, size_t size, FILE *file,
    cl_uint num_events_in_wait_list, const cl_event *event_wait_list, cl_event *event);

/* Files of the node whose daemon holds the queue's device: the daemon itself reads size bytes of
 * the file at path from file_offset into the buffer (WriteBufferFromNodeFile), or writes them from
 * the buffer into the file at file_offset, creating it (0600) if need be and leaving the rest of it
 * as it was (ReadBufferToNodeFile); no byte crosses to this process. path is relative to the
 * session's user's folder on that node (fedcld --file-root DIR: DIR/USER); absolute paths, ".." and
 * symbolic links are refused, and a daemon without --file-root serves no file. A refused path, a file shorter than asked or a failed write fails the command
 * (CL_INVALID_VALUE, or CL_OUT_OF_RESOURCES for a write error) with a message to the context's
 * notify callback. Command types: CL_COMMAND_WRITE_BUFFER and CL_COMMAND_READ_BUFFER. */
typedef cl_int(CL_API_CALL *clEnqueueWriteBufferFromNodeFile_fn)(
    cl_command_queue queue, cl_mem buffer, cl_bool blocking_write, size_t offset, size_t size, const char *path,
    size_t file_offset, cl_uint num_events_in_wait_list, const cl_event *event_wait_list, cl_event *event);
typedef cl_int(CL_API_CALL *clEnqueueReadBufferToNodeFile_fn)(
    cl_command_queue queue, cl_mem buffer, cl_bool blocking_read, size_t offset, size_t size, const char *path,
    size_t file_offset, cl_uint num_events_in_wait_list, const cl_event *event_wait_list, cl_event *event);

/* Collective commands over buffers of several devices of one context (SnuCL's names; docs/collectives.md).
 * A collective has participants, one per entry of queues (a queue may appear more than once): each
 * participant's part runs on its queue's device, the bytes move between the daemons over their peer
 * links (never through this process), and reductions combine elements on the daemons as the bytes
 * arrive. Each is a command: it starts on every queue once the wait list is complete (and, on an
 * in-order queue, once the commands before it are), and events, if not NULL, receives one event per
 * participant, which completes when that participant's destination holds its result and its source
 * may be reused. An array of offsets may be NULL: all zero. size is in bytes: the message
 * (broadcast, reduce, all-reduce) or one block (scatter, gather, all-gather, all-to-all: a
 * participant's share, laid out in participant order in the buffer that holds every block).
 *
 * Errors: CL_INVALID_VALUE for no queue, a root out of range, a size of 0, a range outside its buffer,
 * an unknown operation or element type, or a reduction's size or offset that is not whole elements;
 * CL_INVALID_COMMAND_QUEUE, CL_INVALID_CONTEXT (queues or buffers of different contexts),
 * CL_INVALID_MEM_OBJECT, CL_INVALID_EVENT_WAIT_LIST as for any command; CL_MEM_COPY_OVERLAP where a
 * range written overlaps another range of the call (except a reduction's source and destination of
 * one participant that are the very same range: in place); CL_INVALID_OPERATION where two daemons
 * that must exchange bytes have no peer link. A daemon lost during the collective fails the events of
 * the participants that needed it. */
typedef cl_uint cl_fedcl_reduce_op;
#define CL_FEDCL_REDUCE_SUM 0x4F40
#define CL_FEDCL_REDUCE_MIN 0x4F41
#define CL_FEDCL_REDUCE_MAX 0x4F42
#define CL_FEDCL_REDUCE_PRODUCT 0x4F43

typedef cl_uint cl_fedcl_element_type;
#define CL_FEDCL_INT32 0x4F48  /* cl_int; sums and products wrap around */
#define CL_FEDCL_INT64 0x4F49  /* cl_long */
#define CL_FEDCL_FLOAT 0x4F4A
#define CL_FEDCL_DOUBLE 0x4F4B

/* CL_EVENT_COMMAND_TYPE of the collectives' events. */
#define CL_COMMAND_BROADCAST_BUFFER_FEDCL 0x4F50
#define CL_COMMAND_SCATTER_BUFFER_FEDCL 0x4F51
#define CL_COMMAND_GATHER_BUFFER_FEDCL 0x4F52
#define CL_COMMAND_ALL_GATHER_BUFFER_FEDCL 0x4F53
#define CL_COMMAND_REDUCE_BUFFER_FEDCL 0x4F54
#define CL_COMMAND_ALL_REDUCE_BUFFER_FEDCL 0x4F55
#define CL_COMMAND_ALL_TO_ALL_BUFFER_FEDCL 0x4F56

/* The root's buffers[root] at offsets[root] goes to every other participant's buffers[i] at offsets[i]. */
typedef cl_int(CL_API_CALL *clEnqueueBroadcastBuffer_fn)(
    cl_uint num_queues, const cl_command_queue *queues, cl_uint root, const cl_mem *buffers, const size_t *offsets,
    size_t size, cl_uint num_events_in_wait_list, const cl_event *event_wait_list, cl_event *events);
/* Block i of the root's src_buffer (from src_offset) goes to participant i's dst_buffers[i] at dst_offsets[i]. */
typedef cl_int(CL_API_CALL *clEnqueueScatterBuffer_fn)(
    cl_uint num_queues, const cl_command_queue *queues, cl_uint root, cl_mem src_buffer, size_t src_offset,
    const cl_mem *dst_buffers, const size_t *dst_offsets, size_t size_per_queue, cl_uint num_events_in_wait_list,
    const cl_event *event_wait_list, cl_event *events);
/* Participant i's src_buffers[i] at src_offsets[i] goes to block i of the root's dst_buffer (from dst_offset). */
typedef cl_int(CL_API_CALL *clEnqueueGatherBuffer_fn)(
    cl_uint num_queues, const cl_command_queue *queues, cl_uint root, const cl_mem *src_buffers,
    const size_t *src_offsets, cl_mem dst_buffer, size_t dst_offset, size_t size_per_queue,
    cl_uint num_events_in_wait_list, const cl_event *event_wait_list, cl_event *events);
/* Participant i's source goes to block i of every participant's destination. */
typedef cl_int(CL_API_CALL *clEnqueueAllGatherBuffer_fn)(
    cl_uint num_queues, const cl_command_queue *queues, const cl_mem *src_buffers, const size_t *src_offsets,
    const cl_mem *dst_buffers, const size_t *dst_offsets, size_t size_per_queue, cl_uint num_events_in_wait_list,
    const cl_event *event_wait_list, cl_event *events);
/* The root's dst_buffer at dst_offset gets op over the participants' sources, element by element. */
typedef cl_int(CL_API_CALL *clEnqueueReduceBuffer_fn)(
    cl_uint num_queues, const cl_command_queue *queues, cl_uint root, const cl_mem *src_buffers,
    const size_t *src_offsets, cl_mem dst_buffer, size_t dst_offset, size_t size, cl_fedcl_reduce_op op,
    cl_fedcl_element_type type, cl_uint num_events_in_wait_list, const cl_event *event_wait_list, cl_event *events);
/* Every participant's destination gets op over the participants' sources, element by element. */
typedef cl_int(CL_API_CALL *clEnqueueAllReduceBuffer_fn)(
    cl_uint num_queues, const cl_command_queue *queues, const cl_mem *src_buffers, const size_t *src_offsets,
    const cl_mem *dst_buffers, const size_t *dst_offsets, size_t size, cl_fedcl_reduce_op op,
    cl_fedcl_element_type type, cl_uint num_events_in_wait_list, const cl_event *event_wait_list, cl_event *events);
/* Block j of participant i's source goes to block i of participant j's destination. */
typedef cl_int(CL_API_CALL *clEnqueueAlltoAllBuffer_fn)(
    cl_uint num_queues, const cl_command_queue *queues, const cl_mem *src_buffers, const size_t *src_offsets,
    const cl_mem *dst_buffers, const size_t *dst_offsets, size_t size_per_pair, cl_uint num_events_in_wait_list,
    const cl_event *event_wait_list, cl_event *events);

/* Prototypes, as Khronos' extension headers give them: the ICD loader does not export extension
 * functions, so a program calls them through the pointer clGetExtensionFunctionAddressForPlatform
 * returns (define CL_NO_EXTENSION_PROTOTYPES to leave these out). */
#ifndef CL_NO_EXTENSION_PROTOTYPES
extern CL_API_ENTRY cl_int CL_API_CALL clEnqueueReadBufferToStdioFile(
    cl_command_queue queue, cl_mem buffer, cl_bool blocking_read, size_t offset, size_t size, FILE *file,
    cl_uint num_events_in_wait_list, const cl_event *event_wait_list, cl_event *event);
extern CL_API_ENTRY cl_int CL_API_CALL clEnqueueWriteBufferFromStdioFile(
    cl_command_queue queue, cl_mem buffer, cl_bool blocking_write, size_t offset, size_t size, FILE *file,
    cl_uint num_events_in_wait_list, const cl_event *event_wait_list, cl_event *event);
extern CL_API_ENTRY cl_int CL_API_CALL clEnqueueWriteBufferFromNodeFile(
    cl_command_queue queue, cl_mem buffer, cl_bool blocking_write, size_t offset, size_t size, const char *path,
    size_t file_offset, cl_uint num_events_in_wait_list, const cl_event *event_wait_list, cl_event *event);
extern CL_API_ENTRY cl_int CL_API_CALL clEnqueueReadBufferToNodeFile(
    cl_command_queue queue, cl_mem buffer, cl_bool blocking_read, size_t offset, size_t size, const char *path,
    size_t file_offset, cl_uint num_events_in_wait_list, const cl_event *event_wait_list, cl_event *event);
extern CL_API_ENTRY cl_int CL_API_CALL clEnqueueBroadcastBuffer(
    cl_uint num_queues, const cl_command_queue *queues, cl_uint root, const cl_mem *buffers, const size_t *offsets,
    size_t size, cl_uint num_events_in_wait_list, const cl_event *event_wait_list, cl_event *events);
extern CL_API_ENTRY cl_int CL_API_CALL clEnqueueScatterBuffer(
    cl_uint num_queues, const cl_command_queue *queues, cl_uint root, cl_mem src_buffer, size_t src_offset,
    const cl_mem *dst_buffers, const size_t *dst_offsets, size_t size_per_queue, cl_uint num_events_in_wait_list,
    const cl_event *event_wait_list, cl_event *events);
extern CL_API_ENTRY cl_int CL_API_CALL clEnqueueGatherBuffer(
    cl_uint num_queues, const cl_command_queue *queues, cl_uint root, const cl_mem *src_buffers,
    const size_t *src_offsets, cl_mem dst_buffer, size_t dst_offset, size_t size_per_queue,
    cl_uint num_events_in_wait_list, const cl_event *event_wait_list, cl_event *events);
extern CL_API_ENTRY cl_int CL_API_CALL clEnqueueAllGatherBuffer(
    cl_uint num_queues, const cl_command_queue *queues, const cl_mem *src_buffers, const size_t *src_offsets,
    const cl_mem *dst_buffers, const size_t *dst_offsets, size_t size_per_queue, cl_uint num_events_in_wait_list,
    const cl_event *event_wait_list, cl_event *events);
extern CL_API_ENTRY cl_int CL_API_CALL clEnqueueReduceBuffer(
    cl_uint num_queues, const cl_command_queue *queues, cl_uint root, const cl_mem *src_buffers,
    const size_t *src_offsets, cl_mem dst_buffer, size_t dst_offset, size_t size, cl_fedcl_reduce_op op,
    cl_fedcl_element_type type, cl_uint num_events_in_wait_list, const cl_event *event_wait_list, cl_event *events);
extern CL_API_ENTRY cl_int CL_API_CALL clEnqueueAllReduceBuffer(
    cl_uint num_queues, const cl_command_queue *queues, const cl_mem *src_buffers, const size_t *src_offsets,
    const cl_mem *dst_buffers, const size_t *dst_offsets, size_t size, cl_fedcl_reduce_op op,
    cl_fedcl_element_type type, cl_uint num_events_in_wait_list, const cl_event *event_wait_list, cl_event *events);
extern CL_API_ENTRY cl_int CL_API_CALL clEnqueueAlltoAllBuffer(
    cl_uint num_queues, const cl_command_queue *queues, const cl_mem *src_buffers, const size_t *src_offsets,
    const cl_mem *dst_buffers, const size_t *dst_offsets, size_t size_per_pair, cl_uint num_events_in_wait_list,
    const cl_event *event_wait_list, cl_event *events);
#endif

#ifdef __cplusplus
}
#endif

#endif /* CL_FEDCL_TRANSFER_H */
