#include "session.h"
#include "trace.h"

#include <capnp/serialize.h>

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "event_failures.h"
#include "handshake_limits.h"
#include "log.h"
#include "server.h"
#include "session_host.h"
#include "worker_board.h"

namespace fedcld {

namespace {

struct WriteRequest {
  uv_write_t req;
  std::vector<uint8_t> bytes;
  std::shared_ptr<uint8_t[]> payload;
  std::weak_ptr<Session> session;
  std::function<void(int status)> written;
};

struct ShutdownRequest {
  uv_shutdown_t req;
  std::shared_ptr<Session> session;
};

const uint8_t kZeroPadding[8] = {};

// The largest frame accepted before the handshake is done (a Hello is a few hundred bytes).
constexpr uint32_t kHandshakeMaxWords = 1024;

// Past this size a payload is received straight into its own buffer instead of via the read buffer.
constexpr size_t kDirectPayloadBytes = 16 * 1024;

}  // namespace

Session::Session(Server &server, uint64_t number)
    : server_(server), number_(number), link_(new SessionLink) {
  link_->stream()->data = this;
  objects_.set_memory_limit(server.options().max_session_memory);
  objects_.order_sub_buffers([&server](std::function<void()> task) { server.post(std::move(task)); });
  last_heard = last_sent = opened_at = uv_now(server.loop());
}

Session::~Session() = default;

void SessionLink::init(uv_loop_t *loop, bool local_link, bool ipc) {
  local = local_link;
  if (local) uv_pipe_init(loop, &pipe, ipc ? 1 : 0);
  else uv_tcp_init(loop, &tcp);
}

void session_link_discard(SessionLink *link) {
  uv_close(link->handle(), [](uv_handle_t *handle) { delete reinterpret_cast<SessionLink *>(handle); });
}

std::string Session::channel_binding() const {
  if (!link_) return {};
  return link_->local ? local_binding_ : link_->transport->channel_binding();
}

BoardTransport Session::transport() const {
  if (!link_) return BoardTransport::unknown;
  if (link_->local) return shared_memory || own_shared_memory ? BoardTransport::local_shared_memory : BoardTransport::local;
  return link_->transport->channel_binding().empty() ? BoardTransport::tcp : BoardTransport::tls;
}

std::string Session::address_key() const {
  return local() ? "local uid " + std::to_string(peer_uid_) : fedcld::address_key(peer_);
}

std::string Session::read_peer_credentials(bool dialled) {
  ucred credentials{};
  socklen_t size = sizeof credentials;
  uv_os_fd_t fd = -1;
  if (uv_fileno(link_->handle(), &fd) != 0 || getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &size) != 0)
    return std::string("cannot ask who is at the other end: ") + std::strerror(errno);
  peer_uid_ = credentials.uid;
  peer_pid_ = uint32_t(credentials.pid);
  uint32_t mine = uint32_t(getpid());
  local_binding_ = "unix " + std::to_string(dialled ? mine : peer_pid_) + " " + std::to_string(dialled ? peer_pid_ : mine);
  return {};
}

int Session::start(uv_stream_t *listener) {
  bool local = listener->type == UV_NAMED_PIPE;
  link_->init(server_.loop(), local);
  link_open_ = true;
  int err = uv_accept(listener, link_->stream());
  if (err == 0 && local) {
    // The kernel names the process at the other end: its user is shown and throttled by (the key
    // still decides whether it gets a session). No TLS: nothing between the two processes but the
    // kernel.
    std::string why = read_peer_credentials(false);
    if (!why.empty()) {
      close(why);
      return UV_EINVAL;
    }
    peer_ = "local uid " + std::to_string(peer_uid_) + " pid " + std::to_string(peer_pid_);
    link_->transport = std::make_unique<PlainStream>(link_->stream());
    link_->transport->start(*this, nullptr);
    err = uv_read_start(link_->stream(), on_alloc, on_read);
  } else if (err == 0) {
    uv_tcp_t &tcp = link_->tcp;
    uv_tcp_nodelay(&tcp, 1);
    // A client whose node vanished without closing the connection still has its objects released.
    uv_tcp_keepalive(&tcp, 1, 10);
    sockaddr_storage addr{};
    int len = sizeof addr;
    char host[64] = "?";
    if (uv_tcp_getpeername(&tcp, reinterpret_cast<sockaddr *>(&addr), &len) == 0) {
      if (addr.ss_family == AF_INET6)
        uv_ip6_name(reinterpret_cast<sockaddr_in6 *>(&addr), host, sizeof host);
      else
        uv_ip4_name(reinterpret_cast<sockaddr_in *>(&addr), host, sizeof host);
      peer_port_ = ntohs(reinterpret_cast<sockaddr_in *>(&addr)->sin_port);  // same place in IPv6
      peer_ = std::string(host) + ":" + std::to_string(peer_port_);
    }
    auto &transport = link_->transport;
    transport = server_.tls().accepting(reinterpret_cast<uv_stream_t *>(&tcp));
    if (!transport) {
      close("cannot set up TLS for the connection");
      return UV_ENOMEM;
    }
    transport->start(*this, nullptr);  // an accepted connection waits for its client's first bytes
    err = uv_read_start(reinterpret_cast<uv_stream_t *>(&tcp), on_alloc, on_read);
  }
  if (err != 0) close(std::string("accept failed: ") + uv_strerror(err));
  return err;
}

