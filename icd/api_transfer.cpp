// The transfer engine's entry points (include/CL/cl_fedcl_transfer.h), reached through
// clGetExtensionFunctionAddressForPlatform: checked here, carried out by runtime/file_transfer.
#include <CL/cl_fedcl_transfer.h>

#include "api.h"
#include "file_transfer.h"
#include "transfer.h"

using namespace fedcl;

namespace {

// What both file commands check, and their empty case: a command that only orders and completes, as
// an empty clEnqueueReadBuffer or clEnqueueWriteBuffer does. *done: nothing else to do.
cl_int check_file_command(cl_command_queue queue, cl_mem mem, bool blocking, size_t offset, size_t size,
                          const void *file, cl_mem_flags forbidden, cl_uint num_events, const cl_event *wait_list, cl_event *event,
                          cl_command_type type, bool *done) {
  *done = true;
  cl_int err = check_queue_mem(queue, mem, MemKind::buffer);
  if (err != CL_SUCCESS) return err;
  if (!file || offset > mem->size || size > mem->size - offset) return CL_INVALID_VALUE;
  if (mem->flags & forbidden) return CL_INVALID_OPERATION;
  err = check_wait_list(queue->context, num_events, wait_list);
  if (err != CL_SUCCESS) return err;
  if (size > 0) {
    *done = false;
    return CL_SUCCESS;
  }
  cl_event own = nullptr;
  cl_event *out = (blocking && !event) ? &own : event;
  err = enqueue_marker(queue, type, false, num_events, wait_list, out);
  if (err != CL_SUCCESS || !blocking) return err;
  err = api::clWaitForEvents(1, out);
  if (own) api::clReleaseEvent(own);
  return err;
}

}  // namespace

cl_int fedcl::api::clEnqueueReadBufferToStdioFile(cl_command_queue queue, cl_mem mem, cl_bool blocking,
                                                  size_t offset, size_t size, FILE *file, cl_uint num_events,
                                                  const cl_event *wait_list, cl_event *event) {
  bool done;
  cl_int err = check_file_command(queue, mem, blocking, offset, size, file, CL_MEM_HOST_WRITE_ONLY | CL_MEM_HOST_NO_ACCESS,
                                  num_events, wait_list, event, CL_COMMAND_READ_BUFFER, &done);
  if (done) return err;
  return enqueue_read_to_file(queue, mem, blocking, offset, size, file, num_events, wait_list, event);
}

cl_int fedcl::api::clEnqueueWriteBufferFromStdioFile(cl_command_queue queue, cl_mem mem, cl_bool blocking,
                                                     size_t offset, size_t size, FILE *file, cl_uint num_events,
                                                     const cl_event *wait_list, cl_event *event) {
  bool done;
  cl_int err = check_file_command(queue, mem, blocking, offset, size, file, CL_MEM_HOST_READ_ONLY | CL_MEM_HOST_NO_ACCESS,
                                  num_events, wait_list, event, CL_COMMAND_WRITE_BUFFER, &done);
  if (done) return err;
  return enqueue_write_from_file(queue, mem, blocking, offset, size, file, num_events, wait_list, event);
}

cl_int fedcl::api::clEnqueueWriteBufferFromNodeFile(cl_command_queue queue, cl_mem mem, cl_bool blocking, size_t offset,
                                                    size_t size, const char *path, size_t file_offset,
                                                    cl_uint num_events, const cl_event *wait_list, cl_event *event) {
  bool done;
  cl_int err = check_file_command(queue, mem, blocking, offset, size, path, CL_MEM_HOST_READ_ONLY | CL_MEM_HOST_NO_ACCESS,
                                  num_events, wait_list, event, CL_COMMAND_WRITE_BUFFER, &done);
  if (done) return err;
  return enqueue_node_file(queue, mem, blocking, offset, size, path, file_offset, false, num_events, wait_list, event);
}

cl_int fedcl::api::clEnqueueReadBufferToNodeFile(cl_command_queue queue, cl_mem mem, cl_bool blocking, size_t offset,
                                                 size_t size, const char *path, size_t file_offset, cl_uint num_events,
                                                 const cl_event *wait_list, cl_event *event) {
  bool done;
  cl_int err = check_file_command(queue, mem, blocking, offset, size, path, CL_MEM_HOST_WRITE_ONLY | CL_MEM_HOST_NO_ACCESS,
                                  num_events, wait_list, event, CL_COMMAND_READ_BUFFER, &done);
  if (done) return err;
  return enqueue_node_file(queue, mem, blocking, offset, size, path, file_offset, true, num_events, wait_list, event);
}
