#include "daemon_status.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <regex>
#include <thread>

#include "daemon_process.h"

#ifndef FEDCL_COMMAND_PATH
#error "FEDCL_COMMAND_PATH must name the fedcl command"
#endif

namespace fedcl_test {

std::string metrics_http(int port, const std::string &request) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(uint16_t(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval timeout{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  std::string reply;
  if (connect(fd, reinterpret_cast<sockaddr *>(&address), sizeof address) == 0 &&
      write(fd, request.data(), request.size()) == ssize_t(request.size())) {
    char buffer[65536];
    for (ssize_t n; (n = read(fd, buffer, sizeof buffer)) > 0;) reply.append(buffer, size_t(n));
  }
  close(fd);
  return reply;
}

std::string scrape_metrics(const DaemonProcess &daemon) {
  std::string reply = metrics_http(daemon.metrics_port(), "GET /metrics HTTP/1.1\r\nHost: fedcld\r\nAccept: text/plain\r\n\r\n");
  size_t body = reply.find("\r\n\r\n");
  EXPECT_EQ(0u, reply.rfind("HTTP/1.1 200 OK\r\n", 0)) << reply.substr(0, 200);
  return body == std::string::npos ? "" : reply.substr(body + 4);
}

double metric_sample(const std::string &text, const std::string &series) {
  size_t at = 0;
  while ((at = text.find(series + " ", at)) != std::string::npos) {
    if (at == 0 || text[at - 1] == '\n') return std::stod(text.substr(at + series.size() + 1));
    at++;
  }
  return -1;
}

std::string status_json() {
  FILE *pipe = popen(FEDCL_COMMAND_PATH " status --json 2>&1", "r");
  if (!pipe) return "";
  std::string out;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) out.append(buffer, n);
  pclose(pipe);
  return out;
}

OwnSessions own_sessions() {
  std::string out = status_json();
  OwnSessions own;
  // A session's client is named host:pid.
  std::regex session("\"client\": \"[^\"]*:([0-9]+)\",[^}]*?\"objects\": ([0-9]+),[^}]*?\"bytes_sent\": ([0-9]+)");
  for (std::sregex_iterator it(out.begin(), out.end(), session), end; it != end; ++it) {
    if (std::stol((*it)[1]) != long(getpid())) continue;
    own.objects += std::stoull((*it)[2]);
    own.bytes_sent += std::stoull((*it)[3]);
    own.found++;
  }
  return own;
}

OwnSessions own_sessions_settled() {
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  return own_sessions();
}

}  // namespace fedcl_test
