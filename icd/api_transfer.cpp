// The transfer engine's entry points (include/CL/cl_fedcl_transfer.h), reached through
// clGetExtensionFunctionAddressForPlatform: checked here, carried out by runtime/file_transfer.
#include <CL/cl_fedcl_transfer.h>

#include "api.h"
#include "file_transfer.h"
#include "transfer.h"

using namespace fedcl;

namespace {

// Which way a file command moves bytes: a buffer read into a file follows clEnqueueReadBuffer's rules,
// a file written into a buffer clEnqueueWriteBuffer's.
enum class Direction { to_file, from_file };

// What both kinds of file command check, and their empty case: a command that only orders and
// completes, as an empty clEnqueueReadBuffer or clEnqueueWriteBuffer does. *done: nothing else to do.
cl_int check_file_command(Direction direction, cl_command_queue queue, cl_mem mem, bool blocking, size_t offset,
                          size_t size, const void *file, cl_uint num_events, const cl_event *wait_list,
                          cl_event *event, bool *done) {
  bool to_file = direction == Direction::to_file;
  *done = true;
  cl_int err = check_queue_mem(queue, mem, MemKind::buffer);
  if (err != CL_SUCCESS) return err;
  if (!file || offset > mem->size || size > mem->size - offset) return CL_INVALID_VALUE;
  if (mem->flags & ((to_file ? CL_MEM_HOST_WRITE_ONLY : CL_MEM_HOST_READ_ONLY) | CL_MEM_HOST_NO_ACCESS))
    return CL_INVALID_OPERATION;
  err = check_wait_list(queue->context, num_events, wait_list);
  if (err != CL_SUCCESS) return err;
  if (size > 0) {
    *done = false;
    return CL_SUCCESS;
  }
  cl_event own = nullptr;
  cl_event *out = (blocking && !event) ? &own : event;
  err = enqueue_marker(queue, to_file ? CL_COMMAND_READ_BUFFER : CL_COMMAND_WRITE_BUFFER, false, num_events, wait_list,
                       out);
  if (err != CL_SUCCESS || !blocking) return err;
  err = api::clWaitForEvents(1, out);
  if (own) api::clReleaseEvent(own);
  return err;
}

// A file the application opened: this process streams it.
cl_int stdio_file_command(Direction direction, cl_command_queue queue, cl_mem mem, bool blocking, size_t offset,
                          size_t size, FILE *file, cl_uint num_events, const cl_event *wait_list, cl_event *event) {
  bool done;
  cl_int err = check_file_command(direction, queue, mem, blocking, offset, size, file, num_events, wait_list, event,
                                  &done);
  if (done) return err;
  auto enqueue = direction == Direction::to_file ? enqueue_read_to_file : enqueue_write_from_file;
  return enqueue(queue, mem, blocking, offset, size, file, num_events, wait_list, event);
}

// A file of the queue's daemon's node: the daemon copies it.
cl_int node_file_command(Direction direction, cl_command_queue queue, cl_mem mem, bool blocking, size_t offset,
                         size_t size, const char *path, size_t file_offset, cl_uint num_events,
                         const cl_event *wait_list, cl_event *event) {
  bool done;
  cl_int err = check_file_command(direction, queue, mem, blocking, offset, size, path, num_events, wait_list, event,
                                  &done);
  if (done) return err;
  return enqueue_node_file(queue, mem, blocking, offset, size, path, file_offset, direction == Direction::to_file,
                           num_events, wait_list, event);
}

}  // namespace

cl_int fedcl::api::clEnqueueReadBufferToStdioFile(cl_command_queue queue, cl_mem mem, cl_bool blocking,
                                                  size_t offset, size_t size, FILE *file, cl_uint num_events,
                                                  const cl_event *wait_list, cl_event *event) {
  return stdio_file_command(Direction::to_file, queue, mem, blocking, offset, size, file, num_events, wait_list, event);
}

cl_int fedcl::api::clEnqueueWriteBufferFromStdioFile(cl_command_queue queue, cl_mem mem, cl_bool blocking,
                                                     size_t offset, size_t size, FILE *file, cl_uint num_events,
                                                     const cl_event *wait_list, cl_event *event) {
  return stdio_file_command(Direction::from_file, queue, mem, blocking, offset, size, file, num_events, wait_list,
                            event);
}

cl_int fedcl::api::clEnqueueWriteBufferFromNodeFile(cl_command_queue queue, cl_mem mem, cl_bool blocking, size_t offset,
                                                    size_t size, const char *path, size_t file_offset,
                                                    cl_uint num_events, const cl_event *wait_list, cl_event *event) {
  return node_file_command(Direction::from_file, queue, mem, blocking, offset, size, path, file_offset, num_events,
                           wait_list, event);
}

cl_int fedcl::api::clEnqueueReadBufferToNodeFile(cl_command_queue queue, cl_mem mem, cl_bool blocking, size_t offset,
                                                 size_t size, const char *path, size_t file_offset, cl_uint num_events,
                                                 const cl_event *wait_list, cl_event *event) {
  return node_file_command(Direction::to_file, queue, mem, blocking, offset, size, path, file_offset, num_events,
                           wait_list, event);
}
