// A client's connection to a daemon over TLS (protocol/tls.h): OpenSSL over the connection's socket,
// which stays blocking as with plain TCP (the receiver busy-polls with MSG_DONTWAIT, a wait ends at
// the silence limit).
//
// One SSL object serves the receiving thread and the sending ones, which OpenSSL does not allow at
// the same time: a mutex covers each call into it, never a wait on the socket. Reads take up to
// 256 KiB of ciphertext off the socket at once, which OpenSSL decrypts record by record straight into
// where the bytes go (a reply's destination in the application's memory, a chunk's landing place).
// Writes are encrypted into buffers of this object's and leave in pieces. Large messages pipeline
// (tls_pipe.h): a second thread moves one piece through the socket while this one encrypts or
// decrypts the next.
#pragma once

#include <chrono>
#include <mutex>

#include "tls.h"
#include "tls_pipe.h"
#include "transport.h"

namespace fedcl {

class TlsTransport final : public Transport {
 public:
  // Takes a connected socket and an SSL on it whose handshake is done.
  TlsTransport(int fd, TlsSession ssl);
  std::string send(iovec *iov, int count) override;
  ssize_t receive(void *dst, size_t size, bool wait) override;
  std::string failure(const char *what) const override;

 private:
  // Encrypts size bytes into the writer's buffers, posting each full piece; "" or why not.
  std::string encrypt(const uint8_t *bytes, size_t size, bool hand_off);

  TlsSession ssl_;
  TlsSpan span_;  // in: what of the reader's last bytes OpenSSL has not read yet; out: while a send encrypts
  std::mutex ssl_mutex_;
  SocketWriter writer_;
  SocketReader reader_;
  std::string failure_;  // the receiver's last TLS error
  bool starved_ = false;  // OpenSSL has used every byte given and holds no record (the receiver's)
};

// Runs the TLS handshake on fd (connected to endpoint) as credentials ask, before deadline. Owns fd:
// closes it on failure, returning null with why in *error.
std::unique_ptr<Transport> tls_connect(int fd, const std::string &endpoint, const Credentials &credentials,
                                       std::chrono::steady_clock::time_point deadline, std::string *error);

}  // namespace fedcl