namespace {

void on_connected(uv_connect_t *req, int status) {
  std::unique_ptr<std::weak_ptr<Session>> self(static_cast<std::weak_ptr<Session> *>(req->data));
  delete req;
  auto session = self->lock();
  if (!session || session->closed()) return;
  session->dial_ended(status);
}

}  // namespace

void Session::dial_ended(int status) {
  if (status == 0) status = start_dialled();
  if (status != 0) {
    auto done = std::move(connected_);
    if (done) done(status);
  }
}

uv_connect_t *Session::start_dial(std::string name, std::function<void(int status)> done, bool local) {
  peer_ = std::move(name);
  role = Role::peer;
  dialled = true;
  connected_ = std::move(done);
  link_->init(server_.loop(), local);
  link_open_ = true;
  auto *request = new uv_connect_t;
  request->data = new std::weak_ptr<Session>(weak_from_this());
  return request;
}

void Session::connect_local(const std::string &path, std::string name, std::function<void(int status)> done) {
  uv_connect_t *request = start_dial(std::move(name), std::move(done), true);
  uv_pipe_connect(request, &link_->pipe, path.c_str(), on_connected);  // failures come to on_connected
}

void Session::connect(const sockaddr *address, std::string name, std::function<void(int status)> done) {
  uv_connect_t *request = start_dial(std::move(name), std::move(done), false);
  int err = uv_tcp_connect(request, &link_->tcp, address, on_connected);
  if (err != 0) {
    delete static_cast<std::weak_ptr<Session> *>(request->data);
    delete request;
    server_.post([self = weak_from_this(), err] {
      auto session = self.lock();
      if (!session) return;
      auto done = std::move(session->connected_);
      if (done) done(err);
    });
  }
}

int Session::start_dialled() {
  auto *stream = link_->stream();
  auto &transport = link_->transport;
  std::string why;
  if (link_->local) {
    why = read_peer_credentials(true);
    if (why.empty()) transport = std::make_unique<PlainStream>(stream);
  } else {
    uv_tcp_nodelay(&link_->tcp, 1);
    transport = server_.tls().dialling(stream, peer_, &why);
  }
  if (!transport) {
    FEDCLD_LOG(warn, "peer link %llu (%s): %s", (unsigned long long)number_, peer_.c_str(), why.c_str());
    return UV_EINVAL;
  }
  int err = uv_read_start(stream, on_alloc, on_read);
  if (err != 0) return err;
  // Connected once the transport is ready: at once on plain TCP, after the handshake with TLS (a
  // failed handshake closes the link, which reports it to the dial).
  why = transport->start(*this, [self = weak_from_this()] {
    auto session = self.lock();
    if (!session) return;
    if (auto done = std::move(session->connected_)) done(0);
  });
  if (!why.empty()) close(why);
  return 0;
}

void Session::close(const std::string &reason) {
  if (closing_) return;
  closing_ = true;
  if (!stranger)
    FEDCLD_LOG(info, "%s %llu (%s) closed: %s", role == Role::peer ? "peer link" : "session",
               (unsigned long long)number_, peer_.c_str(), reason.c_str());
  if (auto done = std::move(connected_)) done(UV_ECANCELED);
  server_.connection_closed(*this, reason);
  if (link_ && !link_open_) {
    delete link_;  // never opened (a peer link whose address did not resolve): no handle to close
    link_ = nullptr;
  }
  if (link_) {
    uv_close(link_->handle(), on_closed);
  } else {
    // Parked, or never connected: no handle to wait for.
    server_.post([self = shared_from_this()] { self->finish(); });
  }
}

