// fedcld's side of TLS (protocol/tls.h): OpenSSL's handshake over libuv's reads and writes, through
// memory BIOs, then fedcl's record layer (protocol/tls_records.h) for the data, for the client
// sessions it accepts and the peer links it dials (--tls).
//
// Reads: ciphertext lands in the transport's buffers and is decrypted straight into where the
// session wants its bytes (a large payload's buffer included). Writes: the session's buffers are
// sealed into buffers that libuv writes; the last one's callback reports the session's write done.
// A connection that starts with something other than a TLS record is a client speaking plain TCP:
// its Hello is read in the clear and refused in the clear (exec_handshake.cpp), so that it learns why.
//
// Bulk bytes are sealed and opened off the loop: small writes and reads stay on the loop (a
// hand-off costs a thread's wake-up each way), but a large write is sealed piece by piece on the
// stream's worker thread while the loop writes the pieces already done, and a large payload is
// decrypted into its buffer there while the loop reads on into further buffers. The worker starts
// with the stream's first large transfer and ends with the stream. Every use of the SSL object or
// the records holds the stream's mutex, and the ciphertext it makes joins one queue in the same hold,
// so records leave in the order they were sealed.
#pragma once

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "keys.h"
#include "secret.h"
#include "stream_transport.h"
#include "tls.h"

namespace fedcld {

class Server;
struct ServerOptions;

class TlsStream final : public StreamTransport {
 public:
  // A peer link this daemon dialled, whose handshake ssl does.
  TlsStream(uv_stream_t *stream, fedcl::TlsSession ssl);
  // The daemon's side of a client's or peer's connection: its handshake's state is made from
  // accept_context (which outlives the stream) once the other side spoke.
  TlsStream(uv_stream_t *stream, SSL_CTX *accept_context);
  // A connection whose handshake the main process did (handoff.h): its records go on from state,
  // and the ciphertext read but not opened there is taken first. Check ok() before use.
  TlsStream(uv_stream_t *stream, fedcl::wire::TlsState::Reader state, Server &server);
  // "" or why the records could not go on from the state given.
  const std::string &problem() const { return problem_; }
  // Waits for the worker's current piece: it may be reading a write's buffers or filling a payload.
  // Writes not yet handed to libuv report UV_ECANCELED, as libuv's own queued writes do.
  ~TlsStream() override;
  std::string start(Session &session, std::function<void()> ready) override;
  void alloc(Session &session, uv_buf_t *buf) override;
  std::string received(Session &session, const uv_buf_t &buf, size_t size) override;
  int write(uv_write_t *req, const uv_buf_t *bufs, unsigned count, uv_write_cb cb) override;
  void hand_over(fedcl::wire::HandedConnection::Builder out, std::string *plaintext) override;
  std::string channel_binding() const override { return channel_binding_; }

  // The pipeline's parts (tls_stream.cpp).
  struct Write;
  struct Sealed;
  struct Ciphertext;
  struct Shared;

 private:
  std::string handshake(Session &session);
  // Decrypts on the loop until the session wants a large span, which goes to the worker with the
  // rest of the ciphertext.
  std::string decrypt_here(Session &session);
  // A failed handshake, or a record refused after it (not authentic, an alert): a warning, or for a
  // stranger's connection what ends it (the main process logs strangers' ends).
  void log_refusal(Session &session, const std::string &why);
  void hand_span_to_worker(const uv_buf_t &dest);
  // The worker reports (on the loop, in order) what landed and which read buffers it is done with.
  void landed(uint8_t *at, size_t size, uint8_t *done, bool filled, const std::string &why);
  uint8_t *new_read_buffer();
  // A read buffer may be filled again (reading goes on if it stopped for want of one).
  void read_buffer_free(uint8_t *buffer);
  std::unique_ptr<Sealed> new_piece(const std::shared_ptr<Write> &write);
  // Queues pieces of writes for the worker, no more than kPiecesInFlight at once.
  void schedule();
  // Hands what was sealed to libuv, in order.
  void flush_sealed();
  static void on_piece_written(uv_write_t *req, int status);
  void piece_written(Sealed &piece, int status);
  void wake_worker();
  Session &session() const;

  uv_stream_t *stream_;
  std::shared_ptr<Shared> shared_;
  bool accepting_;
  SSL_CTX *accept_context_ = nullptr;
  bool established_ = false;
  std::string channel_binding_;  // once established
  bool first_bytes_ = true;
  bool plaintext_ = false;  // a plain-TCP client, read in the clear until refused
  std::string problem_;
  std::string handed_ciphertext_;  // read by the main process, not opened there: taken at start
  std::function<void()> ready_;
  // Reads: buffers libuv may fill, the one it fills now and how far; the worker decrypts a large span
  // (reading stops when all are busy).
  std::vector<uint8_t *> free_buffers_;
  size_t read_buffer_bytes_, min_read_bytes_;  // small while the stream does its handshake
  uint8_t *filling_ = nullptr;
  size_t filled_ = 0;
  bool span_on_worker_ = false;
  bool reads_starved_ = false;
  // Writes: pieces not yet given to the worker, and those given whose ciphertext libuv has not written.
  std::deque<std::unique_ptr<Sealed>> waiting_;
  unsigned pieces_in_flight_ = 0;
  bool flushing_ = false;
  std::thread worker_;
};

// The PSK identity's user on peer links: with a space, which no user of a key list can have.
constexpr char kPeerTlsUser[] = "fedcld peer";

// The daemon's TLS contexts, from its options: with --tls yes, every connection accepted speaks TLS
// (certificates when --tls-cert is set, the pre-shared key when it has a key), and peer links it
// dials do (the daemons' key when it has one, else the peer's certificate checked against --tls-ca).
class DaemonTls {
 public:
  // "" or why the options cannot serve TLS (a certificate that does not load, no trust root).
  std::string setup(const ServerOptions &options, const KeyStore &keys);
  // The transport of a connection accepted on stream (null when OpenSSL cannot make one).
  std::unique_ptr<StreamTransport> accepting(uv_stream_t *stream) const;
  // The transport of a peer link dialled to address (host:port); null with why in *error.
  std::unique_ptr<StreamTransport> dialling(uv_stream_t *stream, const std::string &address, std::string *error) const;
  // The host names and addresses the certificate shown to clients names (none without one).
  std::vector<std::string> certificate_names() const;

 private:
  fedcl::TlsContext accept_, dial_;
  fedcl::TlsMode dial_mode_ = fedcl::TlsMode::off;
  fedcl::Secret peer_key_;
};

}  // namespace fedcld
