#include "peer_transfer.h"

#include <capnp/message.h>

#include <cstring>

#include "combine.h"
#include "log.h"
#include "peer_chunks.h"
#include "session_host.h"
#include "shared_memory.h"
#include "trace.h"
#include "transfer_chunks.h"

namespace fedcld {

namespace {

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

// The receiving session's credit: the sending session may put chunks starting below limit on the link.
void write_credit(Session &link, uint64_t sender, uint64_t transfer, uint64_t receiver, uint64_t limit) {
  capnp::MallocMessageBuilder builder;
  auto credit = builder.initRoot<wire::PeerMessage>().initCredit();
  credit.setSession(sender);
  credit.setTransfer(transfer);
  credit.setReceiver(receiver);
  credit.setLimit(limit);
  link.send_peer(builder);
}

// A transfer of a session to itself fails: its receive learns it at once.
void fail_own_receive(SessionHost &host, uint64_t token, uint64_t transfer, cl_int status, const std::string &message);

void send_abort(SessionHost &host, const wire::PeerRef::Reader &peer, uint64_t transfer, cl_int status,
                const std::string &message) {
  uint64_t token = peer.getSession();
  if (peer.getInstance() == host.instance()) return fail_own_receive(host, token, transfer, status, message);
  host.peers().with_link(peer_target(peer), [token, transfer, status, message](Session *link, const std::string &) {
    if (link) write_abort(*link, token, transfer, status, message);
    // else the receiver learns of it from the client, or from the lost link
  });
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Sending: each chunk goes on the link once it is reachable in host memory and the chunks before it
// have gone, and is given back to the device once written to the socket. To a peer session, a chunk
// goes only while it starts below the limit the receiver granted (PeerCredit): chunks in order are
// what keeps that from ever waiting on a chunk held back. The send's event completes when every chunk
// is back.

struct PeerSend : std::enable_shared_from_this<PeerSend> {
  std::weak_ptr<Session> session;
  uint64_t mem_id, transfer, token = 0, instance = 0;  // token, instance: the destination's (target)
  uint64_t peer_transfer;  // how the receiving session knows the transfer
  PeerTarget target;       // where the destination's daemon is
  bool destination_named = false;
  DeviceChunks device;
  OwnEvent event;  // after device: everything that may refuse the request comes before the event exists
  std::weak_ptr<Session> link;
  bool link_up = false;
  bool to_self = false;  // the destination is this very session: chunks are handed over in-process
  std::vector<bool> readable;  // chunks in host memory, to go when their turn comes
  size_t next_to_send = 0;
  uint64_t limit = UINT64_MAX;  // to a peer session: where its credit ends (bytes from the start)
  size_t released = 0;

  PeerSend(Call &call, Resolved &resolved, wire::Request::SendToPeer::Reader request)
      : session(call.session.weak_from_this()), mem_id(request.getMemObject()), transfer(request.getTransfer()),
        peer_transfer(request.getTransfer()),
        device(call, resolved, request.getMemObject(), request.getOffset(), request.getSize()), event(call),
        readable(device.chunks.size()) {
    if (!request.getDestinationLater()) name_destination(request.getPeer());
  }

  void start(Session &s) {
    auto self = shared_from_this();
    device.enqueue(s, DeviceChunks::Direction::to_network,
                   [self](size_t k, cl_int status) { self->chunk_ready(k, status); },
                   [self](size_t, cl_int status) { self->chunk_released(status); });
    if (!destination_named) return s.inbox().add_undirected_send(transfer, self);
    route(s);
  }

  void name_destination(const wire::PeerRef::Reader &peer) {
    target = peer_target(peer);
    token = target.session;
    instance = target.instance;
    destination_named = true;
  }

  // Finds the way to the destination. Instance 0 is this session's own client (a file it writes, an
  // MPI message it sends): the chunks go back on the session.
  void route(Session &s) {
    if (instance == 0) return connected(&s, "");
    if (instance == s.host().instance()) {
      if (token != s.token) return abort(CL_INVALID_VALUE, "the session named is another session of this daemon", false);
      to_self = true;
      return connected(&s, "");
    }
    auto self = shared_from_this();
    s.host().peers().with_link(target, [self](Session *up, const std::string &error) { self->connected(up, error); });
  }

  void connected(Session *up, const std::string &error) {
    if (!up) return abort(CL_DEVICE_NOT_AVAILABLE, error, false);
    link = up->weak_from_this();
    link_up = true;
    if (device.chunks.empty()) return finish();
    if (paced()) {
      limit = wire::PEER_INITIAL_ALLOWANCE;
      if (auto s = session.lock()) s->inbox().add_send(token, peer_transfer, shared_from_this());
    }
    send_readable();
  }

  void chunk_ready(size_t k, cl_int status) {
    if (event.done()) return;
    if (status < 0) return abort(status, "reading the data to send failed on the device (" + std::to_string(status) + ")", true);
    readable[k] = true;
    send_readable();
  }

  // To a peer session: its credits pace the send. The client and this session itself take the
  // bytes as they come.
  bool paced() const { return instance != 0 && !to_self; }

  // The receiving session took more of the transfer into place (PeerCredit).
  void credit(uint64_t granted) {
    limit = std::max(limit, granted);
    send_readable();
  }

  void send_readable() {
    while (link_up && !event.done() && next_to_send < readable.size() && readable[next_to_send] &&
           device.chunks[next_to_send].at < limit)
      send_chunk(next_to_send++);
  }

  void send_chunk(size_t k) {
    auto peer_link = link.lock();
    if (!peer_link || peer_link->closed()) return abort(CL_DEVICE_NOT_AVAILABLE, "the peer link closed", false);
    const DeviceChunks::Chunk &chunk = device.chunks[k];
    auto self = shared_from_this();
    // The socket writes straight from the chunk's host memory, which stays this transfer's until then;
    // a staged chunk's staging stays as long as a resumable session keeps the bytes to send again.
    std::shared_ptr<uint8_t[]> bytes = chunk.staging ? chunk.staging : std::shared_ptr<uint8_t[]>(self, chunk.host);
    auto written = [self, k](int status) {
      if (status < 0) return self->abort(CL_DEVICE_NOT_AVAILABLE, std::string("sending failed: ") + uv_strerror(status), false);
      self->device.open_gate(k);
    };
    if (instance == 0) return peer_link->send_transfer_chunk(transfer, chunk.at, bytes, chunk.bytes, written);
    if (to_self) return hand_over(*peer_link, chunk, written);
    capnp::MallocMessageBuilder builder;
    auto data = builder.initRoot<wire::PeerMessage>().initData();
    data.setSession(token);
    data.setTransfer(peer_transfer);
    data.setOffset(chunk.at);
    if (auto s = session.lock()) data.setFrom(s->token);
    // A daemon of this host: through the link's shared memory while a slot is free (the chunk goes
    // back to the device at once), else on the socket.
    long slot = put_in_link_slot(*peer_link, chunk.host, chunk.bytes);
    if (slot >= 0) {
      auto span = data.initShared();
      span.setSlot(uint32_t(slot));
      span.setBytes(chunk.bytes);
      peer_link->send_peer(builder);
      return written(0);
    }
    peer_link->send_peer(builder, bytes, chunk.bytes, written);
  }

  // To this session's own receive, as a peer's data frame would come: a copy, since the chunk goes
  // back to the device now.
  void hand_over(Session &s, const DeviceChunks::Chunk &chunk, const std::function<void(int)> &written);

  void chunk_released(cl_int status) {
    if (event.done()) return;
    if (status < 0) return abort(status, "giving the sent data back to the device failed (" + std::to_string(status) + ")", false);
    if (++released == device.chunks.size()) finish();
  }

  void finish() {
    FEDCLD_LOG(debug, "transfer %llu: %llu bytes sent", (unsigned long long)transfer, (unsigned long long)device.size());
    forget();
    event.finish(session.lock().get(), CL_COMPLETE, "", mem_id, device.profiling());
  }

  // No more credits are wanted.
  void forget() {
    if (auto s = session.lock(); s && paced()) s->inbox().remove_send(token, peer_transfer);
  }

  // The transfer fails after it started: the client learns it from the send's event, the receiving
  // daemon from an abort (or from the lost link).
  void abort(cl_int status, const std::string &why, bool tell_peer) {
    if (event.done()) return;
    std::string message = "sending memory object " + std::to_string(mem_id) + " to " +
                          (instance ? "peer daemon " + target.address : std::string("the client")) + ": " + why;
    FEDCLD_LOG(warn, "%s", message.c_str());
    auto peer_link = link.lock();
    // The client (instance 0) learns it from the event alone: a peer's frame on its connection made
    // it give the daemon up (seen on NVIDIA, a read-back whose device reads failed).
    if (tell_peer && to_self && peer_link) fail_own_receive(peer_link->host(), token, peer_transfer, status, message);
    else if (tell_peer && instance != 0 && peer_link && !peer_link->closed())
      write_abort(*peer_link, token, peer_transfer, status, message);
    forget();
    event.finish(session.lock().get(), status < 0 ? status : CL_OUT_OF_RESOURCES, message, mem_id);
    device.open_all();
  }
};


void exec_send_to_peer(Call &call, wire::Request::SendToPeer::Reader request) {
  if (request.getDestinationLater()) {
    Resolved resolved = resolve(call, request.getCommand());
    std::make_shared<PeerSend>(call, resolved, request)->start(call.session);
    return;
  }
  try {
    Resolved resolved = resolve(call, request.getCommand());
    auto send = std::make_shared<PeerSend>(call, resolved, request);
    send->start(call.session);
  } catch (const RequestError &error) {
    // The receiving side must not wait for bytes that will never come (a client learns it from
    // the send's event).
    if (request.getPeer().getInstance() != 0)
      send_abort(call.session.host(), request.getPeer(), request.getTransfer(),
                 error.status < 0 ? error.status : CL_INVALID_OPERATION,
                 "the sending daemon refused the transfer: " + error.message);
    throw;
  }
}

void exec_transfer_to(Call &call, wire::Request::TransferTo::Reader request) {
  auto send = call.session.inbox().take_undirected_send(request.getTransfer());
  uint64_t peer_transfer = request.getPeerTransfer() ? request.getPeerTransfer() : request.getTransfer();
  if (!send || send->event.done()) {
    // Failed already (its event says so), or never was: the receiving side must not wait.
    if (request.getPeer().getInstance() != 0)
      send_abort(call.session.host(), request.getPeer(), peer_transfer, CL_INVALID_OPERATION,
                 "the sending daemon has no send waiting for transfer " + std::to_string(request.getTransfer()));
    return;
  }
  send->peer_transfer = peer_transfer;
  send->name_destination(request.getPeer());
  send->route(call.session);
}

// ---------------------------------------------------------------------------------------------
// Receiving: each chunk's bytes land in its host memory (straight from the socket when the chunk is
// reachable by the time they come), its gate opens, and the device takes it back. The receive's
// event completes when every chunk is on the device. Bytes that come before their chunk is reachable
// (a transfer window not there yet) wait in memory; credits keep that bounded (--peer-ahead).

struct PeerReceive : std::enable_shared_from_this<PeerReceive> {
  std::weak_ptr<Session> session;
  uint64_t mem_id, transfer;
  Combine combine;
  ElementType element_type;
  DeviceChunks device;
  OwnEvent event;
  std::vector<bool> claimed;                        // bytes are arriving for the chunk (or have)
  std::vector<std::shared_ptr<uint8_t[]>> waiting;  // bytes that came before their chunk was ready
  uint64_t waiting_bytes = 0;
  size_t landed = 0;
  // Flow control: the sending session, the bytes taken into place, and the limit granted it so far.
  uint64_t from_instance = 0, from_session = 0;
  uint64_t placed_bytes = 0, granted = wire::PEER_INITIAL_ALLOWANCE;

  PeerReceive(Call &call, Resolved &resolved, wire::Request::ReceiveFromPeer::Reader request)
      : session(call.session.weak_from_this()), mem_id(request.getMemObject()), transfer(request.getTransfer()),
        combine(checked_combine(request)), element_type(request.getElementType()),
        device(call, resolved, request.getMemObject(), request.getOffset(), request.getSize()), event(call),
        claimed(device.chunks.size()), waiting(device.chunks.size()) {}

  static Combine checked_combine(wire::Request::ReceiveFromPeer::Reader request) {
    Combine combine = request.getCombine();
    if (combine == Combine::NONE) return combine;
    size_t element = element_bytes(request.getElementType());
    if (element == 0 || combine > Combine::PRODUCT) fedcld::fail(CL_INVALID_VALUE, "unknown combining operation or element type");
    if (request.getOffset() % element || request.getSize() % element)
      fedcld::fail(CL_INVALID_VALUE, "a combining receive's offset and size must be whole elements of " +
                                 std::to_string(element) + " bytes");
    return combine;
  }

  // The received bytes of chunk k into its host memory: replacing or combined with what is there.
  void land(size_t k, const uint8_t *bytes) {
    DeviceChunks::Chunk &chunk = device.chunks[k];
    combine_elements(combine, element_type, chunk.host, bytes, chunk.bytes);
    placed(k);
  }

  // Chunk k's bytes are in its host memory: the device may take them, and the sender send more.
  void placed(size_t k) {
    placed_bytes += device.chunks[k].bytes;
    device.open_gate(k);
    grant();
  }

  // Lets the sender go up to --peer-ahead bytes past what is in place. Transfers within the initial
  // allowance never wait for a credit, and get none.
  void grant() {
    auto s = session.lock();
    if (!s || from_session == 0 || event.done() || device.size() <= wire::PEER_INITIAL_ALLOWANCE) return;
    uint64_t limit = placed_bytes + s->host().options().peer_ahead_bytes;
    if (limit <= granted) return;
    granted = limit;
    uint64_t sender = from_session, receiver = s->token, id = transfer;
    PeerTarget sending;  // named by its instance alone: the link its data came on is up, or lost
    sending.instance = from_instance;
    sending.session = sender;
    s->host().peers().with_link(sending, [sender, id, receiver, limit](Session *link, const std::string &) {
      if (link) write_credit(*link, sender, id, receiver, limit);  // else the receive fails with the lost link
    });
  }

  void start(Session &s) {
    auto self = shared_from_this();
    device.enqueue(s, combine == Combine::NONE ? DeviceChunks::Direction::from_network : DeviceChunks::Direction::combine,
                   [self](size_t k, cl_int status) { self->chunk_ready(k, status); },
                   [self](size_t, cl_int status) { self->chunk_landed(status); });
    if (device.chunks.empty()) complete();
  }

  // Where the bytes of a data frame go, if they are for a ready chunk not yet claimed. A frame's
  // padding must fit: a mapped chunk takes only a payload of whole words.
  std::shared_ptr<uint8_t[]> destination(uint64_t offset, uint64_t bytes) {
    long k = device.chunk_at(offset, bytes);
    if (k < 0 || claimed[k] || !device.usable(k) || event.done() || combine != Combine::NONE) return nullptr;
    if (!device.staged() && bytes % 8) return nullptr;
    claimed[k] = true;
    return std::shared_ptr<uint8_t[]>(shared_from_this(), device.chunks[k].host);
  }

  void accept(PeerChunk chunk) {
    if (event.done()) return;
    if (event.settled()) return fail(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST, "the sending side failed");
    long k = device.chunk_at(chunk.offset, chunk.size);
    if (k < 0) return fail(CL_INVALID_VALUE, "the peer sent bytes that fit no chunk of the transfer");
    if (chunk.from_session) from_instance = chunk.from_instance, from_session = chunk.from_session;
    if (chunk.bytes.get() == device.chunks[k].host) return placed(size_t(k));
    if (claimed[k]) return fail(CL_INVALID_VALUE, "the peer sent a chunk twice");
    claimed[k] = true;
    if (!device.usable(k)) {
      waiting_bytes += chunk.size;
      waiting[k] = std::move(chunk.bytes);
      if (from_session && waiting_bytes > ahead_bound())
        fail(CL_OUT_OF_HOST_MEMORY, "the sending daemon ran " + std::to_string(waiting_bytes) +
                                        " bytes ahead of the device, past its credit (--peer-ahead)");
      return;
    }
    land(k, chunk.bytes.get());
  }

  // What a sender that keeps to its credits can have waiting here: what was granted past the bytes
  // in place, and the chunk that started just below the limit.
  uint64_t ahead_bound() const {
    auto s = session.lock();
    uint64_t ahead = s ? s->host().options().peer_ahead_bytes : 0;
    return std::max(ahead, wire::PEER_INITIAL_ALLOWANCE) + fedcl::kMaxTransferChunkBytes;
  }

  void chunk_ready(size_t k, cl_int status) {
    if (event.done()) return;
    if (status < 0) return fail(status, "making room for the data failed on the device (" + std::to_string(status) + ")");
    if (!waiting[k]) return;  // not come yet, or already in place
    waiting_bytes -= device.chunks[k].bytes;
    land(k, waiting[k].get());
    waiting[k].reset();
  }

  void chunk_landed(cl_int status) {
    if (event.done()) return;
    if (status < 0) return fail(status, "writing the received data failed on the device (" + std::to_string(status) + ")");
    if (++landed == device.chunks.size()) complete();
  }

  void complete() {
    fedcl::trace::mark(fedcl::trace::Point::daemon_receive_landed, 0, 0);
    FEDCLD_LOG(debug, "transfer %llu: %llu bytes received", (unsigned long long)transfer, (unsigned long long)device.size());
    auto s = session.lock();
    event.finish(s.get(), CL_COMPLETE, "", mem_id, device.profiling());
    if (s) s->inbox().remove_receive(transfer);
  }

  // The client settled the receive's event: its sending side failed, so no bytes will come. The
  // commands behind the gates must not wait for them (the client knows; nothing to tell it).
  void settled_by_client() {
    if (event.done() || !event.settled()) return;
    event.finish(nullptr, CL_OUT_OF_RESOURCES, "", mem_id);
    device.open_all();
  }

  // A failed receive stays in the inbox, so that late bytes of its transfer are dropped.
  void fail(cl_int status, const std::string &why) {
    if (event.done()) return;
    event.finish(session.lock().get(), status < 0 ? status : CL_OUT_OF_RESOURCES,
                 "receiving memory object " + std::to_string(mem_id) + ": " + why, mem_id);
    device.open_all();
  }
};

void PeerSend::hand_over(Session &s, const DeviceChunks::Chunk &chunk, const std::function<void(int)> &written) {
  std::shared_ptr<uint8_t[]> copy(new (std::nothrow) uint8_t[chunk.bytes]);
  if (!copy) return abort(CL_OUT_OF_HOST_MEMORY, "fedcld cannot copy " + std::to_string(chunk.bytes) + " bytes", true);
  std::memcpy(copy.get(), chunk.host, chunk.bytes);
  PeerChunk handed{chunk.at, chunk.bytes, std::move(copy)};
  if (auto receive = s.inbox().receive(peer_transfer, instance)) {
    receive->accept(std::move(handed));
  } else if (!s.inbox().hold(peer_transfer, instance, std::move(handed))) {
    return abort(CL_OUT_OF_HOST_MEMORY, "more data waits for its receive than fedcld holds", true);
  }
  written(0);
}

namespace {

void fail_own_receive(SessionHost &host, uint64_t token, uint64_t transfer, cl_int status, const std::string &message) {
  auto session = host.session_by_token(token);
  if (!session || session->closed()) return;
  if (auto receive = session->inbox().receive(transfer, host.instance())) return receive->fail(status, message);
  session->inbox().hold_failure(transfer, host.instance(), status, message);
}

}  // namespace

void exec_receive_from_peer(Call &call, wire::Request::ReceiveFromPeer::Reader request) {
  Resolved resolved = resolve(call, request.getCommand());
  auto receive = std::make_shared<PeerReceive>(call, resolved, request);
  receive->start(call.session);
  PeerInbox &inbox = call.session.inbox();
  PeerInbox::Early early = inbox.take_early(request.getTransfer(), request.getSender());
  inbox.add_receive(request.getTransfer(), request.getSender(), call.event, receive);
  if (early.status != CL_SUCCESS) return receive->fail(early.status, early.message);
  for (PeerChunk &chunk : early.chunks) receive->accept(std::move(chunk));
}

void exec_transfer_from(Call &call, wire::Request::TransferFrom::Reader request) {
  PeerInbox &inbox = call.session.inbox();
  auto receive = inbox.redirect_receive(request.getTransfer(), request.getSender());
  if (!receive) return;  // over already
  PeerInbox::Early early = inbox.take_early(request.getTransfer(), request.getSender());
  if (early.status != CL_SUCCESS) return receive->fail(early.status, early.message);
  for (PeerChunk &chunk : early.chunks) receive->accept(std::move(chunk));
}

std::shared_ptr<uint8_t[]> peer_data_destination(SessionHost &host, Session &link, wire::PeerData::Reader data,
                                                 uint64_t bytes) {
  auto session = host.session_by_token(data.getSession());
  if (!session || session->closed()) return nullptr;
  auto receive = session->inbox().receive(data.getTransfer(), link.peer_instance);
  return receive ? receive->destination(data.getOffset(), bytes) : nullptr;
}

void peer_deliver_data(SessionHost &host, Session &link, wire::PeerData::Reader data, Frame &frame) {
  auto session = host.session_by_token(data.getSession());
  if (!session || session->closed()) return;  // its client has gone: nothing waits for the bytes
  PeerChunk chunk{data.getOffset(), frame.header.payload_bytes, std::move(frame.payload), link.peer_instance,
                  data.getFrom()};
  if (auto receive = session->inbox().receive(data.getTransfer(), link.peer_instance)) return receive->accept(std::move(chunk));
  if (!session->inbox().hold(data.getTransfer(), link.peer_instance, std::move(chunk)))
    link.close("the peer sent more data that no receive expects than fedcld holds");
}

void peer_deliver_credit(SessionHost &host, Session &link, wire::PeerCredit::Reader credit) {
  auto session = host.session_by_token(credit.getSession());
  if (!session || session->closed()) return;
  auto send = session->inbox().send_to(credit.getReceiver(), credit.getTransfer());
  if (send && send->instance == link.peer_instance) send->credit(credit.getLimit());  // else over already
}

void peer_deliver_abort(SessionHost &host, Session &link, wire::PeerAbort::Reader abort) {
  auto session = host.session_by_token(abort.getSession());
  if (!session || session->closed()) return;
  std::string message = std::string("the sending daemon ") + link.peer() + " failed: " + abort.getMessage().cStr();
  cl_int status = abort.getStatus() < 0 ? abort.getStatus() : CL_OUT_OF_RESOURCES;
  if (auto receive = session->inbox().receive(abort.getTransfer(), link.peer_instance)) return receive->fail(status, message);
  session->inbox().hold_failure(abort.getTransfer(), link.peer_instance, status, message);
}

// The client's own bytes for a receive whose sender is 0 (a file the client reads).
void exec_transfer_data(Call &call, wire::Request::TransferData::Reader request, Frame &frame) {
  auto receive = call.session.inbox().receive(request.getTransfer(), 0);
  if (!receive) fail(CL_INVALID_VALUE, "data for transfer " + std::to_string(request.getTransfer()) + ", which this session does not expect");
  uint64_t size = frame.header.payload_bytes;
  receive->accept(PeerChunk{request.getOffset(), size, take_payload(frame, size, "")});
}

void exec_transfer_abort(Call &call, wire::Request::TransferAbort::Reader request) {
  cl_int status = request.getStatus() < 0 ? request.getStatus() : CL_OUT_OF_RESOURCES;
  if (auto send = call.session.inbox().take_undirected_send(request.getTransfer()))
    return send->abort(status, request.getMessage().cStr(), false);
  auto receive = call.session.inbox().receive(request.getTransfer(), 0);
  if (!receive) return;  // already over
  receive->fail(status, request.getMessage().cStr());
}

std::shared_ptr<uint8_t[]> client_data_destination(Session &session, wire::Request::TransferData::Reader data,
                                                   uint64_t bytes) {
  auto receive = session.inbox().receive(data.getTransfer(), 0);
  return receive ? receive->destination(data.getOffset(), bytes) : nullptr;
}

void peer_receive_settled(Session &session, uint64_t event) {
  if (auto receive = session.inbox().receive_with_event(event)) receive->settled_by_client();
}

void peer_receives_lost(Session &session, uint64_t instance, const std::string &why) {
  for (const auto &receive : session.inbox().receives_from(instance)) receive->fail(CL_DEVICE_NOT_AVAILABLE, why);
}

}  // namespace fedcld