void Session::close_after_writes(const std::string &reason) {
  if (closing_) return;
  // Nothing more from this connection runs: not the frames already read (a refused proof's
  // connection must not get another guess from what it queued behind it).
  draining_ = true;
  pending_.clear();
  unparsed_.clear();
  if (!link_) return close(reason);
  uv_read_stop(link_->stream());
  auto *request = new ShutdownRequest{{}, shared_from_this()};
  if (!stranger) FEDCLD_LOG(info, "session %llu (%s) closing: %s", (unsigned long long)number_, peer_.c_str(), reason.c_str());
  int err = uv_shutdown(&request->req, link_->stream(), [](uv_shutdown_t *req, int) {
    auto *request = reinterpret_cast<ShutdownRequest *>(req);
    request->session->close("its last reply was written");
    delete request;
  });
  if (err != 0) {
    delete request;
    close(reason);
  }
}

void Session::on_closed(uv_handle_t *handle) {
  auto *self = static_cast<Session *>(handle->data);
  delete reinterpret_cast<SessionLink *>(handle);
  self->link_ = nullptr;
  self->finish();
}

void Session::finish() {
  size_t count = objects_.size();
  inbox_.clear();
  if (server_.ends_with_process()) {
    objects_.abandon_all();
  } else {
    BackendCall call("clRelease* (releasing the session's objects as it ended)");
    objects_.release_all();
  }
  pending_.clear();
  FEDCLD_LOG(debug, "session %llu released %zu objects", (unsigned long long)number_, count);
  server_.session_closed(number_);  // may destroy this
}

void Session::on_alloc(uv_handle_t *handle, size_t, uv_buf_t *buf) {
  auto *self = static_cast<Session *>(handle->data);
  self->link_->transport->alloc(*self, buf);
}

uv_buf_t Session::plaintext_buffer() {
  uint64_t remaining = payload_wire_bytes_ - have_;
  if (state_ == ReadState::payload && remaining >= kDirectPayloadBytes) {
    // Zero copy: the socket (or the decryption) fills the payload buffer directly.
    return uv_buf_init(reinterpret_cast<char *>(frame_.payload.get()) + have_,
                       static_cast<unsigned>(std::min<uint64_t>(remaining, 1u << 30)));
  }
  size_t wanted = authenticated() ? kReadBufferBytes : kHandshakeReadBytes;
  if (read_buffer_bytes_ != wanted) {
    read_buffer_.reset(new uint8_t[wanted]);
    read_buffer_bytes_ = wanted;
  }
  return uv_buf_init(reinterpret_cast<char *>(read_buffer_.get()), unsigned(wanted));
}

void Session::plaintext_landed(const uv_buf_t &buf, size_t size) {
  if (reinterpret_cast<uint8_t *>(buf.base) == read_buffer_.get()) {
    consume(reinterpret_cast<uint8_t *>(buf.base), size);
  } else {
    received_ += size;
    have_ += size;
    if (have_ == payload_wire_bytes_) frame_complete();
  }
}

void Session::on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf) {
  auto *self = static_cast<Session *>(stream->data);
  if (nread < 0) {
    self->connection_lost(nread == UV_EOF ? "client disconnected" : std::string("read failed: ") + uv_strerror(nread));
    return;
  }
  auto keep = self->shared_from_this();
  self->server_.note_activity();
  self->last_heard = uv_now(self->server_.loop());
  // What the transport refuses (a TLS record that is not authentic) ends the connection, not the
  // session: a resuming client sends again from the last byte that was authentic, and an attacker on
  // the path gains nothing a reset connection would not give.
  std::string why = self->link_->transport->received(*self, *buf, nread);
  if (!why.empty()) return self->connection_lost(why);
  self->read_done();
}

void Session::read_done() {
  run();
  acknowledge_if_due();
}

void Session::read_on() {
  if (link_ && !closing_ && !draining_ && !paused_ && !behind_background_work_ && !throttled())
    uv_read_start(link_->stream(), on_alloc, on_read);
}

void Session::consume(const uint8_t *bytes, size_t size) {
  received_ += size;
  if (unparsed_.empty()) return parse(bytes, size);
  unparsed_.append(reinterpret_cast<const char *>(bytes), size);
}

