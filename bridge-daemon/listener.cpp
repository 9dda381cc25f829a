#include "listener.h"

#include <malloc.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <capnp/message.h>

#include <algorithm>
#include <cstdlib>

#include "control_channel.h"
#include "host_identity.h"
#include "log.h"
#include "metrics_text.h"
#include "worker_board.h"

namespace fedcld {

namespace wire = fedcl::wire;

// The handshake's requests (exec_handshake.cpp).
void execute_handshake(Listener &listener, Session &session, Frame &frame);

namespace {

int bind_to(uv_tcp_t *listener, const std::string &host, int port) {
  sockaddr_storage addr{};
  int err = uv_ip4_addr(host.c_str(), port, reinterpret_cast<sockaddr_in *>(&addr));
  if (err != 0) err = uv_ip6_addr(host.c_str(), port, reinterpret_cast<sockaddr_in6 *>(&addr));
  return err != 0 ? err : uv_tcp_bind(listener, reinterpret_cast<sockaddr *>(&addr), 0);
}

constexpr uint64_t kListenerTickMs = 1000;
// Connections the kernel queues for accept (capped by net.core.somaxconn). With 128, a flood's
// connections filled the queue and an honest client's SYN was dropped: its session started after
// the SYN's first retransmission, a second later (bench/flood_bench.cpp, 10,000 connections).
constexpr int kListenBacklog = 4096;
// Connections accepted per turn of the loop: the rest wait for the next turn, so that the loop reads
// what the connections already accepted sent (an honest client's Hello) between batches. Accepting
// the whole queue at once, 4096 deep, let a flood's burst push out an honest connection accepted in
// the same burst before its Hello was read.
constexpr unsigned kAcceptsPerTurn = 128;
// The heap is given back to the system (malloc_trim) once this many strangers came and went and at
// most kTrimBelow connections remain: what a flood's connections held is free then, but glibc keeps
// it (their buffers were freed between the allocations of others, so the heap's top cannot shrink).
constexpr size_t kTrimAfterStrangers = 256;
constexpr size_t kTrimBelow = 64;

rlim_t open_file_limit() {
  rlimit files{};
  return getrlimit(RLIMIT_NOFILE, &files) == 0 ? files.rlim_cur : 1024;
}

// A hand-over waiting for what the main process wrote to the connection to leave first.
struct PendingHandOff {
  uv_timer_t timer;
  std::function<void()> go;
};

// Runs go once everything the main process wrote to session's connection has left (the socket may
// move only then; writes are reported done a loop pass or more after they were handed to libuv), or
// once the connection closed.
void when_written(uv_loop_t *loop, std::shared_ptr<Session> session, std::function<void()> go) {
  if (session->closed() || session->writes_done()) return go();
  auto *pending = new PendingHandOff{{}, [loop, session, go = std::move(go)]() mutable { when_written(loop, session, std::move(go)); }};
  uv_timer_init(loop, &pending->timer);
  pending->timer.data = pending;
  uv_timer_start(&pending->timer, [](uv_timer_t *timer) {
    auto *pending = static_cast<PendingHandOff *>(timer->data);
    pending->go();
    uv_close(reinterpret_cast<uv_handle_t *>(timer), [](uv_handle_t *h) { delete static_cast<PendingHandOff *>(h->data); });
  }, 1, 0);
}

// Whether a process listens at the Unix socket path (a socket left by a daemon that was killed
// does not: connecting is refused).
bool someone_listens(const std::string &path) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un at{};
  at.sun_family = AF_UNIX;
  std::snprintf(at.sun_path, sizeof at.sun_path, "%s", path.c_str());
  bool listening = connect(fd, reinterpret_cast<sockaddr *>(&at), sizeof at) == 0 || errno != ECONNREFUSED;
  ::close(fd);
  return listening;
}

// --local-socket auto: beside the unit's runtime folder, else in the temporary one; named by the
// port, so that daemons of one host (tests start many) never meet.
std::string automatic_local_socket(int port) {
  std::string folder;
  if (const char *runtime = std::getenv("RUNTIME_DIRECTORY")) folder = std::string(runtime).substr(0, std::string(runtime).find(':'));
  if (folder.empty()) folder = std::getenv("TMPDIR") && *std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp";
  return folder + "/fedcld-" + std::to_string(port) + ".sock";
}

}  // namespace

