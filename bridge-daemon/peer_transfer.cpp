#include "peer_transfer.h"

#include <capnp/message.h>

#include <algorithm>
#include <cstring>

#include "log.h"
#include "server.h"

namespace fedcld {

namespace {

constexpr uint64_t kMiB = 1 << 20;

// What a transfer moves: a buffer's byte range, or a whole image as one piece.
struct MemShape {
  bool image = false;
  size_t region[3] = {1, 1, 1};
  uint64_t bytes = 0;
};

MemShape mem_shape(cl_mem mem) {
  MemShape shape;
  cl_mem_object_type type = CL_MEM_OBJECT_BUFFER;
  check(clGetMemObjectInfo(mem, CL_MEM_TYPE, sizeof type, &type, nullptr), "clGetMemObjectInfo(CL_MEM_TYPE)");
  if (type == CL_MEM_OBJECT_BUFFER) {
    size_t size = 0;
    check(clGetMemObjectInfo(mem, CL_MEM_SIZE, sizeof size, &size, nullptr), "clGetMemObjectInfo(CL_MEM_SIZE)");
    shape.bytes = size;
    return shape;
  }
  shape.image = true;
  auto info = [&](cl_image_info param) {
    size_t value = 0;
    check(clGetImageInfo(mem, param, sizeof value, &value, nullptr), "clGetImageInfo");
    return std::max<size_t>(value, 1);
  };
  shape.region[0] = info(CL_IMAGE_WIDTH);
  if (type == CL_MEM_OBJECT_IMAGE1D_ARRAY) shape.region[1] = info(CL_IMAGE_ARRAY_SIZE);
  if (type == CL_MEM_OBJECT_IMAGE2D || type == CL_MEM_OBJECT_IMAGE2D_ARRAY || type == CL_MEM_OBJECT_IMAGE3D)
    shape.region[1] = info(CL_IMAGE_HEIGHT);
  if (type == CL_MEM_OBJECT_IMAGE2D_ARRAY) shape.region[2] = info(CL_IMAGE_ARRAY_SIZE);
  if (type == CL_MEM_OBJECT_IMAGE3D) shape.region[2] = info(CL_IMAGE_DEPTH);
  shape.bytes = info(CL_IMAGE_ELEMENT_SIZE) * shape.region[0] * shape.region[1] * shape.region[2];
  return shape;
}

// The object's shape, once the range a transfer names is checked against it (an image moves whole).
MemShape checked_shape(cl_mem mem, uint64_t offset, uint64_t size) {
  MemShape shape = mem_shape(mem);
  if (shape.image ? (offset != 0 || size != shape.bytes) : (offset > shape.bytes || size > shape.bytes - offset))
    fail(CL_INVALID_VALUE, "transfer range " + std::to_string(offset) + "+" + std::to_string(size) +
                               " does not fit the memory object (" + std::to_string(shape.bytes) + " bytes)");
  return shape;
}

uint64_t chunk_bytes(const MemShape &shape, uint64_t size) {
  if (shape.image) return size;
  return std::min<uint64_t>(size, std::clamp<uint64_t>(size / 16, kMiB, 4 * kMiB));
}

cl_int enqueue_piece(cl_command_queue queue, cl_mem mem, const MemShape &shape, bool write, uint64_t offset,
                     uint64_t size, void *host, const std::vector<cl_event> &waits, cl_event *event) {
  const cl_event *wait = waits.empty() ? nullptr : waits.data();
  cl_uint count = static_cast<cl_uint>(waits.size());
  if (shape.image) {
    const size_t origin[3] = {0, 0, 0};
    return write ? clEnqueueWriteImage(queue, mem, CL_FALSE, origin, shape.region, 0, 0, host, count, wait, event)
                 : clEnqueueReadImage(queue, mem, CL_FALSE, origin, shape.region, 0, 0, host, count, wait, event);
  }
  return write ? clEnqueueWriteBuffer(queue, mem, CL_FALSE, offset, size, host, count, wait, event)
               : clEnqueueReadBuffer(queue, mem, CL_FALSE, offset, size, host, count, wait, event);
}

// The event the client holds for a command fedcld carries out itself (a transfer): a user event of
// the queue's context under the client's id, set when the work ends.
class OwnEvent {
 public:
  explicit OwnEvent(Call &call) : id_(call.event), context_(call.context) {
    if (id_ == 0) return;
    cl_int err = CL_SUCCESS;
    event_ = clCreateUserEvent(context_, &err);
    check(err, "clCreateUserEvent");
    clRetainEvent(event_);  // one reference for the table, one for this
    call.session.objects().add(id_, ObjectKind::event, event_, context_);
  }
  ~OwnEvent() {
    if (!event_) return;
    // Work that ended without an outcome (refused after the event existed, or its session closed)
    // must not leave commands waiting for the event forever.
    if (!done_ && !settled()) {
      clSetUserEventStatus(event_, CL_OUT_OF_RESOURCES);
      sweep_failed_watches();
    }
    clReleaseEvent(event_);
  }
  OwnEvent(const OwnEvent &) = delete;

