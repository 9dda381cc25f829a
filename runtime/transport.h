// The byte stream under a client's connection to a daemon: plain TCP here, TLS in tls_transport.h.
// The connection's threads use it as they used the socket: one thread receives while others send
// (the connection serialises its senders), a receive that waits gives up after the daemon's
// heartbeat interval, and a receive that does not wait lets the receiver busy-poll.
#pragma once

#include <sys/types.h>
#include <sys/uio.h>

#include <chrono>
#include <memory>
#include <string>

#include "client_auth.h"

namespace fedcl {

class Transport {
 public:
  explicit Transport(int fd) : fd_(fd) {}
  virtual ~Transport();
  Transport(const Transport &) = delete;
  Transport &operator=(const Transport &) = delete;

  // Sends every byte of iov[0..count) (using iov up); "" or why not.
  virtual std::string send(iovec *iov, int count) = 0;
  // Receives up to size bytes into dst: how many (> 0), 0 once the daemon closed the connection, or
  // -1 with errno set (EAGAIN: nothing came within the silence limit, or nothing is there now when
  // wait is false; EINTR: try again).
  virtual ssize_t receive(void *dst, size_t size, bool wait) = 0;
  // Why the last receive failed, as "what: reason".
  virtual std::string failure(const char *what) const;
  // What the handshake's proofs are bound to (protocol/auth.h): the TLS exporter value; "" for TCP.
  virtual std::string channel_binding() const { return {}; }
  // As send, with descriptor passed beside the first byte (SCM_RIGHTS): only a local connection can.
  virtual std::string send_with_descriptor(iovec *iov, int count, int descriptor);
  // A receive that waits gives up after this long without a byte (SO_RCVTIMEO: both transports wait
  // in recv on the blocking socket).
  void limit_silence(std::chrono::milliseconds silence);
  // Ends both directions: a receive that waits returns, the next send fails.
  void shutdown();
  int fd() const { return fd_; }

 protected:
  int fd_;
};

class PlainTransport : public Transport {
 public:
  using Transport::Transport;
  std::string send(iovec *iov, int count) override;
  ssize_t receive(void *dst, size_t size, bool wait) override;
};

// A local connection: a daemon's Unix socket on this host (docs/design-decisions.md, "Same node").
// Plain (nothing but the kernel is between the two processes), its proofs bound to the two
// processes, and it passes a descriptor beside its bytes (the session's shared memory).
class LocalTransport final : public PlainTransport {
 public:
  // fd: connected to the daemon's main process, whose pid is daemon_pid.
  LocalTransport(int fd, uint32_t daemon_pid);
  std::string channel_binding() const override { return binding_; }
  std::string send_with_descriptor(iovec *iov, int count, int descriptor) override;

 private:
  std::string binding_;
};

// The prefix of a hosts.conf entry that names a daemon by its local socket (unix:/run/fedcld/x.sock).
constexpr const char kLocalEndpointPrefix[] = "unix:";
inline bool local_endpoint(const std::string &endpoint) { return endpoint.rfind(kLocalEndpointPrefix, 0) == 0; }

// Connects to endpoint ("host:port", or unix:PATH) within timeout_ms, over TLS when credentials ask
// for it and the daemon is not local (the handshake inside the same deadline). Null with why in *error.
std::unique_ptr<Transport> dial(const std::string &endpoint, int timeout_ms, const Credentials &credentials,
                                std::string *error);
// Connects to a daemon's local socket at path; with daemon_pid (not 0), only if that process
// listens there. Null with why in *error.
std::unique_ptr<Transport> dial_local(const std::string &path, uint32_t daemon_pid, int timeout_ms, std::string *error);

}  // namespace fedcl
