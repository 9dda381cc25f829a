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
 * the buffer into the file, creating it if need be (ReadBufferToNodeFile); no byte crosses to this
 * process. path is relative to the directory the daemon serves (fedcld --file-root DIR), or absolute
 * inside it; ".." and symbolic links leading outside are refused, and a daemon without --file-root
 * serves no file. A refused path, a file shorter than asked or a failed write fails the command
 * (CL_INVALID_VALUE, or CL_OUT_OF_RESOURCES for a write error) with a message to the context's
 * notify callback. Command types: CL_COMMAND_WRITE_BUFFER and CL_COMMAND_READ_BUFFER. */
typedef cl_int(CL_API_CALL *clEnqueueWriteBufferFromNodeFile_fn)(
    cl_command_queue queue, cl_mem buffer, cl_bool blocking_write, size_t offset, size_t size, const char *path,
    size_t file_offset, cl_uint num_events_in_wait_list, const cl_event *event_wait_list, cl_event *event);
typedef cl_int(CL_API_CALL *clEnqueueReadBufferToNodeFile_fn)(
    cl_command_queue queue, cl_mem buffer, cl_bool blocking_read, size_t offset, size_t size, const char *path,
    size_t file_offset, cl_uint num_events_in_wait_list, const cl_event *event_wait_list, cl_event *event);

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
#endif

#ifdef __cplusplus
}
#endif

#endif /* CL_FEDCL_TRANSFER_H */
