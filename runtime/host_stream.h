// Bytes this process streams into a command of a daemon: a receive (ReceiveFromPeer with sender 0)
// takes its place in the queue when it is enqueued, and its bytes follow whenever this process has
// them (a file read, an MPI message, host memory that a user event guards). The daemon cuts the
// range into chunks (protocol/transfer_chunks.h); the pieces sent here follow the same cuts.
#pragma once

#include <string>

#include "command.h"

namespace fedcl {

// Sends command (begun) as the receive of size bytes of mem at offset; returns its transfer id in
// *transfer. Marks mem written on the queue's daemon.
cl_int send_host_receive(Command &command, cl_mem mem, size_t offset, size_t size, uint64_t *transfer);
// The other way: command (begun) becomes the daemon's send of the range under transfer, to this
// process (whose sink for transfer takes the chunks), or, destination_later, to where a TransferTo
// will say.
cl_int send_device_send(Command &command, cl_mem mem, size_t offset, size_t size, uint64_t transfer,
                        bool destination_later);

// A read of a buffer's range that the daemon streams to this process as the device gives it (its send
// to this process, chunk by chunk from mapped memory), each chunk landing straight in ptr. The
// command's event completes once every chunk is in. Arguments already checked.
cl_int read_streamed(cl_command_queue queue, cl_mem mem, bool blocking, size_t offset, size_t size, void *ptr,
                     cl_uint num_events, const cl_event *wait_list, cl_event *event);
// Reads of at least this many bytes from device are streamed (FEDCL_READ_STREAM_MIN overrides it).
size_t read_stream_min(cl_device_id device);

// size bytes at offset (from the range's start) for the receive of transfer on a range of range_size
// bytes: any run of whole chunks (or up to the range's end).
cl_int stream_to_receive(Connection *connection, uint64_t transfer, uint64_t range_size, uint64_t offset,
                         const uint8_t *bytes, uint64_t size);

// No (more) bytes will come: the receive fails with status and message.
void abort_receive(Connection *connection, uint64_t transfer, cl_int status, const std::string &message);

// A non-blocking write behind user events that have not completed: the bytes are read from ptr once
// they have (the clDataTransfer paper's pattern of a write behind an MPI receive's event), not at
// the call. Arguments already checked.
cl_int enqueue_write_when_ready(cl_command_queue queue, cl_mem mem, size_t offset, size_t size, const void *ptr,
                                cl_uint num_events, const cl_event *wait_list, cl_event *event);
// Whether the wait list holds a user event that has not completed yet.
bool waits_for_user_event(cl_uint num_events, const cl_event *wait_list);

}  // namespace fedcl