  // Whether the client already decided the outcome (it relays a failure of the other side).
  bool settled() const {
    cl_int status = CL_QUEUED;
    return event_ && clGetEventInfo(event_, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr) ==
                         CL_SUCCESS && status <= CL_COMPLETE;
  }

  void finish(Session *session, cl_int status, const std::string &message, uint64_t object) {
    if (done_) return;
    done_ = true;
    if (event_ && !settled()) {
      clSetUserEventStatus(event_, status);
      if (status < 0) sweep_failed_watches();
    }
    if (!session || session->closed()) return;
    if (status == CL_COMPLETE) {
      if (id_) session->notify_completion(id_, CL_COMPLETE, nullptr);
    } else {
      session->notify_error(object, id_, status, message, context_);
    }
  }
  bool done() const { return done_; }

 private:
  uint64_t id_;
  cl_context context_;
  cl_event event_ = nullptr;
  bool done_ = false;
};

// What a transfer keeps of the command that started it, beyond the request.
struct TransferBase {
  std::weak_ptr<Session> session;
  uint64_t queue_id;
  cl_command_queue queue;
  cl_mem mem;
  uint64_t mem_id;
  uint64_t offset, size;
  MemShape shape;
  std::vector<cl_event> waits;
  OwnEvent event;  // last: everything that may refuse the request comes before the client's event exists

  TransferBase(Call &call, Resolved &resolved, uint64_t mem_id, uint64_t offset, uint64_t size)
      : session(call.session.weak_from_this()), queue_id(call.object), queue(resolved.queue),
        mem(call.session.objects().handle<cl_mem>(mem_id, ObjectKind::mem)), mem_id(mem_id), offset(offset),
        size(size), shape(checked_shape(mem, offset, size)), waits(resolved.wait), event(call) {
    clRetainCommandQueue(queue);
    clRetainMemObject(mem);
    for (cl_event wait : waits) clRetainEvent(wait);
  }
  ~TransferBase() {
    for (cl_event wait : waits) clReleaseEvent(wait);
    clReleaseMemObject(mem);
    clReleaseCommandQueue(queue);
  }