Listener::Listener(uv_loop_t *loop, DaemonSettings settings)
    : Server(loop, settings.server, random_id()),
      settings_(std::move(settings)),
      keys_(settings_.server.key, settings_.server.key_list),
      handshakes_(handshake_caps(settings_.server, open_file_limit())),
      metrics_(loop, [this] { return metrics_exposition(*this); }),
      node_files_(loop, settings_.server.file_root, [this](uint64_t id, std::string *user, NodeOwner *account) {
        const Worker *worker = workers_.by_id(id);
        if (!worker || worker->state != Worker::State::serving || worker->token == 0) return false;
        *user = worker->user;
        *account = {worker->account.uid, worker->account.gid};
        return true;
      }) {
  for (const std::string &alias : options_.aliases) names_.add(alias);
  if (!options_.node.empty()) names_.add(options_.node);  // --name
  if (!options_.peer_address.empty()) names_.add(fedcl::tls_host_of(options_.peer_address));
  uv_tcp_init(loop, &listener_);
  listener_.data = this;
  uv_signal_init(loop, &sigint_);
  uv_signal_init(loop, &sigterm_);
  sigint_.data = sigterm_.data = this;
  uv_timer_init(loop, &tick_);
  tick_.data = this;
  uv_check_init(loop, &turn_end_);
  turn_end_.data = this;
}

Listener::~Listener() = default;

std::string Listener::setup_tls() {
  std::string why = tls_.setup(options_, keys_);
  for (const std::string &name : tls_.certificate_names()) names_.add(name);
  return why;
}

std::string Listener::enumerate() {
  bool done = false;
  std::string problem;
  workers_.enumerate([&](std::vector<BackendPlatform> platforms, const std::string &why) {
    done = true;
    problem = why;
    platforms_ = std::move(platforms);
  });
  while (!done) uv_run(loop(), UV_RUN_ONCE);
  return problem;
}

int Listener::bind() {
  int err = bind_to(&listener_, options_.host, options_.port);
  if (err == 0 && !options_.peer_address.empty()) {
    // Peers may use a network of their own (a cluster's data network): listen there as well.
    size_t colon = options_.peer_address.rfind(':');
    std::string host = options_.peer_address.substr(0, colon);
    if (host.size() > 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
    int port = std::atoi(options_.peer_address.c_str() + colon + 1);
    uv_tcp_init(loop(), &peer_listener_);
    peer_listener_.data = this;
    peer_listening_ = true;
    err = bind_to(&peer_listener_, host, port);
  }
  if (err != 0) return err;
  if (options_.node.empty()) {
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    options_.node = std::string(host) + ":" + std::to_string(port());
  }
  settings_.server.host_identity = options_.host_identity = fedcl::host_identity();
  std::string asked = options_.local_socket;
  std::string why = bind_local();
  if (why.empty()) return 0;
  settings_.server.local_socket = options_.local_socket = "";
  if (asked != "auto") {
    FEDCLD_LOG(error, "--local-socket %s: %s", asked.c_str(), why.c_str());
    return UV_EADDRINUSE;
  }
  FEDCLD_LOG(warn, "no local socket (programs of this host reach this daemon over TCP): %s", why.c_str());
  return 0;
}

std::string Listener::bind_local() {
  if (options_.local_socket.empty()) return {};
  std::string path = options_.local_socket == "auto" ? automatic_local_socket(port()) : options_.local_socket;
  if (path.size() >= sizeof(sockaddr_un::sun_path)) return path + " is longer than a Unix socket's path may be";
  // The socket must stay this daemon's: in a folder every user may write to, only the sticky bit
  // (/tmp's) keeps another user from removing it and putting a socket of their own in its place.
  size_t slash = path.rfind('/');
  std::string folder = slash == std::string::npos ? "." : path.substr(0, slash == 0 ? 1 : slash);
  struct stat in {};
  if (stat(folder.c_str(), &in) == 0 && (in.st_mode & S_IWOTH) && !(in.st_mode & S_ISVTX))
    return path + ": every user may write to " + folder + " and it is not sticky: another user could replace the socket";
  uv_pipe_init(loop(), &local_listener_, 0);
  local_listener_.data = this;
  int err = uv_pipe_bind(&local_listener_, path.c_str());
  struct stat st {};
  if (err == UV_EADDRINUSE && lstat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode) && st.st_uid == geteuid() &&
      !someone_listens(path)) {
    // A socket a killed daemon of this user left. Anything else there (another user's socket, a
    // link, a file) is neither removed nor followed: the daemon goes without (auto) or stops.
    unlink(path.c_str());
    err = uv_pipe_bind(&local_listener_, path.c_str());
  }
  if (err == 0) err = uv_pipe_chmod(&local_listener_, UV_READABLE | UV_WRITABLE);  // every user's programs: keys decide
  if (err != 0) {
    uv_close(reinterpret_cast<uv_handle_t *>(&local_listener_), nullptr);
    return path + ": " + uv_strerror(err);
  }
  local_socket_ = path;
  // What workers tell clients in HelloReply.
  settings_.server.local_socket = options_.local_socket = path;
  return {};
}

