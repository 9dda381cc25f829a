#include "transport.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "descriptor_passing.h"
#include "dial.h"
#include "tls_transport.h"

namespace fedcl {

Transport::~Transport() { close(fd_); }

void Transport::shutdown() { ::shutdown(fd_, SHUT_RDWR); }

std::string Transport::send_with_descriptor(iovec *, int, int) { return "only a local connection passes descriptors"; }

std::string Transport::failure(const char *what) const { return std::string(what) + ": " + std::strerror(errno); }

std::string PlainTransport::send(iovec *iov, int count) {
  int first = 0;
  while (first < count) {
    msghdr msg{};
    msg.msg_iov = iov + first;
    msg.msg_iovlen = count - first;
    ssize_t sent = sendmsg(fd_, &msg, MSG_NOSIGNAL);
    if (sent < 0) {
      if (errno == EINTR) continue;
      return std::string("send: ") + std::strerror(errno);
    }
    while (first < count && size_t(sent) >= iov[first].iov_len) sent -= iov[first++].iov_len;
    if (first < count) {
      iov[first].iov_base = static_cast<uint8_t *>(iov[first].iov_base) + sent;
      iov[first].iov_len -= sent;
    }
  }
  return {};
}

ssize_t PlainTransport::receive(void *dst, size_t size, bool wait) { return recv(fd_, dst, size, wait ? 0 : MSG_DONTWAIT); }

LocalTransport::LocalTransport(int fd, uint32_t daemon_pid)
    : PlainTransport(fd), binding_("unix " + std::to_string(getpid()) + " " + std::to_string(daemon_pid)) {}

std::string LocalTransport::send_with_descriptor(iovec *iov, int count, int descriptor) {
  ssize_t sent = fedcl::send_with_descriptor(fd_, iov, count, descriptor);
  if (sent < 0) return std::string("send: ") + std::strerror(errno);
  // The descriptor went with the first byte; the rest, if the socket took part of it, follows plainly.
  while (count > 0 && size_t(sent) >= iov->iov_len) {
    sent -= iov->iov_len;
    iov++;
    count--;
  }
  if (count == 0) return {};
  iov->iov_base = static_cast<uint8_t *>(iov->iov_base) + sent;
  iov->iov_len -= sent;
  return send(iov, count);
}

void Transport::limit_silence(std::chrono::milliseconds silence) {
  long ms = silence.count();
  timeval limit{ms / 1000, (ms % 1000) * 1000};
  setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
}

std::unique_ptr<Transport> dial_local(const std::string &path, uint32_t daemon_pid, int timeout_ms, std::string *error) {
  int fd = connect_local(path, timeout_ms, error);
  if (fd < 0) return nullptr;
  ucred peer{};
  socklen_t size = sizeof peer;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &size) != 0) {
    *error = "cannot ask who listens at " + path + ": " + std::strerror(errno);
    close(fd);
    return nullptr;
  }
  if (daemon_pid && uint32_t(peer.pid) != daemon_pid) {
    *error = "the local socket " + path + " is process " + std::to_string(peer.pid) + "'s, not the daemon's (" +
             std::to_string(daemon_pid) + ")";
    close(fd);
    return nullptr;
  }
  return std::make_unique<LocalTransport>(fd, uint32_t(peer.pid));
}

std::unique_ptr<Transport> dial(const std::string &endpoint, int timeout_ms, const Credentials &credentials,
                                std::string *error) {
  if (local_endpoint(endpoint))
    return dial_local(endpoint.substr(sizeof kLocalEndpointPrefix - 1), 0, timeout_ms, error);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  int fd = connect_with_timeout(endpoint, timeout_ms, error);
  if (fd < 0) return nullptr;
  if (credentials.tls == TlsMode::off) return std::make_unique<PlainTransport>(fd);
  return tls_connect(fd, endpoint, credentials, deadline, error);
}

}  // namespace fedcl