void Session::parse(const uint8_t *bytes, size_t size) {
  while (size > 0 && !closing_ && !draining_) {
    if (state_ == ReadState::header && have_ == 0 && !pending_.empty() && !authenticated()) {
      // Before the handshake is done, one frame at a time: the frame that ends it hands the
      // connection over (main process), and what follows is the worker's to read.
      unparsed_.assign(reinterpret_cast<const char *>(bytes), size);
      return;
    }
    size_t take = 0;
    switch (state_) {
      case ReadState::header: {
        take = std::min(size, sizeof header_bytes_ - have_);
        std::memcpy(header_bytes_ + have_, bytes, take);
        have_ += take;
        if (have_ < sizeof header_bytes_) break;
        std::memcpy(&frame_.header, header_bytes_, sizeof frame_.header);
        std::string problem = fedcl::frame_check(frame_.header);
        // A connection carries requests (a client session) or peer messages (a peer link), never both.
        uint16_t expected = uint16_t(role == Role::peer ? fedcl::wire::FrameKind::PEER : fedcl::wire::FrameKind::REQUEST);
        if (role == Role::undecided && frame_.header.kind == uint16_t(fedcl::wire::FrameKind::PEER)) expected = frame_.header.kind;
        if (!problem.empty() || frame_.header.kind != expected) {
          stranger_end = StrangerEnd::frame;
          close("malformed frame: " + (problem.empty() ? std::string("unexpected frame kind ") + std::to_string(frame_.header.kind) : problem));
          return;
        }
        // Before the other side has proved itself (in the main process, which hands the connection
        // to a worker once it has) it may only say small things: a stranger makes fedcld allocate
        // no more than a handshake's worth.
        if (!authenticated() && (frame_.header.message_words > kHandshakeMaxWords || frame_.header.payload_bytes != 0)) {
          stranger_end = StrangerEnd::frame;
          close("a frame of " + std::to_string(frame_.header.message_words) + " words and " +
                std::to_string(frame_.header.payload_bytes) + " payload bytes before the handshake was done");
          return;
        }
        frame_.message = kj::heapArray<capnp::word>(frame_.header.message_words);
        state_ = ReadState::message;
        have_ = 0;
        break;
      }
      case ReadState::message: {
        size_t total = frame_.message.size() * sizeof(capnp::word);
        take = std::min(size, total - have_);
        std::memcpy(reinterpret_cast<uint8_t *>(frame_.message.begin()) + have_, bytes, take);
        have_ += take;
        if (have_ < total) break;
        have_ = 0;
        payload_wire_bytes_ = frame_.header.payload_bytes + fedcl::frame_padding(frame_.header.payload_bytes);
        if (payload_wire_bytes_ == 0) {
          frame_complete();
        } else {
          std::string problem;
          frame_.payload = server_.payload_destination(*this, frame_, &problem);
          if (!problem.empty()) {
            FEDCLD_LOG(warn, "session %llu (%s): refused a payload: %s", (unsigned long long)number_, peer_.c_str(),
                       problem.c_str());
            close("refused a payload: " + problem);
            return;
          }
          if (!frame_.payload_refused.empty()) {
            state_ = ReadState::skipped_payload;
            break;
          }
          if (!frame_.payload) frame_.payload.reset(new (std::nothrow) uint8_t[payload_wire_bytes_]);
          if (!frame_.payload) {
            close("cannot allocate a payload of " + std::to_string(payload_wire_bytes_) + " bytes");
            return;
          }
          state_ = ReadState::payload;
        }
        break;
      }
      case ReadState::payload:
      case ReadState::skipped_payload: {
        take = std::min<uint64_t>(size, payload_wire_bytes_ - have_);
        if (state_ == ReadState::payload) std::memcpy(frame_.payload.get() + have_, bytes, take);
        have_ += take;
        if (have_ == payload_wire_bytes_) frame_complete();
        break;
      }
    }
    bytes += take;
    size -= take;
  }
}

void Session::frame_complete() {
  // The client's call waits until this daemon acknowledged a large payload (kept by reference).
  if (frame_.header.payload_bytes >= kAckPromptlyBytes) large_frame_read_ = true;
  pending_.push_back(std::move(frame_));
  frame_ = Frame{};
  state_ = ReadState::header;
  have_ = 0;
  payload_wire_bytes_ = 0;
}

