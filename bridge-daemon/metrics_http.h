// fedcld --metrics HOST:PORT: Prometheus scrapes the main process over plain HTTP (GET /metrics,
// the text exposition format). A request is read whole (a few KiB at most) within a few seconds and
// answered at once; the connection then closes. Past 64 connections, a new one closes the oldest
// that has not sent its request, so idle connections cannot keep scrapes out. It runs on the main process's loop and never waits:
// the text comes from what the main process and the workers' boards already hold.
#pragma once

#include <uv.h>

#include <functional>
#include <list>
#include <string>

namespace fedcld {

class MetricsHttp {
 public:
  using Render = std::function<std::string()>;
  MetricsHttp(uv_loop_t *loop, Render render);
  MetricsHttp(const MetricsHttp &) = delete;
  MetricsHttp &operator=(const MetricsHttp &) = delete;

  // Binds and listens; libuv's error or 0.
  int listen(const std::string &host, int port);
  // The port bound (differs from the one asked for when that was 0); 0 when not listening.
  int port() const;
  void close();

 private:
  struct Connection;
  static void on_connection(uv_stream_t *server, int status);
  void answer(Connection &connection);

  uv_loop_t *loop_;
  Render render_;
  uv_tcp_t server_;
  bool listening_ = false;
  size_t open_ = 0;  // connections being served
  std::list<Connection *> waiting_;  // those whose request is not read yet, oldest first
};

// The reply to an HTTP request's first line ("GET /metrics HTTP/1.1"): status line, headers, body.
std::string metrics_http_reply(const std::string &request_line, const std::function<std::string()> &render);

}  // namespace fedcld
