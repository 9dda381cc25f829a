// What the tests' TCP proxies share: a socket listening on a free loopback port, and for each
// connection accepted there a connection of its own to the daemon's loopback port, over which the
// proxy forwards the bytes its own way. A proxy stands for a TCP path between hosts: while one
// exists, the test's client keeps to TCP (FEDCL_LOCAL=off), or the daemon would send it past the
// proxy to its local socket.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace fedcl_test {

class LoopbackProxy {
 public:
  LoopbackProxy(const LoopbackProxy &) = delete;
  LoopbackProxy &operator=(const LoopbackProxy &) = delete;

  std::string endpoint() const { return "127.0.0.1:" + std::to_string(port_); }

 protected:
  // Listens on a free loopback port; throws, naming the proxy, if it cannot.
  explicit LoopbackProxy(const char *name);
  // The proxy's thread must have ended: the listener closes here.
  ~LoopbackProxy();

  // A socket listening on the loopback port, or -1.
  static int listen_on(int port);
  // A connection to the loopback port, or -1.
  static int dial(int port);
  // Whether all size bytes went out on fd.
  static bool send_all(int fd, const uint8_t *bytes, size_t size);
  // The error to throw for the current errno, naming the proxy.
  std::runtime_error failure() const;

  const char *name_;
  int listener_ = -1;
  int port_ = 0;
};

}  // namespace fedcl_test