void Session::run() {
  if (running_) return;  // execute() may resume a session from inside run()
  running_ = true;
  auto keep = shared_from_this();
  while (!paused_ && !closing_ && !draining_ && !throttled()) {
    if (pending_.empty() && !unparsed_.empty()) {
      std::string bytes = std::move(unparsed_);
      unparsed_.clear();
      parse(reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size());
    }
    if (pending_.empty()) break;
    if (background_work_ > 0 && (alone_work_ > 0 || !request_overtakes_background_work(pending_.front()))) {
      behind_background_work_ = true;
      if (link_) uv_read_stop(link_->stream());  // the client waits, as for a paused session
      break;
    }
    Frame frame = std::move(pending_.front());
    pending_.pop_front();
    try {
      server_.execute(*this, frame);
    } catch (const kj::Exception &e) {
      stranger_end = StrangerEnd::frame;
      close("malformed message: " + std::string(e.getDescription().cStr()));
    } catch (const RequestError &error) {
      // execute() answers a request's failures itself; one escaping is fedcld's bug. It ends this
      // session, not the daemon with everyone's sessions.
      FEDCLD_LOG(error, "session %s: a failure escaped its request: %s", peer().c_str(), error.message.c_str());
      close("fedcld failed internally: " + error.message);
    }
  }
  running_ = false;
  flush_queues();
  flush_notices();
}

void Session::touch_queue(uint64_t queue_id) {
  if (touched_queues_.empty() || touched_queues_.back() != queue_id) touched_queues_.push_back(queue_id);
}

void Session::flush_queues() {
  std::sort(touched_queues_.begin(), touched_queues_.end());
  touched_queues_.erase(std::unique(touched_queues_.begin(), touched_queues_.end()), touched_queues_.end());
  bool traced = fedcl::trace::on() && !touched_queues_.empty();
  if (traced) fedcl::trace::mark(fedcl::trace::Point::daemon_flush_started, peer_port_, touched_queues_.size());
  for (uint64_t id : touched_queues_)
    if (objects_.contains(id)) clFlush(objects_.handle<cl_command_queue>(id, ObjectKind::queue));
  if (traced) fedcl::trace::mark(fedcl::trace::Point::daemon_flush_ended, peer_port_, touched_queues_.size());
  touched_queues_.clear();
}

void Session::set_platform(const BackendPlatform &backend, size_t index) {
  backend_ = &backend;
  failures_keep_from_backend(backend.frees_failed_waiters);
  platform_index_ = index;
  switch (server_.options().completion) {
    case CompletionMode::callback: waits_for_events_ = false; break;
    case CompletionMode::wait: waits_for_events_ = true; break;
    case CompletionMode::automatic: waits_for_events_ = backend.late_callbacks; break;
  }
}

std::shared_ptr<uint8_t[]> Session::stage(uint64_t size) {
  uint8_t *memory = new (std::nothrow) uint8_t[size ? size : 1];
  if (!memory) return nullptr;
  staged_bytes_ += size;
  if (throttled() && link_) uv_read_stop(link_->stream());
  // The last reference goes on the loop (a written reply or a dropped completion): give the bytes
  // back and take requests again once under the limit.
  return std::shared_ptr<uint8_t[]>(memory, [self = weak_from_this(), size](uint8_t *bytes) {
    delete[] bytes;
    auto session = self.lock();
    if (!session) return;
    bool was_throttled = session->throttled();
    session->staged_bytes_ -= size;
    if (was_throttled && !session->throttled()) session->unthrottled();
  });
}

void Session::unthrottled() {
  if (closing_ || paused_ || behind_background_work_) return;
  if (link_) uv_read_start(link_->stream(), on_alloc, on_read);
  server_.post([self = weak_from_this()] {
    if (auto s = self.lock()) s->run();
  });
}

void Session::pause() {
  paused_ = true;
  if (!closing_ && link_) uv_read_stop(link_->stream());
}

void Session::resume() {
  paused_ = false;
  if (closing_) return;
  if (link_ && !behind_background_work_) uv_read_start(link_->stream(), on_alloc, on_read);
  run();
}

void Session::background_work_ended(bool alone) {
  background_work_--;
  alone_work_ -= alone;
  if (!behind_background_work_ || background_work_ > 0 || closing_) return;
  behind_background_work_ = false;
  read_on();
  run();
}

