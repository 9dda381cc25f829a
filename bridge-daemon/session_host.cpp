#include "session_host.h"

#include <capnp/message.h>
#include <capnp/serialize.h>

#include <algorithm>
#include <cstdio>

#include "exec.h"
#include "log.h"
#include "node_file_broker.h"
#include "peer_transfer.h"
#include "trace.h"
#include "worker_board.h"

namespace fedcld {

namespace wire = fedcl::wire;

SessionHost &Session::host() { return static_cast<SessionHost &>(server()); }

SessionHost::SessionHost(uv_loop_t *loop, const DaemonSettings &settings, uint64_t instance,
                         std::vector<BackendPlatform> platforms, ControlChannel *channel, WorkerBoard *board)
    : Server(loop, settings.server, instance), platforms_(std::move(platforms)), trace_file_(settings.trace_file),
      channel_(channel), board_(board) {
  uint64_t largest = 0;
  for (const BackendPlatform &platform : platforms_)
    for (const BackendDevice &device : platform.devices)
      largest = std::max(largest, info_ulong(device.info, CL_DEVICE_GLOBAL_MEM_SIZE));
  uint64_t limit = settings.server.max_session_memory;
  payload_bound_ = limit && (largest == 0 || limit < largest) ? limit : largest ? largest : fedcl::kMaxPayloadBytes;
  uv_timer_init(loop, &board_timer_);
  board_timer_.data = this;
  uv_timer_start(&board_timer_, [](uv_timer_t *timer) { static_cast<SessionHost *>(timer->data)->publish(); }, 0, 1000);
  uv_unref(reinterpret_cast<uv_handle_t *>(&board_timer_));
  uv_signal_init(loop, &sigterm_);
  sigterm_.data = this;
  uv_signal_start(&sigterm_, [](uv_signal_t *signal, int) { static_cast<SessionHost *>(signal->data)->close(); }, SIGTERM);
  uv_unref(reinterpret_cast<uv_handle_t *>(&sigterm_));
  peers_.start();
  start_watch();
}

SessionHost::~SessionHost() = default;

void SessionHost::publish() {
  if (!board_) return;
  board_->loop_turned_ns.store(uv_hrtime());
  board_->commands_in_flight.store(watches());
  for (const auto &session : sessions()) publish_connection(*session, BoardLink::up);
}

void SessionHost::publish_connection(const Session &session, BoardLink::State state) {
  if (session.role == Session::Role::client && &session == client_.get()) {
    // What went through shared memory counts as the client's traffic too.
    board_->client_bytes_received.store(session.received() + session.shared_received, std::memory_order_relaxed);
    board_->client_bytes_sent.store(session.written() + session.shared_sent, std::memory_order_relaxed);
    board_->client_transport.store(session.transport(), std::memory_order_relaxed);
    return;
  }
  if (session.role != Session::Role::peer) return;
  // A slot per link, kept after it closed with its traffic; links past the last slot go unshown.
  auto slot = link_slots_.find(session.number());
  if (slot == link_slots_.end()) {
    if (link_slots_.size() == kBoardLinks) return;
    slot = link_slots_.emplace(session.number(), link_slots_.size()).first;
    BoardLink &fresh = board_->links[slot->second];
    std::snprintf(fresh.peer, sizeof fresh.peer, "%s", session.peer().c_str());
    fresh.transport.store(session.transport(), std::memory_order_relaxed);
    fresh.state.store(state, std::memory_order_release);
  }
  BoardLink &link = board_->links[slot->second];
  link.bytes_sent.store(session.written() + session.shared_sent, std::memory_order_relaxed);
  link.bytes_received.store(session.received() + session.shared_received, std::memory_order_relaxed);
  link.transport.store(session.transport(), std::memory_order_relaxed);
  if (state == BoardLink::closed) link.state.store(BoardLink::closed, std::memory_order_release);
}

void SessionHost::on_message(wire::WorkerMessage::Reader message, SessionLink *link) {
  switch (message.which()) {
    case wire::WorkerMessage::TAKE_SESSION: return take_session(message.getTakeSession(), link);
    case wire::WorkerMessage::RESUME_SESSION: return resume_session(message.getResumeSession(), link);
    case wire::WorkerMessage::TAKE_LINK:
      if (client_) return peers_.adopt(message.getTakeLink(), link);
      break;
    case wire::WorkerMessage::DIAL_FAILED: {
      auto failed = message.getDialFailed();
      return peers_.dial_failed(failed.getId(), failed.getMessage());
    }
    default: break;
  }
  FEDCLD_LOG(error, "the main process sent a message this worker cannot take (%u)", unsigned(message.which()));
  if (link) session_link_discard(link);
}

void SessionHost::take_session(wire::TakeSession::Reader take, SessionLink *link) {
  if (client_ || closing_) {
    FEDCLD_LOG(error, "the main process handed this worker a second session");
    session_link_discard(link);
    return;
  }
  next_session_ = take.getNumber();
  // Its lines read apart from the main process's in one log: "[session 12]", and the journal's fields.
  log_set_context({take.getNumber(), take.getUser(), take.getConnection().getPeer()});
  if (!trace_file_.empty()) {
    std::string why = fedcl::trace::start(trace_file_ + "." + std::to_string(take.getNumber()));
    if (!why.empty()) FEDCLD_LOG(warn, "--trace: %s", why.c_str());
  }
  auto session = add_session();
  client_ = session;
  size_t p = take.getPlatform();
  session->greeted = true;
  session->role = Session::Role::client;
  session->token = take.getSessionToken();
  session->client = take.getClient();
  session->user = take.getUser();
  auto resume = take.getResumeToken();
  session->resume_token.assign(reinterpret_cast<const char *>(resume.begin()), resume.size());
  if (p >= platforms_.size()) return session->close("the main process named platform " + std::to_string(p) + ", which is not here");
  session->set_platform(platforms_[p], p);
  if (board_) session->objects().publish_to(&board_->memory_bytes, &board_->objects);
  std::string why = session->adopt(link, take.getConnection());
  if (!why.empty()) return session->close("cannot take the session over: " + why);

  capnp::MallocMessageBuilder message;
  auto reply = message.initRoot<wire::Reply>();
  reply.setSeq(take.getSeq());
  auto out = reply.initHello();
  out.setProtocolVersion(wire::PROTOCOL_VERSION);
  out.setNode(options_.node);
  out.setPlatformCount(platforms_.size());
  out.setInstance(instance());
  out.setPeerAddress(take.getPeerAddress());
  if (take.getPeerAddressTag().size() > 0) out.setPeerAddressTag(take.getPeerAddressTag());
  out.setHost(capnp::Data::Reader(reinterpret_cast<const uint8_t *>(options_.host_identity.data()), options_.host_identity.size()));
  out.setLocalSocket(options_.local_socket);
  if (take.getLocalSocketTag().size() > 0) out.setLocalSocketTag(take.getLocalSocketTag());
  out.setSessionToken(session->token);
  if (take.getProof().size() > 0) out.setProof(take.getProof());
  if (!session->resume_token.empty()) {
    out.setResumeToken(resume);
    out.setResumeWindowMs(options_.resume_window_ms);
  }
  const BackendPlatform &platform = platforms_[p];
  auto desc = out.initPlatforms(1)[0];
  fill_info(desc.initInfo(platform.info.size()), platform.info);
  auto devices = desc.initDevices(platform.devices.size());
  for (size_t d = 0; d < platform.devices.size(); d++) {
    const BackendDevice &device = platform.devices[d];
    uint64_t id = d + 1;
    session->objects().add_device(id, device.handle);
    devices[d].setId(id);
    fill_info(devices[d].initInfo(device.info.size()), device.info);
  }
  session->send_reply(message);
  publish();
  session->run_pending();
}

void SessionHost::resume_session(wire::ResumeSession::Reader resume, SessionLink *link) {
  auto refuse = [&](const std::string &why) {
    // On a connection of its own: the session, if any, stays as it was.
    auto connection = add_session();
    connection->role = Session::Role::client;
    connection->greeted = true;  // its frames are no longer the main process's to check
    if (!connection->adopt(link, resume.getConnection()).empty()) return connection->close("cannot answer a resumption");
    FEDCLD_LOG(warn, "a resumption refused: %s", why.c_str());
    connection->send_status(resume.getSeq(), CL_INVALID_PLATFORM, "fedcld refused the session: " + why);
    connection->close_after_writes("refused");
  };
  auto session = client_;
  if (!session || session->closed() || !session->resumable())
    return refuse("the session cannot be resumed: it has ended");
  const fedcl::ResendBuffer &sent = session->sent();
  uint64_t received = resume.getReceived();
  if (received < sent.acknowledged() || received > sent.sent())
    return refuse("the session cannot be resumed: the client says it received " + std::to_string(received) +
                  " bytes, fedcld kept bytes " + std::to_string(sent.acknowledged()) + " to " + std::to_string(sent.sent()));
  capnp::MallocMessageBuilder message;
  auto reply = message.initRoot<wire::Reply>();
  reply.setSeq(resume.getSeq());
  auto resumed = reply.initResumed();
  resumed.setReceived(session->received());
  if (resume.getProof().size() > 0) resumed.setProof(resume.getProof());
  std::vector<uint8_t> answer;
  fedcl::frame_append(answer, wire::FrameKind::REPLY, message, 0);
  std::string why = session->resume_over(link, resume.getConnection(), std::move(answer), received);
  if (!why.empty()) session->connection_lost("the resumed connection failed: " + why);
}

std::shared_ptr<Session> SessionHost::client() const { return client_ && !client_->closed() ? client_ : nullptr; }

std::shared_ptr<Session> SessionHost::session_by_token(uint64_t token) const {
  auto session = client();
  return session && session->token == token ? session : nullptr;
}

void SessionHost::execute(Session &session, Frame &frame) {
  if (frame.header.kind == uint16_t(wire::FrameKind::PEER)) return peers_.receive(session, frame);
  execute_request(session, frame);
}

std::shared_ptr<uint8_t[]> SessionHost::payload_destination(Session &session, Frame &frame, std::string *problem) {
  if (session.role == Session::Role::peer) return peers_.payload_destination(session, frame, problem);
  if (session.role != Session::Role::client) return nullptr;
  // A client's own transfer data lands where its receive set the chunk aside.
  try {
    capnp::FlatArrayMessageReader reader(frame.message.asPtr());
    auto request = reader.getRoot<wire::Request>();
    *problem = request_payload_problem(request, frame.header.payload_bytes);
    if (!problem->empty()) return nullptr;
    if (frame.header.payload_bytes > payload_bound_) {
      frame.payload_refused = "a payload of " + std::to_string(frame.header.payload_bytes) +
                              " bytes, more than this session may hold (" + std::to_string(payload_bound_) + ")";
      return nullptr;
    }
    if (request.which() != wire::Request::TRANSFER_DATA) return nullptr;
    return client_data_destination(session, request.getTransferData(), frame.header.payload_bytes);
  } catch (const kj::Exception &) {
    return nullptr;  // execute() finds the message malformed and closes the session
  }
}

void SessionHost::connection_closed(Session &session, const std::string &reason) {
  if (board_) publish_connection(session, BoardLink::closed);
  if (session.role == Session::Role::peer) return peers_.link_closed(session, reason);
  print_gate_.session_closed(session.number());
  // The client's session is over: so is this worker, once the session has released its objects.
  if (&session == client_.get()) post([this] { close(); });
}

void SessionHost::close() {
  if (closing_) return;
  closing_ = true;
  Server::close();
  peers_.close();
  uv_close(reinterpret_cast<uv_handle_t *>(&board_timer_), nullptr);
  uv_close(reinterpret_cast<uv_handle_t *>(&sigterm_), nullptr);
  channel_->close();
}

int SessionHost::open_node_file(const std::string &path, bool for_writing, struct stat *st, std::string *error) {
  // The fuzz target's workers share its loop with the main process: nothing could answer a wait.
  if (!ends_with_process()) return *error = "this fedcld's in-process workers serve no node files", -1;
  return node_file_request(path, for_writing, st, error);
}

}  // namespace fedcld
