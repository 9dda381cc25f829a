// The runtime's side of the transfer port (transfer_port.h): commands whose other end is named
// later, made of the same wire requests as buffer migrations and file commands.
#include "transfer_port.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <thread>

#include "coherence.h"
#include "command.h"
#include "connection.h"
#include "event_reports.h"
#include "host_stream.h"
#include "runtime.h"
#include "transfer.h"
#include "wait_hook.h"

namespace fedcl {

namespace {

// What a send (writes false) or a receive checks and starts with, as clEnqueueReadBuffer and
// clEnqueueWriteBuffer do: a buffer of the queue's context, the range within it, the host-access
// flags, the wait list; then the command's event and the buffer ready on the queue's daemon.
cl_int begin_range_command(Command &command, cl_mem mem, size_t offset, size_t size, bool writes, cl_uint num_events,
                           const cl_event *wait_list, cl_event *event) {
  cl_command_queue queue = command.queue();
  cl_int err = check_queue_mem(queue, mem, MemKind::buffer);
  if (err != CL_SUCCESS) return err;
  if (size == 0 || offset > mem->size || size > mem->size - offset) return CL_INVALID_VALUE;
  cl_mem_flags forbidden = CL_MEM_HOST_NO_ACCESS | (writes ? CL_MEM_HOST_READ_ONLY : CL_MEM_HOST_WRITE_ONLY);
  if (mem->flags & forbidden) return CL_INVALID_OPERATION;
  err = check_wait_list(queue->context, num_events, wait_list);
  if (err == CL_SUCCESS) err = command.begin(num_events, wait_list, event, true);
  if (err == CL_SUCCESS) err = mem_prepare(mem, command, {offset, size, writes});
  return err;
}

capnp::Data::Reader address_tag(const PeerEndpoint &to) {
  return capnp::Data::Reader(reinterpret_cast<const uint8_t *>(to.address_tag.data()), to.address_tag.size());
}

class RuntimeTransferPort final : public TransferPort {
 public:
  bool endpoint(cl_command_queue queue, PeerEndpoint *out) override {
    if (!Runtime::get().peer_links_allowed() || !queue->connection->alive()) return false;
    RequestMessage message;
    auto ref = message.root.initPeerConnect();
    fill_peer_ref(ref, *queue->connection);
    out->instance = ref.getInstance();
    out->session = ref.getSession();
    out->address = ref.getAddress().cStr();
    out->address_tag.assign(reinterpret_cast<const char *>(ref.getAddressTag().begin()), ref.getAddressTag().size());
    return out->instance != 0;
  }

  bool can_reach(cl_command_queue queue, const PeerEndpoint &to) override {
    Connection *from = queue->connection;
    auto key = std::make_pair(from, to.instance);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto known = reachable_.find(key);
      if (known != reachable_.end()) return known->second;
    }
    RequestMessage request;
    auto ref = request.root.initPeerConnect();
    ref.setInstance(to.instance);
    ref.setAddress(to.address.c_str());
    ref.setSession(to.session);
    ref.setAddressTag(address_tag(to));
    auto reply = from->send_call(request);
    bool ok = from->wait(*reply) == CL_SUCCESS;
    if (!ok)
      std::fprintf(stderr, "fedcl: warning: daemon %s cannot reach daemon %s (%s): MPI messages between them go "
                   "through the hosts\n", from->endpoint().c_str(), to.address.c_str(), reply->message.c_str());
    std::lock_guard<std::mutex> lock(mutex_);
    reachable_[key] = ok;
    return ok;
  }

  cl_int enqueue_send(cl_command_queue queue, cl_mem mem, size_t offset, size_t size, cl_uint num_events,
                      const cl_event *wait_list, uint64_t *transfer, cl_event *device_event) override {
    Command command(queue, CL_COMMAND_READ_BUFFER);
    cl_int err = begin_range_command(command, mem, offset, size, false, num_events, wait_list, device_event);
    *transfer = new_object_id();
    return err == CL_SUCCESS ? send_device_send(command, mem, offset, size, *transfer, true) : err;
  }

  void send_to_peer(cl_command_queue queue, uint64_t transfer, const PeerEndpoint &to, uint64_t peer_transfer) override {
    RequestMessage request;
    auto named = request.root.initTransferTo();
    named.setTransfer(transfer);
    named.setPeerTransfer(peer_transfer);
    auto peer = named.initPeer();
    peer.setInstance(to.instance);
    peer.setAddress(to.address.c_str());
    peer.setSession(to.session);
    peer.setAddressTag(address_tag(to));
    queue->connection->post(request);
    queue->connection->flush();
  }

  void send_to_host(cl_command_queue queue, uint64_t transfer, ChunkSink sink) override {
    Runtime::get().add_sink(transfer, std::move(sink));
    RequestMessage request;
    auto named = request.root.initTransferTo();
    named.setTransfer(transfer);
    named.initPeer();  // instance 0: this process
    queue->connection->post(request);
    queue->connection->flush();
  }

  void end_send(uint64_t transfer) override { Runtime::get().remove_sink(transfer); }

  cl_int enqueue_receive(cl_command_queue queue, cl_mem mem, size_t offset, size_t size, cl_uint num_events,
                         const cl_event *wait_list, uint64_t *transfer, cl_event *device_event) override {
    Command command(queue, CL_COMMAND_WRITE_BUFFER);
    cl_int err = begin_range_command(command, mem, offset, size, true, num_events, wait_list, device_event);
    return err == CL_SUCCESS ? send_host_receive(command, mem, offset, size, transfer) : err;
  }

  void receive_from_peer(cl_command_queue queue, uint64_t transfer, uint64_t sender_instance) override {
    RequestMessage request;
    auto named = request.root.initTransferFrom();
    named.setTransfer(transfer);
    named.setSender(sender_instance);
    queue->connection->post(request);
    queue->connection->flush();
  }

  cl_int receive_bytes(cl_command_queue queue, uint64_t transfer, uint64_t range_size, uint64_t offset,
                       const uint8_t *bytes, uint64_t size) override {
    return stream_to_receive(queue->connection, transfer, range_size, offset, bytes, size);
  }

  void abort(cl_command_queue queue, uint64_t transfer, cl_int status, const std::string &why) override {
    abort_receive(queue->connection, transfer, status, why);
  }

  void set_wait_hook(bool (*hook)()) override { wait_hook.store(hook); }

  void when_complete(cl_event event, void(CL_CALLBACK *done)(cl_event, cl_int, void *), void *user_data) override {
    cl_int status;
    {
      std::lock_guard<std::mutex> lock(event->mutex);
      status = event->status;
      if (status > CL_COMPLETE) event->callbacks.push_back({CL_COMPLETE, done, user_data, true});
    }
    if (status > CL_COMPLETE) return ask_completion(event);
    done(event, status < 0 ? status : CL_COMPLETE, user_data);
  }

 private:
  std::mutex mutex_;
  std::map<std::pair<Connection *, uint64_t>, bool> reachable_;
};

}  // namespace

TransferPort &transfer_port() {
  static RuntimeTransferPort *port = new RuntimeTransferPort();  // the MPI library may use it at exit
  return *port;
}

}  // namespace fedcl