void Session::write_bytes(std::vector<uint8_t> bytes, std::shared_ptr<uint8_t[]> payload, uint64_t payload_bytes,
                          std::function<void(int status)> written, Payload kind) {
  if (closing_) {
    if (written) written(UV_ECANCELED);
    return;
  }
  // Kept until the client acknowledges them: the frame's own bytes copied, the payload (staging,
  // a transfer chunk, printf output: memory of its own) by reference, lent memory (a read's
  // page-locked slab, which goes back to its pool once written) copied.
  auto keep = [this, kind](const std::vector<uint8_t> &frame, const std::shared_ptr<uint8_t[]> &payload,
                           uint64_t payload_bytes) {
    bool was_throttled = throttled();
    sent_.append_copy(frame.data(), frame.size());
    if (payload_bytes) {
      if (kind == Payload::lent) sent_.append_copy(payload.get(), payload_bytes);
      else sent_.append_shared(payload, payload.get(), payload_bytes);
      sent_.append_copy(kZeroPadding, fedcl::frame_padding(payload_bytes));
    }
    if (was_throttled && !throttled()) unthrottled();
  };
  // A lent payload is copied once the write is under way (libuv calls back later, so the request's
  // bytes stay valid): the reply leaves first. On an H100 that copy took 50 us of NBody 4096's step
  // (64 KiB just written by the GPU), where the whole reply otherwise takes 18 us.
  bool keep_after_write = keeps_sent() && kind == Payload::lent && payload_bytes && !parked_;
  if (keeps_sent() && !keep_after_write) keep(bytes, payload, payload_bytes);
  if (parked_) {
    // Resent once the client resumes; until then, as good as written.
    if (written) written(0);
    return;
  }
  last_sent = uv_now(server_.loop());
  written_ += bytes.size() + (payload_bytes ? payload_bytes + fedcl::frame_padding(payload_bytes) : 0);
  writes_in_flight_++;
  auto *request = new WriteRequest{{}, std::move(bytes), std::move(payload), weak_from_this(), std::move(written)};
  uv_buf_t bufs[3];
  unsigned count = 0;
  bufs[count++] = uv_buf_init(reinterpret_cast<char *>(request->bytes.data()), request->bytes.size());
  // uv_buf_t lengths are 32-bit: split large payloads.
  std::vector<uv_buf_t> large;
  if (payload_bytes > 0) {
    uint64_t padding = fedcl::frame_padding(payload_bytes);
    if (payload_bytes < (1u << 30)) {
      bufs[count++] = uv_buf_init(reinterpret_cast<char *>(request->payload.get()), payload_bytes);
      if (padding) bufs[count++] = uv_buf_init(const_cast<char *>(reinterpret_cast<const char *>(kZeroPadding)), padding);
    } else {
      large.push_back(bufs[0]);
      for (uint64_t off = 0; off < payload_bytes; off += (1u << 30))
        large.push_back(uv_buf_init(reinterpret_cast<char *>(request->payload.get()) + off,
                                    std::min<uint64_t>(1u << 30, payload_bytes - off)));
      if (padding) large.push_back(uv_buf_init(const_cast<char *>(reinterpret_cast<const char *>(kZeroPadding)), padding));
    }
  }
  const uv_buf_t *list = large.empty() ? bufs : large.data();
  unsigned n = large.empty() ? count : large.size();
  int err = link_->transport->write(&request->req, list, n, [](uv_write_t *req, int status) {
    auto *request = reinterpret_cast<WriteRequest *>(req);
    auto session = request->session.lock();
    if (session) session->writes_in_flight_--;
    if (status < 0 && status != UV_ECANCELED && session)
      session->connection_lost(std::string("write failed: ") + uv_strerror(status));
    // A resumable session's bytes are resent from what it kept: the write did not fail for them.
    if (status < 0 && session && session->resumable() && !session->closing_) status = 0;
    if (request->written) request->written(status);
    delete request;
  });
  if (keep_after_write) keep(request->bytes, request->payload, payload_bytes);
  if (err != 0) {
    writes_in_flight_--;
    auto done = std::move(request->written);
    delete request;
    connection_lost(std::string("write failed: ") + uv_strerror(err));
    if (done) done(resumable() && !closing_ ? 0 : err);
  }
}

