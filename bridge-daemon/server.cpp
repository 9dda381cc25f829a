#include "server.h"

#include <unistd.h>

#include <cstdlib>
#include <thread>

#include "log.h"
#include "session.h"

namespace fedcld {

namespace {
// A session that was sent nothing for this long gets a heartbeat, checked as often: at most twice
// this without a word, which must stay well inside the shortest silence a client accepts (2 s,
// FEDCL_DAEMON_TIMEOUT). With 1 s, the silence reached 2 s during a long NVIDIA build and a client
// set to 2 s gave a healthy daemon up.
constexpr uint64_t kHeartbeatMs = 500;
// A connection that has not finished its handshake by then is dropped: strangers cannot hold
// session slots (--max-sessions) by connecting and saying nothing.
constexpr uint64_t kHandshakeTimeoutMs = 10000;

std::chrono::microseconds busy_poll_for(long option) {
  if (option >= 0) return std::chrono::microseconds(option);
  // Polling pays where a core is free for it; on a machine of 2 or 3 the backend (a CPU device, say)
  // needs them all.
  // 1 ms spans a short kernel and a client's turn-around; a sleeping thread's wake-up costs 25-30 us
  // on a virtual GPU node.
  return std::chrono::microseconds(std::thread::hardware_concurrency() >= 4 ? 1000 : 0);
}
}  // namespace

Server::Server(uv_loop_t *loop, ServerOptions options, std::vector<BackendPlatform> platforms)
    : loop_(loop), options_(std::move(options)), busy_poll_(busy_poll_for(options_.busy_poll_us)),
      platforms_(std::move(platforms)) {
  uv_tcp_init(loop_, &listener_);
  listener_.data = this;
  uv_async_init(loop_, &wakeup_, on_async);
  wakeup_.data = this;
  uv_timer_init(loop_, &watch_timer_);
  watch_timer_.data = this;
  uv_signal_init(loop_, &sigint_);
  uv_signal_init(loop_, &sigterm_);
  sigint_.data = sigterm_.data = this;
}

Server::~Server() = default;

namespace {
int listen_on(uv_tcp_t *listener, const std::string &host, int port, uv_connection_cb on_connection) {
  sockaddr_storage addr{};
  int err = uv_ip4_addr(host.c_str(), port, reinterpret_cast<sockaddr_in *>(&addr));
  if (err != 0) err = uv_ip6_addr(host.c_str(), port, reinterpret_cast<sockaddr_in6 *>(&addr));
  if (err != 0) return err;
  err = uv_tcp_bind(listener, reinterpret_cast<sockaddr *>(&addr), 0);
  if (err == 0) err = uv_listen(reinterpret_cast<uv_stream_t *>(listener), 128, on_connection);
  return err;
}
}  // namespace

int Server::listen() {
  int err = listen_on(&listener_, options_.host, options_.port, on_connection);
  if (err == 0 && !options_.peer_address.empty()) {
    // Peers may use a network of their own (a cluster's data network): listen there as well.
    size_t colon = options_.peer_address.rfind(':');
    std::string host = options_.peer_address.substr(0, colon);
    if (host.size() > 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
    int port = std::atoi(options_.peer_address.c_str() + colon + 1);
    uv_tcp_init(loop_, &peer_listener_);
    peer_listener_.data = this;
    peer_listening_ = true;
    err = listen_on(&peer_listener_, host, port, on_connection);
  }
  if (err == 0) {
    peers_.start();
    uv_timer_start(&watch_timer_, [](uv_timer_t *timer) { static_cast<Server *>(timer->data)->watch_sessions(); },
                   kHeartbeatMs, kHeartbeatMs);
    uv_unref(reinterpret_cast<uv_handle_t *>(&watch_timer_));  // it alone must not keep the loop running
    if (options_.node.empty()) {
      char host[256] = {};
      gethostname(host, sizeof host - 1);
      options_.node = std::string(host) + ":" + std::to_string(port());
    }
    uv_signal_start(&sigint_, on_signal, SIGINT);
    uv_signal_start(&sigterm_, on_signal, SIGTERM);
  }
  return err;
}

int Server::port() const {
  sockaddr_storage addr{};
  int len = sizeof addr;
  if (uv_tcp_getsockname(&listener_, reinterpret_cast<sockaddr *>(&addr), &len) != 0) return options_.port;
  return ntohs(reinterpret_cast<sockaddr_in *>(&addr)->sin_port);
}

void Server::close() {
  for (auto &entry : std::unordered_map<uint64_t, std::shared_ptr<Session>>(sessions_))
    entry.second->close("daemon shutting down");
  uv_close(reinterpret_cast<uv_handle_t *>(&listener_), nullptr);
  if (peer_listening_) uv_close(reinterpret_cast<uv_handle_t *>(&peer_listener_), nullptr);
  peers_.close();
  uv_close(reinterpret_cast<uv_handle_t *>(&wakeup_), nullptr);
  uv_close(reinterpret_cast<uv_handle_t *>(&watch_timer_), nullptr);
  uv_close(reinterpret_cast<uv_handle_t *>(&sigint_), nullptr);
  uv_close(reinterpret_cast<uv_handle_t *>(&sigterm_), nullptr);
}

void Server::on_signal(uv_signal_t *signal, int signum) {
  auto *self = static_cast<Server *>(signal->data);
  FEDCLD_LOG(info, "signal %d: shutting down", signum);
  self->close();
}

void Server::on_connection(uv_stream_t *listener, int status) {
  auto *self = static_cast<Server *>(listener->data);
  if (status < 0) {
    FEDCLD_LOG(warn, "accept: %s", uv_strerror(status));
    return;
  }
  auto session = self->add_session();
  uint64_t number = session->number();
  if (session->start(listener) != 0) return;
  if (self->sessions_.size() > self->options_.max_sessions) {
    session->close("too many sessions (limit " + std::to_string(self->options_.max_sessions) + ")");
    return;
  }
  FEDCLD_LOG(info, "session %llu: connection from %s", (unsigned long long)number, session->peer().c_str());
}

void Server::watch_sessions() {
  uint64_t now = uv_now(loop_);
  std::vector<std::shared_ptr<Session>> late;
  for (auto &[number, session] : sessions_) {
    if (session->closed()) continue;
    if (!session->authenticated() && now - session->opened_at > kHandshakeTimeoutMs)
      late.push_back(session);
    else if (session->greeted && now - session->last_sent >= kHeartbeatMs)
      session->send_heartbeat();
  }
  for (auto &session : late) session->close("no handshake within " + std::to_string(kHandshakeTimeoutMs / 1000) + " s");
}

std::shared_ptr<Session> Server::add_session() {
  uint64_t number = next_session_++;
  auto session = std::make_shared<Session>(*this, number);
  sessions_.emplace(number, session);
  return session;
}

void Server::session_closed(uint64_t number) {
  auto it = sessions_.find(number);
  if (it == sessions_.end()) return;
  if (it->second->token) tokens_.erase(it->second->token);
  sessions_.erase(it);
}

uint64_t Server::register_token(Session &session) {
  uint64_t token;
  do token = random_id();
  while (tokens_.count(token));
  tokens_.emplace(token, session.weak_from_this());
  return token;
}

std::shared_ptr<Session> Server::session_by_token(uint64_t token) const {
  auto it = tokens_.find(token);
  return it == tokens_.end() ? nullptr : it->second.lock();
}

std::vector<std::shared_ptr<Session>> Server::client_sessions() const {
  std::vector<std::shared_ptr<Session>> found;
  for (const auto &entry : sessions_)
    if (entry.second->role == Session::Role::client && !entry.second->closed()) found.push_back(entry.second);
  return found;
}

void Server::run() {
  for (;;) {
    if (uv_run(loop_, UV_RUN_ONCE) == 0) return;  // sleeps until something happens
    if (busy_poll_.count() == 0) continue;
    set_polling(true);
    auto until = std::chrono::steady_clock::now() + busy_poll_;
    for (;;) {
      uint64_t before = activity_;
      if (uv_run(loop_, UV_RUN_NOWAIT) == 0) return set_polling(false), void();
      run_posted();
      if (activity_ != before) {
        until = std::chrono::steady_clock::now() + busy_poll_;
        continue;
      }
      if (std::chrono::steady_clock::now() < until) continue;
      if (!set_polling(false)) break;
      set_polling(true);  // a task came as polling ended: run it and poll on
    }
  }
}

bool Server::set_polling(bool polling) {
  std::lock_guard<std::mutex> lock(posted_mutex_);
  polling_ = polling;
  return !posted_.empty();
}

void Server::post(std::function<void()> task) {
  bool wake;
  {
    std::lock_guard<std::mutex> lock(posted_mutex_);
    posted_.push_back(std::move(task));
    wake = !polling_;  // a polling loop finds the task itself
  }
  if (wake) uv_async_send(&wakeup_);
}

void Server::on_async(uv_async_t *async) { static_cast<Server *>(async->data)->run_posted(); }

void Server::run_posted() {
  std::vector<std::function<void()>> tasks;
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(posted_mutex_);
      tasks.swap(posted_);
    }
    if (tasks.empty()) return;
    note_activity();
    for (auto &task : tasks) {
      // A task answers its own failures; one escaping is fedcld's bug, which must not end the daemon.
      try {
        task();
      } catch (const RequestError &error) {
        FEDCLD_LOG(error, "a failure escaped fedcld's work on the loop: %s", error.message.c_str());
      }
    }
    tasks.clear();
  }
}

}  // namespace fedcld
