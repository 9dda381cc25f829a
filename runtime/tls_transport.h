// A client's connection to a daemon over TLS (protocol/tls.h): OpenSSL's handshake on the connection's
// socket, which stays blocking as with plain TCP (the receiver busy-polls with MSG_DONTWAIT, a wait
// ends at the silence limit), then fedcl's record layer (protocol/tls_records.h), whose sending and
// receiving halves share nothing: the receiving thread and the sending ones need no lock.
//
// Reads take up to 256 KiB of ciphertext off the socket at once, decrypted record by record straight
// into where the bytes go (a reply's destination in the application's memory, a chunk's landing
// place). Writes are sealed into buffers of this object's and leave in pieces. Large messages
// pipeline (tls_pipe.h): a second thread moves one piece through the socket while this one seals or
// opens the next.
#pragma once

#include <chrono>
#include "tls.h"
#include "tls_pipe.h"
#include "tls_records.h"
#include "transport.h"

namespace fedcl {

class TlsTransport final : public Transport {
 public:
  // Takes a connected socket and an SSL on it whose handshake is done; start() takes its keys over.
  TlsTransport(int fd, TlsSession ssl);
  // "" or why the session's records cannot be sealed here.
  std::string start();
  std::string send(iovec *iov, int count) override;
  ssize_t receive(void *dst, size_t size, bool wait) override;
  std::string failure(const char *what) const override;
  std::string channel_binding() const override { return channel_binding_; }

 private:
  // Seals size bytes into the writer's buffers, posting each full piece; "" or why not.
  std::string encrypt(const uint8_t *bytes, size_t size, bool hand_off);

  TlsSession ssl_;  // kept for its handshake's state; records_ carries the data
  TlsRecords records_;
  TlsSpan span_;  // what of the reader's last bytes records_ has not read yet (the receiver's)
  SocketWriter writer_;
  SocketReader reader_;
  std::string failure_;  // the receiver's last TLS error
  std::string channel_binding_;
};

// Runs the TLS handshake on fd (connected to endpoint) as credentials ask, before deadline. Owns fd:
// closes it on failure, returning null with why in *error.
std::unique_ptr<Transport> tls_connect(int fd, const std::string &endpoint, const Credentials &credentials,
                                       std::chrono::steady_clock::time_point deadline, std::string *error);

}  // namespace fedcl
