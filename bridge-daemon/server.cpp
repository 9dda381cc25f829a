#include "server.h"

#include <unistd.h>

#include "log.h"
#include "session.h"

namespace fedcld {

Server::Server(uv_loop_t *loop, ServerOptions options, std::vector<BackendPlatform> platforms)
    : loop_(loop), options_(std::move(options)), platforms_(std::move(platforms)) {
  uv_tcp_init(loop_, &listener_);
  listener_.data = this;
  uv_async_init(loop_, &wakeup_, on_async);
  wakeup_.data = this;
  uv_signal_init(loop_, &sigint_);
  uv_signal_init(loop_, &sigterm_);
  sigint_.data = sigterm_.data = this;
}

Server::~Server() = default;

int Server::listen() {
  sockaddr_storage addr{};
  int err = uv_ip4_addr(options_.host.c_str(), options_.port, reinterpret_cast<sockaddr_in *>(&addr));
  if (err != 0) err = uv_ip6_addr(options_.host.c_str(), options_.port, reinterpret_cast<sockaddr_in6 *>(&addr));
  if (err != 0) return err;
  err = uv_tcp_bind(&listener_, reinterpret_cast<sockaddr *>(&addr), 0);
  if (err == 0) err = uv_listen(reinterpret_cast<uv_stream_t *>(&listener_), 128, on_connection);
  if (err == 0) {
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
  uv_close(reinterpret_cast<uv_handle_t *>(&wakeup_), nullptr);
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
  uint64_t number = self->next_session_++;
  auto session = std::make_shared<Session>(*self, number);
  self->sessions_.emplace(number, session);
  if (session->start(listener) != 0) return;
  if (self->sessions_.size() > self->options_.max_sessions) {
    session->close("too many sessions (limit " + std::to_string(self->options_.max_sessions) + ")");
    return;
  }
  FEDCLD_LOG(info, "session %llu: connection from %s", (unsigned long long)number, session->peer().c_str());
}

void Server::session_closed(uint64_t number) { sessions_.erase(number); }

void Server::post(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(posted_mutex_);
    posted_.push_back(std::move(task));
  }
  uv_async_send(&wakeup_);
}

void Server::on_async(uv_async_t *async) {
  auto *self = static_cast<Server *>(async->data);
  std::vector<std::function<void()>> tasks;
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(self->posted_mutex_);
      tasks.swap(self->posted_);
    }
    if (tasks.empty()) return;
    for (auto &task : tasks) task();
    tasks.clear();
  }
}

}  // namespace fedcld