int Listener::listen() {
  int err = uv_listen(reinterpret_cast<uv_stream_t *>(&listener_), kListenBacklog, on_connection);
  if (err == 0 && peer_listening_) err = uv_listen(reinterpret_cast<uv_stream_t *>(&peer_listener_), kListenBacklog, on_connection);
  if (err == 0 && !local_socket_.empty()) err = uv_listen(reinterpret_cast<uv_stream_t *>(&local_listener_), kListenBacklog, on_connection);
  if (err != 0) return err;
  start_watch();
  keys_.watch(loop());
  peers_.start();
  uv_signal_start(&sigint_, on_signal, SIGINT);
  uv_signal_start(&sigterm_, on_signal, SIGTERM);
  uv_timer_start(&tick_, [](uv_timer_t *timer) { static_cast<Listener *>(timer->data)->tick(); }, kListenerTickMs, kListenerTickMs);
  uv_unref(reinterpret_cast<uv_handle_t *>(&tick_));
  uv_check_start(&turn_end_, [](uv_check_t *check) { static_cast<Listener *>(check->data)->turn_ended(); });
  uv_unref(reinterpret_cast<uv_handle_t *>(&turn_end_));
  const HandshakeCaps &caps = handshakes_.caps();
  FEDCLD_LOG(info, "open files: %llu; handshakes at once: %zu, %zu per address (%zu descriptors kept for %zu sessions and the rest)",
             (unsigned long long)open_file_limit(), caps.total, caps.per_address, caps.reserved, options_.max_sessions);
  if (caps.total + caps.reserved > open_file_limit())
    FEDCLD_LOG(warn, "the open-file limit (%llu) is too low for %zu sessions and %zu handshakes at once: raise it (LimitNOFILE) "
                     "or lower --max-sessions or --max-handshakes", (unsigned long long)open_file_limit(), options_.max_sessions, caps.total);
  workers_.start();
  return 0;
}

int Listener::listen_metrics(const std::string &host, int port) { return metrics_.listen(host, port); }

int Listener::port() const {
  sockaddr_storage addr{};
  int len = sizeof addr;
  if (uv_tcp_getsockname(&listener_, reinterpret_cast<sockaddr *>(&addr), &len) != 0) return options_.port;
  return ntohs(reinterpret_cast<sockaddr_in *>(&addr)->sin_port);
}

void Listener::close() {
  Server::close();
  uv_close(reinterpret_cast<uv_handle_t *>(&listener_), nullptr);
  if (peer_listening_) uv_close(reinterpret_cast<uv_handle_t *>(&peer_listener_), nullptr);
  if (!local_socket_.empty()) {
    uv_close(reinterpret_cast<uv_handle_t *>(&local_listener_), nullptr);
    unlink(local_socket_.c_str());
  }
  uv_close(reinterpret_cast<uv_handle_t *>(&sigint_), nullptr);
  uv_close(reinterpret_cast<uv_handle_t *>(&sigterm_), nullptr);
  uv_close(reinterpret_cast<uv_handle_t *>(&tick_), nullptr);
  uv_close(reinterpret_cast<uv_handle_t *>(&turn_end_), nullptr);
  deferred_accepts_.clear();
  for (const StrangerLog::Line &line : stranger_log_.ended(uv_now(loop()), true))
    if (log_enabled(line.level)) log_write(line.level, "%s", line.text.c_str());
  peers_.close();
  keys_.close();
  metrics_.close();
  workers_.close();  // the loop ends once they have
}

void Listener::on_signal(uv_signal_t *signal, int signum) {
  auto *self = static_cast<Listener *>(signal->data);
  FEDCLD_LOG(info, "signal %d: shutting down", signum);
  self->close();
}

