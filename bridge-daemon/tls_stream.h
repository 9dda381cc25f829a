// fedcld's side of TLS (protocol/tls.h): OpenSSL over libuv's reads and writes, with memory BIOs in
// between, for the client sessions it accepts and the peer links it dials (--tls).
//
// Reads: ciphertext lands in the transport's buffer and is decrypted straight into where the
// session wants its bytes (a large payload's buffer included). Writes: the session's buffers are
// encrypted into one buffer that libuv writes; its callback reports the session's write done.
// A connection that starts with something other than a TLS record is a client speaking plain TCP:
// its Hello is read in the clear and refused in the clear (exec_handshake.cpp), so that it learns why.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "stream_transport.h"
#include "tls.h"

namespace fedcld {

struct ServerOptions;

class TlsStream final : public StreamTransport {
 public:
  // accepting: the daemon's side of a client's or peer's connection; otherwise this daemon dialled.
  TlsStream(uv_stream_t *stream, fedcl::TlsSession ssl, bool accepting);
  std::string start(Session &session, std::function<void()> ready) override;
  void alloc(Session &session, uv_buf_t *buf) override;
  std::string received(Session &session, const uv_buf_t &buf, size_t size) override;
  int write(uv_write_t *req, const uv_buf_t *bufs, unsigned count, uv_write_cb cb) override;

 private:
  // Writes what OpenSSL said on its own (handshake messages, alerts).
  void flush_control();
  std::string handshake(Session &session);

  uv_stream_t *stream_;
  fedcl::TlsSession ssl_;
  bool accepting_;
  bool established_ = false;
  bool first_bytes_ = true;
  bool plaintext_ = false;  // a plain-TCP client, read in the clear until refused
  std::function<void()> ready_;
  fedcl::TlsSpan span_;             // in: the read being decrypted; out: control_ or a write's buffer
  fedcl::TlsBytes control_;
  std::unique_ptr<uint8_t[]> in_;
};

// The daemon's TLS contexts, from its options: with --tls yes, every connection accepted speaks TLS
// (certificates when --tls-cert is set, the pre-shared key when it has a key), and peer links it
// dials do (the cluster key when it has one, else the peer's certificate checked against --tls-ca).
class DaemonTls {
 public:
  // "" or why the options cannot serve TLS (a certificate that does not load, no trust root).
  std::string setup(const ServerOptions &options);
  // The transport of a connection accepted on stream (null when OpenSSL cannot make one).
  std::unique_ptr<StreamTransport> accepting(uv_stream_t *stream) const;
  // The transport of a peer link dialled to address (host:port); null with why in *error.
  std::unique_ptr<StreamTransport> dialling(uv_stream_t *stream, const std::string &address, std::string *error) const;

 private:
  fedcl::TlsContext accept_, dial_;
  fedcl::TlsMode dial_mode_ = fedcl::TlsMode::off;
  std::string cluster_key_;
};

}  // namespace fedcld
