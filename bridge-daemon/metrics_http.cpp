#include "metrics_http.h"

#include <list>
#include <memory>
#include <string_view>

#include "log.h"

namespace fedcld {

namespace {

constexpr size_t kMaxRequestBytes = 8192;
constexpr uint64_t kRequestTimeoutMs = 5000;
// Scrapes at once. A connection past it closes the oldest one that has not sent its whole request:
// a scraper sends its request at once, so that one is idle (32 idle connections used to keep every
// scrape out until they timed out). Only when every connection is being answered is the new one
// closed.
constexpr size_t kMaxConnections = 64;

std::string reply(const char *status, const char *type, const std::string &body) {
  return std::string("HTTP/1.1 ") + status + "\r\nContent-Type: " + type + "\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
}

}  // namespace

std::string metrics_http_reply(const std::string &request_line, const std::function<std::string()> &render) {
  size_t method_end = request_line.find(' ');
  size_t path_end = method_end == std::string::npos ? std::string::npos : request_line.find(' ', method_end + 1);
  if (path_end == std::string::npos || request_line.compare(path_end + 1, 5, "HTTP/") != 0)
    return reply("400 Bad Request", "text/plain", "fedcld: not an HTTP request\n");
  std::string method = request_line.substr(0, method_end);
  std::string path = request_line.substr(method_end + 1, path_end - method_end - 1);
  if (method != "GET" && method != "HEAD") return reply("405 Method Not Allowed", "text/plain", "fedcld: GET /metrics\n");
  std::string target = path.substr(0, path.find('?'));
  if (target != "/metrics") return reply("404 Not Found", "text/plain", "fedcld serves its metrics at /metrics\n");
  std::string body = render();
  std::string whole = reply("200 OK", "text/plain; version=0.0.4; charset=utf-8", body);
  if (method == "HEAD") whole.resize(whole.size() - body.size());
  return whole;
}

struct MetricsHttp::Connection {
  explicit Connection(MetricsHttp *owner) : owner(owner) {}
  MetricsHttp *owner;
  uv_tcp_t tcp;
  uv_timer_t timer;
  char request[kMaxRequestBytes];
  size_t used = 0;
  std::string reply;
  uv_write_t write;
  int handles_open = 2;
  bool answered = false;
  std::list<Connection *>::iterator waiting;  // in owner->waiting_ until answered

  void stop_waiting() {
    if (answered) return;
    answered = true;
    owner->waiting_.erase(waiting);
  }

  void close() {
    if (uv_is_closing(reinterpret_cast<uv_handle_t *>(&tcp))) return;
    stop_waiting();
    uv_timer_stop(&timer);
    auto closed = [](uv_handle_t *handle) {
      auto *self = static_cast<Connection *>(handle->data);
      if (--self->handles_open == 0) {
        self->owner->open_--;
        delete self;
      }
    };
    uv_close(reinterpret_cast<uv_handle_t *>(&tcp), closed);
    uv_close(reinterpret_cast<uv_handle_t *>(&timer), closed);
  }
};

MetricsHttp::MetricsHttp(uv_loop_t *loop, Render render) : loop_(loop), render_(std::move(render)) {}

int MetricsHttp::listen(const std::string &host, int port) {
  sockaddr_storage address{};
  int err = uv_ip4_addr(host.c_str(), port, reinterpret_cast<sockaddr_in *>(&address));
  if (err != 0) err = uv_ip6_addr(host.c_str(), port, reinterpret_cast<sockaddr_in6 *>(&address));
  if (err != 0) return err;
  uv_tcp_init(loop_, &server_);
  server_.data = this;
  listening_ = true;
  err = uv_tcp_bind(&server_, reinterpret_cast<const sockaddr *>(&address), 0);
  if (err == 0) err = uv_listen(reinterpret_cast<uv_stream_t *>(&server_), 16, on_connection);
  if (err != 0) close();
  return err;
}

int MetricsHttp::port() const {
  if (!listening_) return 0;
  sockaddr_storage address{};
  int length = sizeof address;
  if (uv_tcp_getsockname(&server_, reinterpret_cast<sockaddr *>(&address), &length) != 0) return 0;
  return address.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6 *>(&address)->sin6_port)
                                       : ntohs(reinterpret_cast<sockaddr_in *>(&address)->sin_port);
}

void MetricsHttp::close() {
  if (!listening_) return;
  listening_ = false;
  uv_close(reinterpret_cast<uv_handle_t *>(&server_), nullptr);
}

void MetricsHttp::on_connection(uv_stream_t *server, int status) {
  auto *self = static_cast<MetricsHttp *>(server->data);
  if (status < 0) return;
  auto *connection = new Connection(self);
  uv_tcp_init(self->loop_, &connection->tcp);
  uv_timer_init(self->loop_, &connection->timer);
  connection->tcp.data = connection->timer.data = connection;
  self->open_++;
  connection->waiting = self->waiting_.insert(self->waiting_.end(), connection);
  if (uv_accept(server, reinterpret_cast<uv_stream_t *>(&connection->tcp)) != 0) return connection->close();
  if (self->open_ > kMaxConnections) {
    // open_ counts connections until their handles have closed: the oldest's room comes back then.
    Connection *oldest = self->waiting_.front();
    if (oldest == connection) return connection->close();
    oldest->close();
  }
  uv_timer_start(&connection->timer, [](uv_timer_t *timer) { static_cast<Connection *>(timer->data)->close(); },
                 kRequestTimeoutMs, 0);
  auto allocate = [](uv_handle_t *handle, size_t, uv_buf_t *buf) {
    auto *c = static_cast<Connection *>(handle->data);
    *buf = uv_buf_init(c->request + c->used, unsigned(kMaxRequestBytes - c->used));
  };
  auto read = [](uv_stream_t *stream, ssize_t n, const uv_buf_t *) {
    auto *c = static_cast<Connection *>(stream->data);
    if (n < 0) return c->close();
    c->used += size_t(n);
    std::string_view seen(c->request, c->used);
    if (seen.find("\r\n\r\n") != std::string_view::npos || seen.find("\n\n") != std::string_view::npos)
      return c->owner->answer(*c);
    if (c->used == kMaxRequestBytes) c->close();  // headers past any scraper's
  };
  uv_read_start(reinterpret_cast<uv_stream_t *>(&connection->tcp), allocate, read);
}

void MetricsHttp::answer(Connection &connection) {
  if (connection.answered) return;
  connection.stop_waiting();
  uv_read_stop(reinterpret_cast<uv_stream_t *>(&connection.tcp));
  std::string_view request(connection.request, connection.used);
  std::string line(request.substr(0, request.find_first_of("\r\n")));
  connection.reply = metrics_http_reply(line, render_);
  uv_buf_t buf = uv_buf_init(connection.reply.data(), unsigned(connection.reply.size()));
  connection.write.data = &connection;
  int err = uv_write(&connection.write, reinterpret_cast<uv_stream_t *>(&connection.tcp), &buf, 1,
                     [](uv_write_t *write, int) { static_cast<Connection *>(write->data)->close(); });
  if (err != 0) connection.close();
}

}  // namespace fedcld