void Listener::on_connection(uv_stream_t *listener, int status) {
  auto *self = static_cast<Listener *>(listener->data);
  if (status < 0) {
    // Out of descriptors, say (libuv then accepts and closes what waits, so that the backlog
    // drains): a line per interval, not per connection.
    uint64_t now = uv_now(self->loop());
    if (self->accept_failure_logged_ && now - self->accept_failure_logged_ < StrangerLog::kIntervalMs) {
      self->accept_failures_++;
      return;
    }
    FEDCLD_LOG(warn, "accept: %s%s", uv_strerror(status),
               self->accept_failures_ ? (" (and " + std::to_string(self->accept_failures_) + " more before)").c_str() : "");
    self->accept_failure_logged_ = now;
    self->accept_failures_ = 0;
    return;
  }
  if (self->accepted_this_turn_ >= kAcceptsPerTurn) {
    // libuv keeps the connection and stops watching the listener until it is accepted (turn_ended).
    if (std::find(self->deferred_accepts_.begin(), self->deferred_accepts_.end(), listener) == self->deferred_accepts_.end())
      self->deferred_accepts_.push_back(listener);
    return;
  }
  self->accept_from(listener);
}

void Listener::turn_ended() {
  accepted_this_turn_ = 0;
  std::vector<uv_stream_t *> deferred;
  deferred.swap(deferred_accepts_);
  for (uv_stream_t *listener : deferred) accept_from(listener);  // watching the listener again
}

void Listener::accept_from(uv_stream_t *listener) {
  accepted_this_turn_++;
  auto session = add_session();
  if (session->start(listener) != 0) return;
  FEDCLD_LOG(debug, "connection %llu from %s", (unsigned long long)session->number(), session->peer().c_str());
  session->stranger = true;
  session->handshake_deadline = session->opened_at + kProofDeadlineMs - deadline_jitter_() % kProofDeadlineJitterMs;
  admitted_since_trim_++;
  const HandshakeCaps &caps = handshakes_.caps();
  for (uint64_t number : handshakes_.admit(session->number(), session->address_key())) {
    std::shared_ptr<Session> pushed_out = this->session(number);
    if (!pushed_out) continue;
    counters_.pushed_out();
    pushed_out->stranger_end = StrangerEnd::over_cap;
    pushed_out->close("closed to make room for a newer handshake (at most " + std::to_string(caps.total) + " at once, " +
                      std::to_string(caps.per_address) + " per address: --max-handshakes, --max-handshakes-per-address)");
  }
}

void Listener::verified(Session &session) {
  if (!session.stranger) return;
  session.stranger = false;
  session.handshake_deadline = 0;
  handshakes_.leave(session.number());
}

void Listener::log_stranger_end(Session &session, StrangerEnd end, const std::string &why) {
  session.end_logged = true;
  if (!stranger_log_.note(session.address_key(), end, uv_now(loop()))) return;
  LogLevel level = stranger_end_level(end);
  bool closed = end == StrangerEnd::over_cap || end == StrangerEnd::deadline || end == StrangerEnd::gone;
  if (log_enabled(level))
    log_write(level, "connection %llu (%s) %s: %s", (unsigned long long)session.number(), session.peer().c_str(),
              closed ? "closed" : "refused", why.c_str());
}

void Listener::at_turn(Session &session, uint64_t at, std::function<void(Session &)> then) {
  uint64_t now = uv_now(loop());
  if (at <= now) return then(session);
  struct Wait {
    uv_timer_t timer;
    std::weak_ptr<Session> session;
    std::function<void(Session &)> then;
  };
  auto *wait = new Wait{{}, session.shared_from_this(), std::move(then)};
  uv_timer_init(loop(), &wait->timer);
  wait->timer.data = wait;
  uv_timer_start(&wait->timer, [](uv_timer_t *timer) {
    auto *wait = static_cast<Wait *>(timer->data);
    if (auto session = wait->session.lock(); session && !session->closed()) wait->then(*session);
    uv_close(reinterpret_cast<uv_handle_t *>(timer), [](uv_handle_t *h) { delete static_cast<Wait *>(h->data); });
  }, at - now, 0);
  uv_unref(reinterpret_cast<uv_handle_t *>(&wait->timer));  // a stopping daemon does not wait for a refusal's turn
}

void Listener::tick() {
  uint64_t now = uv_now(loop());
  for (const StrangerLog::Line &line : stranger_log_.ended(now))
    if (log_enabled(line.level)) log_write(line.level, "%s", line.text.c_str());
  if (accept_failures_ && now - accept_failure_logged_ >= StrangerLog::kIntervalMs) {
    FEDCLD_LOG(warn, "accept: %llu more failures", (unsigned long long)accept_failures_);
    accept_failures_ = 0;
    accept_failure_logged_ = now;
  }
  // connections() counts those still closing: their memory is free only once they are gone.
  if (admitted_since_trim_ >= kTrimAfterStrangers && connections() <= kTrimBelow) {
    malloc_trim(0);
    admitted_since_trim_ = 0;
  }
}

