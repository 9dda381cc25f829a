// A machine in the middle that speaks TLS to each side on its own: it takes a client's TLS
// connection with a certificate the client trusts (the daemon's own, as a stolen or mis-issued one
// would be), dials the daemon over TLS as a client, and passes the plaintext on both ways. What it
// cannot do is hold the user's key: the test is whether a proof made for its TLS session gets the
// client's session onto the daemon's.
#pragma once

#include <openssl/ssl.h>

#include <atomic>
#include <string>
#include <thread>

namespace fedcl_test {

class TlsRelay {
 public:
  // Shows cert_file/key_file to clients; checks the daemon at 127.0.0.1:daemon_port against ca_file.
  TlsRelay(int daemon_port, const std::string &cert_file, const std::string &key_file, const std::string &ca_file);
  ~TlsRelay();
  TlsRelay(const TlsRelay &) = delete;
  TlsRelay &operator=(const TlsRelay &) = delete;

  std::string endpoint() const { return "127.0.0.1:" + std::to_string(port_); }
  // Plaintext bytes passed each way, over all connections so far.
  uint64_t client_bytes() const { return from_client_; }
  uint64_t daemon_bytes() const { return from_daemon_; }

 private:
  void serve();
  void relay(SSL *client, SSL *daemon);

  int daemon_port_;
  int listener_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  SSL_CTX *accept_ = nullptr, *dial_ = nullptr;
  std::atomic<uint64_t> from_client_{0}, from_daemon_{0};
  std::thread thread_;
};

}  // namespace fedcl_test
