// The byte stream under a Session: plain TCP (PlainStream, here) or TLS (tls_stream.h). The session
// keeps its libuv TCP handle and its read and write callbacks; the transport decides where the bytes
// read off the socket go and what goes to the socket for the bytes the session writes.
#pragma once

#include <uv.h>

#include <functional>
#include <string>

#include "fedcl.capnp.h"

namespace fedcld {

class Session;

class StreamTransport {
 public:
  virtual ~StreamTransport() = default;
  // Starts on a connected socket; ready() runs once the session's own bytes may flow (at once for
  // plain TCP; for TLS once the handshake is done). "" or why it cannot start.
  virtual std::string start(Session &session, std::function<void()> ready) = 0;
  // Memory for libuv's next read (on_alloc).
  virtual void alloc(Session &session, uv_buf_t *buf) = 0;
  // size bytes were read into buf: the session gets what they carry. "" or why the connection must close.
  virtual std::string received(Session &session, const uv_buf_t &buf, size_t size) = 0;
  // As uv_write on the session's stream: bufs go out in order, then cb(req, status).
  virtual int write(uv_write_t *req, const uv_buf_t *bufs, unsigned count, uv_write_cb cb) = 0;
  // The connection moves to a worker process (handoff.h), idle: no write in flight. What the
  // transport holds goes into out, and plaintext it opened but did not hand to the session onto
  // *plaintext.
  virtual void hand_over(fedcl::wire::HandedConnection::Builder out, std::string *plaintext) = 0;
  // What the handshake's proofs are bound to (protocol/auth.h): the TLS exporter value; "" for TCP.
  virtual std::string channel_binding() const { return {}; }
};

// Plain TCP: reads land where the session wants its bytes (a large payload straight in its buffer).
class PlainStream final : public StreamTransport {
 public:
  explicit PlainStream(uv_stream_t *stream) : stream_(stream) {}
  std::string start(Session &session, std::function<void()> ready) override;
  void alloc(Session &session, uv_buf_t *buf) override;
  std::string received(Session &session, const uv_buf_t &buf, size_t size) override;
  int write(uv_write_t *req, const uv_buf_t *bufs, unsigned count, uv_write_cb cb) override {
    return uv_write(req, stream_, bufs, count, cb);
  }
  void hand_over(fedcl::wire::HandedConnection::Builder, std::string *) override {}  // all went to the session

 private:
  uv_stream_t *stream_;
};

}  // namespace fedcld
