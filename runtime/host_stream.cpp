#include "host_stream.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <memory>

#include "coherence.h"
#include "connection.h"
#include "runtime.h"
#include "transfer_chunks.h"

namespace fedcl {

cl_int send_host_receive(Command &command, cl_mem mem, size_t offset, size_t size, uint64_t *transfer) {
  *transfer = new_object_id();
  RequestMessage request;
  auto receive = request.root.initReceiveFromPeer();
  command.fill(receive.initCommand());
  set_peer_range(receive, mem->id, offset, size, *transfer);
  receive.setSender(0);
  cl_int err = command.send(request);
  if (err == CL_SUCCESS && command.queue()->context->parts.size() > 1)
    mem_written(mem, command.connection(), command.event(), MemSpan::written(offset, size));
  return err;
}

cl_int send_device_send(Command &command, cl_mem mem, size_t offset, size_t size, uint64_t transfer,
                        bool destination_later) {
  RequestMessage request;
  auto send = request.root.initSendToPeer();
  command.fill(send.initCommand());
  set_peer_range(send, mem->id, offset, size, transfer);
  send.initPeer();  // instance 0: this process
  send.setDestinationLater(destination_later);
  return command.send(request);
}

size_t read_stream_min(cl_device_id device) {
  static const size_t chosen = [] {
    const char *text = std::getenv("FEDCL_READ_STREAM_MIN");
    return text && *text ? size_t(std::strtoull(text, nullptr, 10)) : size_t(0);
  }();
  if (chosen) return chosen;
  // Measured for 1 MiB: on an H100 streamed 290-330 us against 510-570 us in one reply (NVIDIA's map
  // lands in its page-locked memory); on PoCL (2-core VM) 406-467 against 356-369 us.
  return device->type & CL_DEVICE_TYPE_GPU ? size_t(1) << 20 : size_t(4) << 20;
}

namespace {

void CL_CALLBACK drop_landing(cl_event, cl_int, void *transfer) {
  Runtime::get().remove_landing(reinterpret_cast<uintptr_t>(transfer));
}

}  // namespace

cl_int read_streamed(cl_command_queue queue, cl_mem mem, bool blocking, size_t offset, size_t size, void *ptr,
                     cl_uint num_events, const cl_event *wait_list, cl_event *event) {
  Command command(queue, CL_COMMAND_READ_BUFFER);
  cl_int err = command.begin_streamed(blocking, mem, MemSpan::read(offset, size), num_events, wait_list, event);
  if (err != CL_SUCCESS) return err;
  uint64_t transfer = new_object_id();
  Runtime::get().add_landing(transfer, static_cast<uint8_t *>(ptr), size);
  {
    // Every chunk precedes the completion on the connection: none lands after this runs.
    std::lock_guard<std::mutex> lock(command.event()->mutex);
    command.event()->callbacks.push_back({CL_COMPLETE, drop_landing, reinterpret_cast<void *>(uintptr_t(transfer))});
  }
  err = send_device_send(command, mem, offset, size, transfer, false);
  command.connection()->flush();  // the device starts now, not at the flush timer
  if (err != CL_SUCCESS || !blocking) return err;
  cl_int status = wait_complete(command.event());
  if (status >= 0) status = command.connection()->take_error(mem->id);
  if (status < 0 && status != CL_DEVICE_NOT_AVAILABLE && num_events) return CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST;
  return status < 0 ? status : CL_SUCCESS;
}

cl_int stream_to_receive(Connection *connection, uint64_t transfer, uint64_t range_size, uint64_t offset,
                         const uint8_t *bytes, uint64_t size) {
  uint64_t chunk = transfer_chunk_bytes(range_size);
  for (uint64_t at = 0; at < size;) {
    uint64_t piece = std::min(chunk - (offset + at) % chunk, size - at);
    RequestMessage request;
    auto data = request.root.initTransferData();
    data.setTransfer(transfer);
    data.setOffset(offset + at);
    cl_int err = connection->post(request, bytes + at, piece);
    if (err != CL_SUCCESS) return err;
    at += piece;
  }
  connection->flush();
  return CL_SUCCESS;
}

void abort_receive(Connection *connection, uint64_t transfer, cl_int status, const std::string &message) {
  RequestMessage request;
  auto abort = request.root.initTransferAbort();
  abort.setTransfer(transfer);
  abort.setStatus(status);
  abort.setMessage(message);
  connection->post(request);
  connection->flush();
}

bool waits_for_user_event(cl_uint num_events, const cl_event *wait_list) {
  for (cl_uint i = 0; i < num_events; i++) {
    std::lock_guard<std::mutex> lock(wait_list[i]->mutex);
    if (wait_list[i]->command_type == CL_COMMAND_USER && wait_list[i]->status > CL_COMPLETE) return true;
  }
  return false;
}

namespace {

// The bytes of a deferred write, sent once every user event it waits for has completed.
struct DeferredWrite {
  Connection *connection;
  uint64_t transfer = 0, size;
  const uint8_t *bytes;
  std::atomic<int> pending;
  std::atomic<bool> failed{false};

  static void CL_CALLBACK on_user_event(cl_event, cl_int status, void *user_data) {
    auto *self = static_cast<std::shared_ptr<DeferredWrite> *>(user_data);
    auto write = *self;
    delete self;
    if (status < 0) write->failed = true;
    if (--write->pending > 0) return;
    // A failed wait list fails the command on the daemon; the receive must not wait for bytes.
    if (write->failed) abort_receive(write->connection, write->transfer, CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST, "");
    else stream_to_receive(write->connection, write->transfer, write->size, 0, write->bytes, write->size);
  }
};

}  // namespace

cl_int enqueue_write_when_ready(cl_command_queue queue, cl_mem mem, size_t offset, size_t size, const void *ptr,
                                cl_uint num_events, const cl_event *wait_list, cl_event *event) {
  Command command(queue, CL_COMMAND_WRITE_BUFFER);
  cl_int err = command.begin(num_events, wait_list, event);
  if (err == CL_SUCCESS) err = mem_prepare(mem, command, MemSpan::written(offset, size));
  auto write = std::make_shared<DeferredWrite>();
  write->connection = queue->connection;
  write->size = size;
  write->bytes = static_cast<const uint8_t *>(ptr);
  if (err == CL_SUCCESS) err = send_host_receive(command, mem, offset, size, &write->transfer);
  if (err != CL_SUCCESS) return err;
  std::vector<cl_event> users;
  for (cl_uint i = 0; i < num_events; i++)
    if (wait_list[i]->command_type == CL_COMMAND_USER) users.push_back(wait_list[i]);
  write->pending = int(users.size());
  for (cl_event user : users) {
    std::unique_lock<std::mutex> lock(user->mutex);
    if (user->status <= CL_COMPLETE) {
      cl_int status = user->status;
      lock.unlock();
      DeferredWrite::on_user_event(user, status, new std::shared_ptr<DeferredWrite>(write));
      continue;
    }
    user->callbacks.push_back({CL_COMPLETE, DeferredWrite::on_user_event, new std::shared_ptr<DeferredWrite>(write)});
  }
  return CL_SUCCESS;
}

}  // namespace fedcl