void Session::send_reply(capnp::MessageBuilder &message, std::shared_ptr<uint8_t[]> payload, uint64_t payload_bytes,
                         Payload kind) {
  // A reply never overtakes the notices that precede it; they leave in the same write (a clFinish's
  // reply and its queue's completions: one send, one wake-up of the client's receiver), unless they
  // carry printf output, which travels as their own payload.
  if (payload_bytes && shared_memory && shared_memory->slot_of(payload.get()) >= 0) {
    // Read into the slot the client named (Request.sharedReply): it takes the bytes from there.
    message.getRoot<fedcl::wire::Reply>().setSharedPayload(true);
    shared_sent += payload_bytes;
    payload.reset();
    payload_bytes = 0;
  }
  std::vector<uint8_t> bytes;
  if (printf_.empty()) append_notices(bytes);
  else flush_notices();
  fedcl::frame_append(bytes, fedcl::wire::FrameKind::REPLY, message, payload_bytes);
  write_bytes(std::move(bytes), std::move(payload), payload_bytes, nullptr, kind);
  if (fedcl::trace::on())
    fedcl::trace::mark(fedcl::trace::Point::daemon_reply_sent, peer_port_, message.getRoot<fedcl::wire::Reply>().getSeq());
}

void Session::send_status(uint64_t seq, cl_int status, const std::string &text) {
  fedcl::ScratchMessage message;
  auto reply = message.builder().initRoot<fedcl::wire::Reply>();
  reply.setSeq(seq);
  reply.setStatus(status);
  if (!text.empty()) reply.setMessage(text);
  reply.setNone();
  send_reply(message.builder());
}

void Session::send_peer(capnp::MessageBuilder &message, std::shared_ptr<uint8_t[]> payload, uint64_t payload_bytes,
                        std::function<void(int status)> written) {
  std::vector<uint8_t> bytes;
  fedcl::frame_append(bytes, fedcl::wire::FrameKind::PEER, message, payload_bytes);
  if (fedcl::trace::on())
    fedcl::trace::mark(fedcl::trace::Point::daemon_peer_sent, 0, unsigned(message.getRoot<fedcl::wire::PeerMessage>().which()));
  write_bytes(std::move(bytes), std::move(payload), payload_bytes, std::move(written));
}

namespace {

// A frame with a descriptor beside it. libuv passes only stream handles beside a write: the
// descriptor travels in a pipe handle of its own that is never read or written.
struct DescriptorWrite {
  uv_write_t req;
  uv_pipe_t holder;
  std::vector<uint8_t> bytes;
  std::weak_ptr<Session> session;
};

void discard_descriptor_write(DescriptorWrite *write) {
  uv_close(reinterpret_cast<uv_handle_t *>(&write->holder),
           [](uv_handle_t *handle) { delete static_cast<DescriptorWrite *>(handle->data); });
}

}  // namespace

bool Session::send_peer_descriptor(capnp::MessageBuilder &message, int descriptor) {
  if (!link_ || !link_->local || closing_) return false;
  auto *write = new DescriptorWrite;
  write->session = weak_from_this();
  fedcl::frame_append(write->bytes, fedcl::wire::FrameKind::PEER, message, 0);
  uv_pipe_init(server_.loop(), &write->holder, 0);
  write->holder.data = write;
  int copy = fcntl(descriptor, F_DUPFD_CLOEXEC, 0);
  if (copy < 0 || uv_pipe_open(&write->holder, copy) != 0) {
    if (copy >= 0) ::close(copy);
    discard_descriptor_write(write);
    return false;
  }
  uv_buf_t buf = uv_buf_init(reinterpret_cast<char *>(write->bytes.data()), unsigned(write->bytes.size()));
  int err = uv_write2(&write->req, link_->stream(), &buf, 1, reinterpret_cast<uv_stream_t *>(&write->holder),
                      [](uv_write_t *req, int) {
                        auto *write = reinterpret_cast<DescriptorWrite *>(req);
                        if (auto session = write->session.lock()) session->writes_in_flight_--;
                        discard_descriptor_write(write);
                      });
  if (err != 0) {
    discard_descriptor_write(write);
    return false;
  }
  writes_in_flight_++;
  written_ += write->bytes.size();
  last_sent = uv_now(server_.loop());
  return true;
}

void Session::send_transfer_chunk(uint64_t transfer, uint64_t offset, std::shared_ptr<uint8_t[]> payload,
                                  uint64_t payload_bytes, std::function<void(int status)> written) {
  capnp::MallocMessageBuilder message;
  auto chunk = message.initRoot<fedcl::wire::Notice>().initTransfer();
  chunk.setTransfer(transfer);
  chunk.setOffset(offset);
  std::vector<uint8_t> bytes;
  fedcl::frame_append(bytes, fedcl::wire::FrameKind::NOTICE, message, payload_bytes);
  write_bytes(std::move(bytes), std::move(payload), payload_bytes, std::move(written));
}

