// The transfer engine's file commands (include/CL/cl_fedcl_transfer.h): a file the application
// opened streams into a buffer, or a buffer into it, as a command of its queue.
//
// The command on the daemon is a receive (ReceiveFromPeer with sender 0): it maps the buffer's
// chunks when the command may run and gives each back as its bytes land, so the queue orders it like
// any other command. This process reads the file on a thread of its own, one chunk ahead of the
// chunk it sends, and streams the chunks on the queue's connection (TransferData).
#pragma once

#include <cstdio>

#include "handles.h"

namespace fedcl {

// Arguments already checked (a buffer of the queue's context, the range within it, a file).
// The other way: the daemon sends the range (SendToPeer to this process, peer instance 0) and a
// thread of this process writes the chunks into the file in order as they arrive; the command's
// event completes once they are all in the file.
cl_int enqueue_read_to_file(cl_command_queue queue, cl_mem mem, bool blocking, size_t offset, size_t size,
                            FILE *file, cl_uint num_events, const cl_event *wait_list, cl_event *event);
cl_int enqueue_write_from_file(cl_command_queue queue, cl_mem mem, bool blocking, size_t offset, size_t size,
                               FILE *file, cl_uint num_events, const cl_event *wait_list, cl_event *event);

// A file of the queue's daemon's node (under its --file-root): the daemon itself copies between the
// file at file_offset and the buffer (to_file: buffer -> file); no byte crosses to this process.
cl_int enqueue_node_file(cl_command_queue queue, cl_mem mem, bool blocking, size_t offset, size_t size,
                         const char *path, uint64_t file_offset, bool to_file, cl_uint num_events,
                         const cl_event *wait_list, cl_event *event);

}  // namespace fedcl
