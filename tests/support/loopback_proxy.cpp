#include "loopback_proxy.h"
#include "loopback_address.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace fedcl_test {

LoopbackProxy::LoopbackProxy(const char *name) : name_(name) {
  // What the proxy stands for sits on a TCP path between two hosts: a daemon of this host must not
  // send the test's client past it to its local socket (FEDCL_LOCAL).
  setenv("FEDCL_LOCAL", "off", 1);
  listener_ = listen_on(0);
  sockaddr_in addr{};
  socklen_t len = sizeof addr;
  if (listener_ < 0 || getsockname(listener_, reinterpret_cast<sockaddr *>(&addr), &len) != 0) {
    std::runtime_error error = failure();
    if (listener_ >= 0) close(listener_);  // a constructor that throws gets no destructor
    throw error;
  }
  port_ = ntohs(addr.sin_port);
}

LoopbackProxy::~LoopbackProxy() {
  if (listener_ >= 0) close(listener_);
}

std::runtime_error LoopbackProxy::failure() const {
  return std::runtime_error(std::string(name_) + ": " + std::strerror(errno));
}

int LoopbackProxy::listen_on(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int on = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  sockaddr_in addr = loopback_address(port);
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr *>(&addr), sizeof addr) != 0 || listen(fd, 8) != 0) {
    if (fd >= 0) close(fd);
    return -1;
  }
  return fd;
}

int LoopbackProxy::dial(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr = loopback_address(port);
  if (fd >= 0 && connect(fd, reinterpret_cast<sockaddr *>(&addr), sizeof addr) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

bool LoopbackProxy::send_all(int fd, const uint8_t *bytes, size_t size) {
  for (size_t sent = 0; sent < size;) {
    ssize_t n = send(fd, bytes + sent, size - sent, MSG_NOSIGNAL);
    if (n <= 0) return false;
    sent += size_t(n);
  }
  return true;
}

}  // namespace fedcl_test