void Listener::execute(Session &session, Frame &frame) {
  LogScope scope({session.number(), session.handshake.identity, session.peer()});
  if (session.stranger) handshakes_.spoke(session.number());
  if (frame.header.kind == uint16_t(wire::FrameKind::PEER)) return peers_.receive(session, frame);
  execute_handshake(*this, session, frame);
}

void Listener::connection_closed(Session &session, const std::string &reason) {
  peers_.link_closed(session, reason);
  if (!session.stranger) return;
  handshakes_.leave(session.number());
  if (!session.end_logged) log_stranger_end(session, session.stranger_end, reason);
}

void Listener::answer_refusal(Session &session, uint64_t seq, cl_int status, const std::string &why) {
  counters_.refused(status);
  session.end_logged = true;
  session.send_status(seq, status, "fedcld refused the session: " + why);
  session.close_after_writes("refused");
}

void Listener::refuse(Session &session, uint64_t seq, cl_int status, const std::string &why) {
  LogScope scope({session.number(), session.handshake.identity, session.peer()});
  FEDCLD_LOG(warn, "connection %llu (%s) refused: %s", (unsigned long long)session.number(), session.peer().c_str(), why.c_str());
  answer_refusal(session, seq, status, why);
}

void Listener::refuse_stranger(Session &session, uint64_t seq, StrangerEnd end, const std::string &why) {
  LogScope scope({session.number(), session.handshake.identity, session.peer()});
  log_stranger_end(session, end, why);
  answer_refusal(session, seq, CL_INVALID_PLATFORM, why);
}

void Listener::start_session(Session &session, uint64_t seq, const fedcl::Proof *proof) {
  const Session::Handshake &handshake = session.handshake;
  if (handshake.platform >= platforms_.size())
    return refuse(session, seq, CL_INVALID_PLATFORM, "fedcld exports " + std::to_string(platforms_.size()) +
                                                         " platform(s), not platform " + std::to_string(handshake.platform));
  if (workers_.session_count() >= options_.max_sessions)
    return refuse(session, seq, CL_OUT_OF_RESOURCES, "too many sessions (limit " + std::to_string(options_.max_sessions) + ")");
  LocalAccount account;
  if (options_.session_accounts) {
    std::string why = local_account(handshake.identity, &account);
    if (!why.empty()) return refuse(session, seq, CL_INVALID_PLATFORM, why);
  }
  session.pause();
  std::weak_ptr<Session> weak = session.weak_from_this();
  std::shared_ptr<fedcl::Proof> daemon_proof = proof ? std::make_shared<fedcl::Proof>(*proof) : nullptr;
  auto got = [this, weak, seq, daemon_proof](Worker *worker, const std::string &why) {
    auto session = weak.lock();
    if (!session || session->closed()) {
      if (worker) workers_.unused(*worker);
      return;
    }
    if (!worker) return refuse(*session, seq, CL_OUT_OF_RESOURCES, why);
    const Session::Handshake &handshake = session->handshake;
    worker->number = session->number();
    worker->client = handshake.client;
    worker->address = session->peer();
    worker->user = handshake.identity;
    worker->platform = handshake.platform;
    uint64_t token;
    do token = random_id();
    while (workers_.by_token(token));
    worker->token = token;
    if (options_.resume_window_ms > 0) {
      fedcl::Nonce random = fedcl::fresh_nonce();
      worker->resume_token.assign(reinterpret_cast<const char *>(random.data()), 16);  // 128 random bits
    }
    workers_.serving(*worker);
    // A local session's address is who the kernel says connected (uid and pid): beside the user
    // the key proved, for the administrator's eyes.
    FEDCLD_LOG(info, "session %llu: client %s%s%s, from %s, platform %u, in worker %d", (unsigned long long)worker->number,
               log_quote(worker->client).c_str(), worker->user.empty() ? "" : ", user ",
               worker->user.empty() ? "" : log_quote(worker->user).c_str(), worker->address.c_str(), worker->platform,
               worker->pid);
    std::string peer_address = peer_address_for(*session);
    fedcl::Proof tag{}, socket_tag{};
    bool tagged = !daemons_key().empty() && !peer_address.empty();
    if (tagged) tag = fedcl::peer_address_tag(daemons_key().view(), instance(), peer_address);
    // The local socket's own tag: a client may not make a daemon of this host dial any socket it names.
    bool socket_tagged = !daemons_key().empty() && !local_socket_.empty();
    if (socket_tagged) socket_tag = fedcl::local_socket_tag(daemons_key().view(), instance(), local_socket_);
    hand_off(*session, *worker, [worker, seq, daemon_proof, peer_address, tag, tagged, socket_tag,
                                 socket_tagged](wire::WorkerMessage::Builder message) {
      auto take = message.initTakeSession();
      take.setSeq(seq);
      take.setClient(worker->client);
      take.setUser(worker->user);
      take.setPlatform(worker->platform);
      if (daemon_proof) take.setProof(fedcl::as_data(*daemon_proof));
      take.setSessionToken(worker->token);
      take.setResumeToken(capnp::Data::Reader(reinterpret_cast<const uint8_t *>(worker->resume_token.data()),
                                              worker->resume_token.size()));
      take.setNumber(worker->number);
      take.setPeerAddress(peer_address);
      if (tagged) take.setPeerAddressTag(fedcl::as_data(tag));
      if (socket_tagged) take.setLocalSocketTag(fedcl::as_data(socket_tag));
      return take.initConnection();
    });
  };
  if (account.uid) workers_.take_for(account, std::move(got));
  else workers_.take(std::move(got));
}

