#include "transport.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "dial.h"
#include "tls_transport.h"

namespace fedcl {

Transport::~Transport() { close(fd_); }

void Transport::shutdown() { ::shutdown(fd_, SHUT_RDWR); }

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

void Transport::limit_silence(std::chrono::milliseconds silence) {
  long ms = silence.count();
  timeval limit{ms / 1000, (ms % 1000) * 1000};
  setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
}

std::unique_ptr<Transport> dial(const std::string &endpoint, int timeout_ms, const Credentials &credentials,
                                std::string *error) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  int fd = connect_with_timeout(endpoint, timeout_ms, error);
  if (fd < 0) return nullptr;
  if (credentials.tls == TlsMode::off) return std::make_unique<PlainTransport>(fd);
  return tls_connect(fd, endpoint, credentials, deadline, error);
}

}  // namespace fedcl