void Session::mark_dirty() {
  if (dirty_) return;
  dirty_ = true;
  if (!running_) server_.post([self = weak_from_this()] {
    if (auto session = self.lock()) session->flush_notices();
  });
}

bool Session::on_completion(uint64_t event_id, std::function<void(cl_int status)> work) {
  auto it = on_completion_.find(event_id);
  if (it == on_completion_.end()) return false;
  it->second.push_back(std::move(work));
  return true;
}

void Session::completed(uint64_t event_id, cl_int status) {
  auto it = on_completion_.find(event_id);
  if (it == on_completion_.end()) return;
  auto work = std::move(it->second);
  on_completion_.erase(it);
  for (auto &function : work) function(status);
}

void Session::notify_completion(uint64_t event, cl_int status, const uint64_t *profiling) {
  PendingCompletion completion{event, status, profiling != nullptr, {}};
  if (profiling) std::memcpy(completion.profiling, profiling, sizeof completion.profiling);
  completions_.push_back(completion);
  mark_dirty();
}

void Session::notify_error(uint64_t object, uint64_t event, cl_int status, const std::string &message,
                           cl_context context) {
  FEDCLD_LOG(debug, "session %llu: object %llu: error %d: %s", (unsigned long long)number_,
             (unsigned long long)object, status, message.c_str());
  errors_.push_back({object, event, context ? objects_.context_id(context) : 0, status, message});
  mark_dirty();
}

void Session::notify_printf(std::string bytes) {
  if (bytes.empty()) return;
  printf_ += bytes;
  mark_dirty();
}

void Session::send_heartbeat() {
  fedcl::ScratchMessage message;
  auto notice = message.builder().initRoot<fedcl::wire::Notice>();
  if (resumable()) notice.setReceived(received_told_ = received_);
  std::vector<uint8_t> bytes;
  fedcl::frame_append(bytes, fedcl::wire::FrameKind::NOTICE, message.builder(), 0);
  write_bytes(std::move(bytes), nullptr, 0);
}

void Session::flush_notices() {
  std::vector<uint8_t> bytes;
  uint64_t payload_bytes = printf_.size();
  std::shared_ptr<uint8_t[]> payload;
  if (payload_bytes) {
    auto text = std::make_shared<std::string>(std::move(printf_));
    payload = std::shared_ptr<uint8_t[]>(text, reinterpret_cast<uint8_t *>(text->data()));
    printf_.clear();
  }
  if (append_notices(bytes, payload_bytes)) write_bytes(std::move(bytes), std::move(payload), payload_bytes);
}

bool Session::append_notices(std::vector<uint8_t> &bytes, uint64_t printf_bytes) {
  dirty_ = false;
  if (completions_.empty() && errors_.empty() && printf_bytes == 0) return false;
  capnp::MallocMessageBuilder message;
  auto notice = message.initRoot<fedcl::wire::Notice>();
  auto completions = notice.initCompletions(completions_.size());
  for (size_t i = 0; i < completions_.size(); i++) {
    const PendingCompletion &c = completions_[i];
    completions[i].setEvent(c.event);
    completions[i].setStatus(c.status);
    if (c.has_profiling) {
      auto times = completions[i].initProfiling(4);
      for (unsigned t = 0; t < 4; t++) times.set(t, c.profiling[t]);
    }
  }
  auto errors = notice.initErrors(errors_.size());
  for (size_t i = 0; i < errors_.size(); i++) {
    errors[i].setObject(errors_[i].object);
    errors[i].setEvent(errors_[i].event);
    errors[i].setStatus(errors_[i].status);
    errors[i].setMessage(errors_[i].message);
    errors[i].setContext(errors_[i].context);
  }
  completions_.clear();
  errors_.clear();
  if (resumable()) notice.setReceived(received_told_ = received_);
  // Kernel printf output travels as the frame's payload, straight from the string that collected it.
  if (printf_bytes) notice.setPrintfBytes(printf_bytes);
  fedcl::frame_append(bytes, fedcl::wire::FrameKind::NOTICE, message, printf_bytes);
  return true;
}

}  // namespace fedcld