std::string Listener::peer_address_for(Session &session) {
  if (!options_.peer_address.empty()) return options_.peer_address;
  const std::string &host = session.handshake.daemon;
  if (host.empty()) return {};  // the client then gives its peers the address it dialled, untagged
  // The port the client reached (this daemon's, unless a listener of another port took it); a
  // local session's client reached the local socket, having dialled this daemon's port first.
  sockaddr_storage addr{};
  int len = sizeof addr;
  int port = this->port();
  if (!session.local() && uv_tcp_getsockname(reinterpret_cast<uv_tcp_t *>(session.stream()), reinterpret_cast<sockaddr *>(&addr), &len) == 0)
    port = ntohs(reinterpret_cast<sockaddr_in *>(&addr)->sin_port);  // same place in IPv6
  bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

void Listener::resume_session(Session &session, uint64_t seq, const fedcl::Proof *proof) {
  const Session::Handshake &handshake = session.handshake;
  Worker *worker = workers_.by_resume_token(handshake.resume_token);
  if (!worker) {
    std::string death = workers_.death_of(handshake.resume_token);
    return refuse(session, seq, CL_DEVICE_NOT_AVAILABLE,
                  death.empty() ? "the session cannot be resumed: this fedcld has no such session (it was restarted, "
                                  "or the resume window passed)"
                                : "the session cannot be resumed: " + death);
  }
  if (worker->user != handshake.identity)
    return refuse(session, seq, CL_INVALID_PLATFORM, "the session to resume belongs to another user");
  std::shared_ptr<fedcl::Proof> daemon_proof = proof ? std::make_shared<fedcl::Proof>(*proof) : nullptr;
  uint64_t received = handshake.resume_received;
  hand_off(session, *worker, [seq, received, daemon_proof](wire::WorkerMessage::Builder message) {
    auto resume = message.initResumeSession();
    resume.setSeq(seq);
    resume.setReceived(received);
    if (daemon_proof) resume.setProof(fedcl::as_data(*daemon_proof));
    return resume.initConnection();
  });
}

void Listener::hand_off(Session &session, Worker &worker, Fill fill, std::function<void(bool)> sent) {
  session.pause();
  auto held = session.shared_from_this();
  uint64_t worker_id = worker.id;
  when_written(loop(), held, [this, held, worker_id, fill = std::move(fill), sent = std::move(sent)] {
    Worker *worker = workers_.by_id(worker_id);
    if (held->closed() || !worker || !worker->channel) {
      if (!held->closed()) held->close("its session worker ended before it could take the connection");
      if (sent) sent(false);
      return;
    }
    capnp::MallocMessageBuilder message;
    held->hand_over(fill(message.initRoot<wire::WorkerMessage>()));
    worker->channel->send(message, held->stream(), [held, sent](int status) {
      // The worker has its own copy of the socket now: this one closes without a word to the peer.
      held->end_handed_over(status == 0 ? "" : std::string("cannot hand the connection over: ") + uv_strerror(status));
      if (sent) sent(status == 0);
    });
  });
}

}  // namespace fedcld
