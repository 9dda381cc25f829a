#include "dial.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

namespace fedcl {

int connect_with_timeout(const std::string &endpoint, int timeout_ms, std::string *error) {
  size_t colon = endpoint.rfind(':');
  if (colon == std::string::npos) {
    *error = "'" + endpoint + "' is not host:port";
    return -1;
  }
  std::string host = endpoint.substr(0, colon), port = endpoint.substr(colon + 1);
  if (host.size() > 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
  addrinfo hints{}, *found = nullptr;
  hints.ai_socktype = SOCK_STREAM;
  int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &found);
  if (rc != 0) {
    *error = "cannot resolve " + endpoint + ": " + gai_strerror(rc);
    return -1;
  }
  int fd = -1;
  *error = "no address for " + endpoint;
  for (addrinfo *ai = found; ai && fd < 0; ai = ai->ai_next) {
    fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
    if (fd < 0) continue;
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0 && errno != EINPROGRESS) {
      *error = "connect to " + endpoint + ": " + std::strerror(errno);
      close(fd);
      fd = -1;
      continue;
    }
    pollfd p{fd, POLLOUT, 0};
    int soerr = 0;
    socklen_t len = sizeof soerr;
    if (poll(&p, 1, timeout_ms) != 1) {
      *error = "connect to " + endpoint + " timed out after " + std::to_string(timeout_ms) + " ms";
    } else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) != 0 || soerr != 0) {
      *error = "connect to " + endpoint + ": " + std::strerror(soerr);
    } else {
      break;
    }
    close(fd);
    fd = -1;
  }
  freeaddrinfo(found);
  if (fd >= 0) {
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    // A node that dies without closing the connection (power loss, a cut link) must still end up as a
    // lost daemon rather than a wait without end: probe an idle connection after 10 s, give up after
    // three unanswered probes, and after 30 s of unacknowledged data.
    int idle = 10, interval = 5, probes = 3;
    unsigned user_timeout_ms = 30000;
    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval);
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &probes, sizeof probes);
    setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout_ms, sizeof user_timeout_ms);
  }
  return fd;
}

int connect_local(const std::string &path, int timeout_ms, std::string *error) {
  sockaddr_un at{};
  at.sun_family = AF_UNIX;
  if (path.size() >= sizeof at.sun_path) {
    *error = "the local socket's path " + path + " is too long";
    return -1;
  }
  std::memcpy(at.sun_path, path.data(), path.size());
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    *error = std::string("socket: ") + std::strerror(errno);
    return -1;
  }
  // A full backlog answers EAGAIN (a Unix socket's connect does not wait in the background): try
  // again until the deadline.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (connect(fd, reinterpret_cast<sockaddr *>(&at), sizeof at) != 0) {
    if (errno == EINTR) continue;
    if (errno == EAGAIN && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      continue;
    }
    *error = "connect to " + path + ": " + std::strerror(errno);
    close(fd);
    return -1;
  }
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

}  // namespace fedcl