  // Enqueues one piece and calls done(status) on the loop when it completed.
  cl_int piece(Session &s, bool write, uint64_t at, uint64_t bytes, void *host, CompletionHandler done) {
    cl_event piece_event = nullptr;
    cl_int err = enqueue_piece(queue, mem, shape, write, offset + at, bytes, host, waits, &piece_event);
    if (err != CL_SUCCESS) return err;
    try {
      watch_event(s, s.objects().contains(queue_id) ? queue_id : 0, piece_event, std::move(done));
    } catch (const RequestError &error) {
      clReleaseEvent(piece_event);
      return error.status;
    }
    clReleaseEvent(piece_event);
    clFlush(queue);
    return CL_SUCCESS;
  }
};

// Tells the receiving session that a transfer will bring no (more) bytes.
void write_abort(Session &link, uint64_t token, uint64_t transfer, cl_int status, const std::string &message) {
  capnp::MallocMessageBuilder builder;
  auto abort = builder.initRoot<wire::PeerMessage>().initAbort();
  abort.setSession(token);
  abort.setTransfer(transfer);
  abort.setStatus(status);
  abort.setMessage(message);
  link.send_peer(builder);
}

void send_abort(Server &server, const wire::PeerRef::Reader &peer, uint64_t transfer, cl_int status,
                const std::string &message) {
  uint64_t token = peer.getSession();
  server.peers().with_link(peer.getInstance(), peer.getAddress(), [token, transfer, status, message](Session *link, const std::string &) {
    if (link) write_abort(*link, token, transfer, status, message);
    // else the receiver learns of it from the client, or from the lost link
  });
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Sending and receiving
//
// Both sides enqueue every chunk's device command when the request arrives, not as chunks come
// and go: a backend may order commands that use the same buffer by their enqueue order across
// queues (PoCL does), so a chunk enqueued after a command that waits for the transfer would wait
// for that command, which waits for the chunk. Both sides cut the object into the same chunks
// (chunk_bytes), so that a chunk's bytes land straight in the memory its write was given.

namespace {

struct PeerSend : TransferBase, std::enable_shared_from_this<PeerSend> {
  Server &server;
  uint64_t token, transfer, instance;
  std::string address;
  std::weak_ptr<Session> link;
  bool link_up = false;
  uint64_t chunk;
  size_t count, written = 0;
  std::vector<std::shared_ptr<uint8_t[]>> staging;  // per chunk, until it is on the wire
  std::vector<size_t> read_waiting;                 // chunks read before the link was up

  PeerSend(Call &call, Resolved &resolved, wire::Request::SendToPeer::Reader request)
      : TransferBase(call, resolved, request.getMemObject(), request.getOffset(), request.getSize()),
        server(call.session.server()), token(request.getPeer().getSession()), transfer(request.getTransfer()),
        instance(request.getPeer().getInstance()), address(request.getPeer().getAddress()) {
    chunk = chunk_bytes(shape, size);
    count = size ? (size + chunk - 1) / chunk : 0;
  }

  uint64_t chunk_size(size_t k) const { return std::min(chunk, size - k * chunk); }

  // Enqueues the read of every chunk; throws RequestError if that cannot be done.
  void start(Session &s) {
    staging.resize(count);
    for (size_t k = 0; k < count; k++) {
      staging[k].reset(new (std::nothrow) uint8_t[chunk_size(k)]);
      if (!staging[k]) fail(CL_OUT_OF_HOST_MEMORY, "fedcld cannot stage " + std::to_string(size) + " bytes to send");
    }
    auto self = shared_from_this();
    for (size_t k = 0; k < count; k++) {
      cl_int err = piece(s, false, k * chunk, chunk_size(k), staging[k].get(), [self, k](Session &, cl_int status, const uint64_t *) {
        self->read_done(k, status);
      });
      if (err != CL_SUCCESS) {
        if (k == 0) fail(err, "reading the data to send failed with " + std::to_string(err));
        return abort(err, "reading the data to send failed with " + std::to_string(err), true);
      }
    }
    server.peers().with_link(instance, address, [self](Session *up, const std::string &error) { self->connected(up, error); });
  }

  void connected(Session *up, const std::string &error) {
    if (!up) return abort(CL_DEVICE_NOT_AVAILABLE, error, false);
    link = up->weak_from_this();
    link_up = true;
    if (count == 0) return finish_sent();
    std::vector<size_t> ready;
    ready.swap(read_waiting);
    for (size_t k : ready) send_chunk(k);
  }

  void read_done(size_t k, cl_int status) {
    if (event.done()) return;
    if (status < 0) return abort(status, "reading the data to send failed on the device (" + std::to_string(status) + ")", true);
    if (!link_up) return read_waiting.push_back(k);
    send_chunk(k);
  }

  void send_chunk(size_t k) {
    auto peer_link = link.lock();
    if (!peer_link || peer_link->closed()) return abort(CL_DEVICE_NOT_AVAILABLE, "the peer link closed", false);
    capnp::MallocMessageBuilder builder;
    auto data = builder.initRoot<wire::PeerMessage>().initData();
    data.setSession(token);
    data.setTransfer(transfer);
    data.setOffset(k * chunk);
    auto self = shared_from_this();
    peer_link->send_peer(builder, std::move(staging[k]), chunk_size(k), [self](int status) {
      if (status < 0) return self->abort(CL_DEVICE_NOT_AVAILABLE, std::string("sending to the peer failed: ") + uv_strerror(status), false);
      if (++self->written == self->count) self->finish_sent();
    });
  }

  void finish_sent() {
    FEDCLD_LOG(debug, "transfer %llu: %llu bytes sent", (unsigned long long)transfer, (unsigned long long)size);
    event.finish(session.lock().get(), CL_COMPLETE, "", mem_id);
  }

  // The transfer fails after it started: the client learns it from the send's event, the receiving
  // daemon from an abort (or from the lost link).
  void abort(cl_int status, const std::string &why, bool tell_peer) {
    if (event.done()) return;
    std::string message = "sending memory object " + std::to_string(mem_id) + " to peer daemon " + address + ": " + why;
    FEDCLD_LOG(warn, "%s", message.c_str());
    auto peer_link = link.lock();
    if (tell_peer && peer_link && !peer_link->closed()) write_abort(*peer_link, token, transfer, status, message);
    event.finish(session.lock().get(), status < 0 ? status : CL_OUT_OF_RESOURCES, message, mem_id);
  }
};

}  // namespace

void exec_send_to_peer(Call &call, wire::Request::SendToPeer::Reader request) {
  try {
    Resolved resolved = resolve(call, request.getCommand());
    auto send = std::make_shared<PeerSend>(call, resolved, request);
    send->start(call.session);
  } catch (const RequestError &error) {
    // The receiving side must not wait for bytes that will never come.
    send_abort(call.session.server(), request.getPeer(), request.getTransfer(),
               error.status < 0 ? error.status : CL_INVALID_OPERATION, "the sending daemon refused the transfer: " + error.message);
    throw;
  }
}

struct PeerReceive : TransferBase, std::enable_shared_from_this<PeerReceive> {
  struct Slot {
    std::shared_ptr<uint8_t[]> bytes;  // the chunk, and room for the frame's padding
    cl_event gate = nullptr;           // set once the bytes are there: the chunk's write may run
    bool claimed = false;              // bytes are arriving (or have)
  };
  uint64_t transfer;
  uint64_t chunk;
  std::vector<Slot> slots;
  size_t landed = 0;

  PeerReceive(Call &call, Resolved &resolved, wire::Request::ReceiveFromPeer::Reader request)
      : TransferBase(call, resolved, request.getMemObject(), request.getOffset(), request.getSize()),
        transfer(request.getTransfer()) {
    chunk = chunk_bytes(shape, size);
  }
  ~PeerReceive() { release_gates(CL_DEVICE_NOT_AVAILABLE); }

  uint64_t chunk_size(size_t k) const { return std::min(chunk, size - k * chunk); }

  // Sets aside each chunk's memory and enqueues its write behind its gate; throws RequestError if
  // that cannot be done.
  void start(Session &s, cl_context context) {
    size_t count = size ? (size + chunk - 1) / chunk : 0;
    slots.resize(count);
    for (size_t k = 0; k < count; k++) {
      slots[k].bytes.reset(new (std::nothrow) uint8_t[chunk_size(k) + 8]);
      if (!slots[k].bytes) fail(CL_OUT_OF_HOST_MEMORY, "fedcld cannot set aside " + std::to_string(size) + " bytes to receive");
      cl_int err = CL_SUCCESS;
      slots[k].gate = clCreateUserEvent(context, &err);
      check(err, "clCreateUserEvent");
    }
    auto self = shared_from_this();
    std::vector<cl_event> base = waits;
    for (size_t k = 0; k < count; k++) {
      waits = base;
      waits.push_back(slots[k].gate);
      uint64_t bytes = chunk_size(k);
      cl_int err = piece(s, true, k * chunk, bytes, slots[k].bytes.get(), [self](Session &, cl_int status, const uint64_t *) {
        if (status < 0) return self->fail_later(status, "writing the received data failed on the device (" + std::to_string(status) + ")");
        if (++self->landed == self->slots.size()) self->complete();
      });
      if (err != CL_SUCCESS) {
        waits = base;
        check(err, "enqueueing the write of received data");
      }
    }
    waits = base;
    if (count == 0) complete();
  }

  // Where the bytes of a data frame for offset go, if they fit a chunk not yet claimed.
  std::shared_ptr<uint8_t[]> destination(uint64_t offset, uint64_t bytes) {
    Slot *slot = slot_for(offset, bytes);
    if (!slot || slot->claimed || event.done()) return nullptr;
    slot->claimed = true;
    return slot->bytes;
  }

  void accept(PeerChunk chunk_in) {
    if (event.done()) return;
    if (event.settled()) return fail_later(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST, "the sending side failed");
    Slot *slot = slot_for(chunk_in.offset, chunk_in.size);
    if (!slot) return fail_later(CL_INVALID_VALUE, "the peer sent bytes that fit no chunk of the transfer");
    if (chunk_in.bytes != slot->bytes) {
      if (slot->claimed) return fail_later(CL_INVALID_VALUE, "the peer sent a chunk twice");
      std::memcpy(slot->bytes.get(), chunk_in.bytes.get(), chunk_in.size);
    }
    slot->claimed = true;
    clSetUserEventStatus(slot->gate, CL_COMPLETE);
  }

  void complete() {
    FEDCLD_LOG(debug, "transfer %llu: %llu bytes received", (unsigned long long)transfer, (unsigned long long)size);
    auto s = session.lock();
    event.finish(s.get(), CL_COMPLETE, "", mem_id);
    if (s) s->inbox().remove_receive(transfer);
  }

  // A failed receive stays in the inbox, so that late bytes of its transfer are dropped.
  void fail_later(cl_int status, const std::string &why) {
    if (event.done()) return;
    event.finish(session.lock().get(), status < 0 ? status : CL_OUT_OF_RESOURCES,
                 "receiving memory object " + std::to_string(mem_id) + " from a peer daemon: " + why, mem_id);
    release_gates(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST);
  }

 private:
  Slot *slot_for(uint64_t offset, uint64_t bytes) {
    if (chunk == 0 || offset % chunk || offset / chunk >= slots.size()) return nullptr;
    size_t k = offset / chunk;
    return bytes == chunk_size(k) ? &slots[k] : nullptr;
  }

  // Writes still behind their gates fail, so that the backend lets go of them.
  void release_gates(cl_int status) {
    for (Slot &slot : slots) {
      if (!slot.gate) continue;
      cl_int now = CL_QUEUED;
      clGetEventInfo(slot.gate, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof now, &now, nullptr);
      if (now > CL_COMPLETE) clSetUserEventStatus(slot.gate, status);
      clReleaseEvent(slot.gate);
      slot.gate = nullptr;
    }
    sweep_failed_watches();
  }
};

void exec_receive_from_peer(Call &call, wire::Request::ReceiveFromPeer::Reader request) {
  Resolved resolved = resolve(call, request.getCommand());
  auto receive = std::make_shared<PeerReceive>(call, resolved, request);
  receive->start(call.session, call.context);
  PeerInbox &inbox = call.session.inbox();
  PeerInbox::Early early = inbox.take_early(request.getTransfer(), request.getSender());
  inbox.add_receive(request.getTransfer(), request.getSender(), receive);
  if (early.status != CL_SUCCESS) return receive->fail_later(early.status, early.message);
  for (PeerChunk &chunk : early.chunks) receive->accept(std::move(chunk));
}

std::shared_ptr<uint8_t[]> peer_data_destination(Server &server, Session &link, wire::PeerData::Reader data,
                                                 uint64_t bytes) {
  auto session = server.session_by_token(data.getSession());
  if (!session || session->closed()) return nullptr;
  auto receive = session->inbox().receive(data.getTransfer(), link.peer_instance);
  return receive ? receive->destination(data.getOffset(), bytes) : nullptr;
}

void peer_deliver_data(Server &server, Session &link, wire::PeerData::Reader data, Frame &frame) {
  auto session = server.session_by_token(data.getSession());
  if (!session || session->closed()) return;  // its client has gone: nothing waits for the bytes
  PeerChunk chunk{data.getOffset(), frame.header.payload_bytes, std::move(frame.payload)};
  if (auto receive = session->inbox().receive(data.getTransfer(), link.peer_instance)) return receive->accept(std::move(chunk));
  if (!session->inbox().hold(data.getTransfer(), link.peer_instance, std::move(chunk)))
    link.close("the peer sent more data that no receive expects than fedcld holds");
}

void peer_deliver_abort(Server &server, Session &link, wire::PeerAbort::Reader abort) {
  auto session = server.session_by_token(abort.getSession());
  if (!session || session->closed()) return;
  std::string message = std::string("the sending daemon ") + link.peer() + " failed: " + abort.getMessage().cStr();
  cl_int status = abort.getStatus() < 0 ? abort.getStatus() : CL_OUT_OF_RESOURCES;
  if (auto receive = session->inbox().receive(abort.getTransfer(), link.peer_instance)) return receive->fail_later(status, message);
  session->inbox().hold_failure(abort.getTransfer(), status, message);
}

// ---------------------------------------------------------------------------------------------
// Event signals

namespace {

// Sets a stand-in user event, unless it has its status already (the client relays failures too).
void settle_stand_in(cl_event event, cl_int status) {
  cl_int now = CL_QUEUED;
  if (clGetEventInfo(event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof now, &now, nullptr) == CL_SUCCESS && now <= CL_COMPLETE)
    return;
  clSetUserEventStatus(event, status);
  if (status < 0) sweep_failed_watches();
}

void send_signal(Server &server, uint64_t instance, const std::string &address, uint64_t token, uint64_t event_id,
                 cl_int status) {
  server.peers().with_link(instance, address, [token, event_id, status](Session *link, const std::string &error) {
    if (!link) {
      FEDCLD_LOG(warn, "event %llu: cannot signal the peer: %s", (unsigned long long)event_id, error.c_str());
      return;
    }
    FEDCLD_LOG(debug, "event %llu: signalling %d to %s", (unsigned long long)event_id, status, link->peer().c_str());
    capnp::MallocMessageBuilder builder;
    auto signal = builder.initRoot<wire::PeerMessage>().initSignal();
    signal.setSession(token);
    signal.setEvent(event_id);
    signal.setStatus(status);
    link->send_peer(builder);
  });
}

}  // namespace

void exec_signal_peer(Call &call, wire::Request::SignalPeer::Reader request) {
  Server &server = call.session.server();
  uint64_t event_id = request.getEvent(), instance = request.getPeer().getInstance(), token = request.getPeer().getSession();
  std::string address = request.getPeer().getAddress();
  call.object = event_id;
  ObjectTable &objects = call.session.objects();
  if (!objects.contains(event_id)) {
    send_signal(server, instance, address, token, event_id, CL_INVALID_EVENT);
    fail(CL_INVALID_EVENT, "signal for unknown event " + std::to_string(event_id));
  }
  cl_event event = objects.handle<cl_event>(event_id, ObjectKind::event);
  Server *server_ptr = &server;
  watch_event(call.session, 0, event, [server_ptr, instance, address, token, event_id](Session &, cl_int status, const uint64_t *) {
    send_signal(*server_ptr, instance, address, token, event_id, status);
  });
}

void stand_in_created(Session &session, uint64_t event_id, cl_event event, uint64_t instance) {
  cl_int status;
  if (session.inbox().take_signal(event_id, &status)) return settle_stand_in(event, status);
  session.inbox().add_stand_in(event_id, instance, event);
}

void peer_deliver_signal(Server &server, Session &link, wire::PeerSignal::Reader signal) {
  auto session = server.session_by_token(signal.getSession());
  if (!session || session->closed()) return;
  uint64_t event_id = signal.getEvent();
  cl_int status = signal.getStatus() <= CL_COMPLETE ? signal.getStatus() : CL_COMPLETE;
  FEDCLD_LOG(debug, "event %llu: signalled %d by %s", (unsigned long long)event_id, status, link.peer().c_str());
  if (cl_event event = session->inbox().take_stand_in(event_id, link.peer_instance)) {
    settle_stand_in(event, status);
    clReleaseEvent(event);
    return;
  }
  // Before the client's request that creates the stand-in (or after the client settled it).
  if (!session->objects().contains(event_id)) session->inbox().hold_signal(event_id, status);
}

void peer_lost(Server &server, uint64_t instance, const std::string &why) {
  for (const auto &session : server.client_sessions()) {
    for (const auto &receive : session->inbox().receives_from(instance)) receive->fail_later(CL_DEVICE_NOT_AVAILABLE, why);
    for (auto [event_id, event] : session->inbox().take_stand_ins_of(instance)) {
      settle_stand_in(event, CL_DEVICE_NOT_AVAILABLE);
      clReleaseEvent(event);
      session->notify_error(event_id, 0, CL_DEVICE_NOT_AVAILABLE, "the event a command waits for was on a peer daemon: " + why);
    }
  }
}

void exec_peer_connect(Call &call, wire::PeerRef::Reader peer) {
  call.replied = true;
  uint64_t seq = call.seq;
  std::weak_ptr<Session> weak = call.session.weak_from_this();
  call.session.server().peers().with_link(peer.getInstance(), peer.getAddress(), [weak, seq](Session *link, const std::string &error) {
    auto session = weak.lock();
    if (!session || session->closed()) return;
    session->send_status(seq, link ? CL_SUCCESS : CL_DEVICE_NOT_AVAILABLE, error);
  });
}

}  // namespace fedcld
