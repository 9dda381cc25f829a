#include "tls_stream.h"

#include <openssl/err.h>

#include <cstring>
#include <utility>

#include "keys.h"
#include "log.h"
#include "server.h"
#include "session.h"
#include "tls_records.h"

namespace fedcld {

namespace {

// Reads land one after another in a buffer of this size, so that ciphertext that came in many small
// reads (the loop takes what the socket has, often under 128 KiB) lies in one run, which the worker
// opens at once on every crypto thread: a run costs some 20-30 us beyond its records' work.
constexpr size_t kReadBufferBytes = 1 << 20;
// Room a read wants at least: several 16 KiB records.
constexpr size_t kMinReadBytes = 64 * 1024;
// A stream that does its handshake (the main process's, which hands the connection over once the
// handshake's few messages are read) reads into one small buffer: OpenSSL and the record layer
// keep what a read cut short. A stranger's half-open handshake held a 1 MiB buffer.
constexpr size_t kHandshakeReadBufferBytes = 4096;
constexpr size_t kHandshakeMinReadBytes = 1024;
// Read buffers a stream may have while its worker decrypts: reading stops while it holds them all.
constexpr size_t kReadBuffers = 4;
// A span the session wants filled (a payload's rest) this large or larger is decrypted on the worker.
constexpr size_t kWorkerSpanBytes = 1 << 20;
// A write larger than this is sealed on the worker, in pieces of kPieceBytes, no more than
// kPiecesInFlight of them sealed or being sealed but not yet written (the memory it may hold).
constexpr size_t kWorkerWriteBytes = 256 * 1024;
constexpr size_t kPieceBytes = 512 * 1024;
constexpr unsigned kPiecesInFlight = 4;

}  // namespace

// A session's write: its callback runs once its last piece was written, with the first failure.
struct TlsStream::Write {
  uv_write_t *req;
  uv_write_cb cb;
  int status = 0;
};

// A piece of a write (or OpenSSL's own bytes, with no write): its plaintext, then its ciphertext.
struct TlsStream::Sealed {
  uv_write_t req;
  std::shared_ptr<Shared> shared;
  std::shared_ptr<Write> write;
  bool last = false;       // the write is done once this piece is
  bool on_worker = false;  // counts in pieces_in_flight_
  std::vector<uv_buf_t> plain;
  fedcl::TlsBytes cipher;
  int status = 0;  // sealing failed
};

// Read, not yet decrypted: the rest of one of the stream's read buffers.
struct TlsStream::Ciphertext {
  uint8_t *buffer;
  const uint8_t *at;
  size_t size;
};

// What the stream shares with its worker; it outlives both (posted reports hold it).
struct TlsStream::Shared : std::enable_shared_from_this<Shared> {
  explicit Shared(fedcl::TlsSession session) {
    span.out = &out;
    attach(std::move(session));
  }

  // The handshake's SSL object: none handed over after the handshake (records only), none yet on
  // an accepted connection whose client has not spoken.
  void attach(fedcl::TlsSession session) {
    ssl = std::move(session);
    if (!ssl) return;
    BIO *bio = fedcl::tls_span_bio(&span);
    SSL_set_bio(ssl.get(), bio, bio);
  }

  TlsStream *owner = nullptr;  // loop only: null once the stream is gone
  Server *server = nullptr;

  // Held by every SSL call and every use of records (lock order: ssl_mutex, then mutex).
  std::mutex ssl_mutex;
  fedcl::TlsSession ssl;       // the handshake (none in a worker: the main process did it)
  fedcl::TlsRecords records;  // the data, once the handshake is done
  fedcl::TlsSpan span;  // in: the oldest unread ciphertext; out: out
  fedcl::TlsBytes out;

  std::mutex mutex;
  std::condition_variable wake;
  bool stopping = false;
  bool decrypt_wanted = false;
  bool flush_posted = false;
  uint8_t *span_at = nullptr;  // the worker's span: where its next plaintext goes, and how much more
  size_t span_left = 0;
  std::deque<Ciphertext> ciphertext;  // in arrival order; a buffer's reads are one entry while unread
  uint8_t *filling = nullptr;          // the read buffer the loop reads into: not done when read up
  std::deque<std::unique_ptr<Sealed>> to_seal, sealed;  // sealed: in the order OpenSSL sealed them
  std::vector<std::unique_ptr<uint8_t[]>> read_buffers;  // loop only

  // Under ssl_mutex: op (the handshake, or a read of records) reads from the oldest unread
  // ciphertext; *done: the read buffer that it used up, if it did.
  template <typename Op>
  auto with_input(Op op, uint8_t **done) {
    Ciphertext next{};
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (!ciphertext.empty()) next = ciphertext.front();
    }
    span.in = next.at;
    span.in_size = next.size;
    ERR_clear_error();
    int ret = op();
    size_t used = next.size - span.in_size;
    span.in = nullptr;
    span.in_size = 0;
    if (!next.buffer) return ret;
    std::lock_guard<std::mutex> lock(mutex);
    Ciphertext &front = ciphertext.front();
    front.at += used;
    front.size -= used;
    if (front.size == 0) {
      uint8_t *buffer = front.buffer;
      ciphertext.pop_front();
      if (buffer != filling && (ciphertext.empty() || ciphertext.front().buffer != buffer)) *done = buffer;
    }
    return ret;
  }

  bool unread() {
    std::lock_guard<std::mutex> lock(mutex);
    return !ciphertext.empty();
  }

  // Under ssl_mutex: bufs sealed into out; false when OpenSSL fails.
  bool seal(const uv_buf_t *bufs, size_t count) {
    size_t total = 0;
    for (size_t i = 0; i < count; i++) total += bufs[i].len;
    out.reserve(out.size() + total + (total / fedcl::kTlsRecordBytes + count) * fedcl::kTlsRecordOverhead);
    if (count > 1 && total <= fedcl::kTlsRecordBytes) {
      // A reply and its small payload (and padding) as one record.
      uint8_t gathered[fedcl::kTlsRecordBytes];
      size_t used = 0;
      for (size_t i = 0; i < count; i++) {
        std::memcpy(gathered + used, bufs[i].base, bufs[i].len);
        used += bufs[i].len;
      }
      return records.write(gathered, used, &out);
    }
    for (size_t i = 0; i < count; i++)
      if (!records.write(reinterpret_cast<const uint8_t *>(bufs[i].base), bufs[i].len, &out)) return false;
    return true;
  }

  // Under ssl_mutex: what OpenSSL wrote joins the queue to the socket, as piece's ciphertext or (no
  // piece) as its own bytes. Returns whether the loop must be told (no flush is posted yet).
  bool emit(std::unique_ptr<Sealed> piece) {
    if (!piece) {
      if (out.empty()) return false;
      piece = std::make_unique<Sealed>();
    }
    piece->cipher.swap(out);
    std::lock_guard<std::mutex> lock(mutex);
    sealed.push_back(std::move(piece));
    return !std::exchange(flush_posted, true);
  }

  void post(std::function<void(TlsStream &)> task) {
    server->post([self = shared_from_this(), task = std::move(task)] {
      if (self->owner) task(*self->owner);
    });
  }

  // The worker's turns: one piece sealed, or one read buffer's ciphertext decrypted into its span.
  void seal_piece(std::unique_ptr<Sealed> piece) {
    bool tell;
    {
      std::lock_guard<std::mutex> lock(ssl_mutex);
      if (!seal(piece->plain.data(), piece->plain.size())) {
        FEDCLD_LOG(warn, "TLS: cannot encrypt a write: %s", fedcl::tls_errors().c_str());
        piece->status = UV_EPROTO;
      }
      tell = emit(std::move(piece));
    }
    if (tell) post([](TlsStream &stream) { stream.flush_sealed(); });
  }

  void decrypt_span() {
    uint8_t *at;
    size_t left;
    {
      std::lock_guard<std::mutex> lock(mutex);
      at = span_at;
      left = span_left;
    }
    if (left == 0) return;  // the loop took the span back
    size_t got = 0;
    uint8_t *done = nullptr;
    std::string why;
    bool tell;
    {
      std::lock_guard<std::mutex> lock(ssl_mutex);
      for (;;) {
        ptrdiff_t ret = with_input([&] { return records.read(span, at + got, left - got, &why); }, &done);
        if (ret > 0) got += size_t(ret);
        if (ret <= 0 || done || got == left) break;
      }
      tell = emit(nullptr);  // rare (alerts): flushed with the report
    }
    bool filled;
    {
      std::lock_guard<std::mutex> lock(mutex);
      span_at += got;
      span_left -= got;
      filled = span_left == 0;
      if (!filled && why.empty() && !ciphertext.empty()) decrypt_wanted = true;
    }
    if (got || done || filled || tell || !why.empty())
      post([=](TlsStream &stream) { stream.landed(at, got, done, filled, why); });
  }

  // The worker thread: decrypting and sealing take turns while both have work.
  static void work(std::shared_ptr<Shared> shared) {
    bool decrypted_last = false;
    for (;;) {
      std::unique_ptr<Sealed> piece;
      {
        std::unique_lock<std::mutex> lock(shared->mutex);
        shared->wake.wait(lock, [&] { return shared->stopping || shared->decrypt_wanted || !shared->to_seal.empty(); });
        if (shared->stopping) return;
        decrypted_last = shared->decrypt_wanted && (shared->to_seal.empty() || !decrypted_last);
        if (decrypted_last) {
          shared->decrypt_wanted = false;
        } else {
          piece = std::move(shared->to_seal.front());
          shared->to_seal.pop_front();
        }
      }
      if (piece) shared->seal_piece(std::move(piece));
      else shared->decrypt_span();
    }
  }
};

namespace {

// A piece is written (or failed): its write is done if it was the last.
void finish(TlsStream::Sealed &piece, int status) {
  TlsStream::Write *write = piece.write.get();
  if (!write) return;
  if (status < 0 && write->status == 0) write->status = status;
  if (piece.last) write->cb(write->req, write->status);
}

}  // namespace

TlsStream::TlsStream(uv_stream_t *stream, fedcl::TlsSession ssl)
    : stream_(stream), shared_(std::make_shared<Shared>(std::move(ssl))), accepting_(false),
      read_buffer_bytes_(kHandshakeReadBufferBytes), min_read_bytes_(kHandshakeMinReadBytes) {
  shared_->owner = this;
  SSL_set_connect_state(shared_->ssl.get());
}

TlsStream::TlsStream(uv_stream_t *stream, SSL_CTX *accept_context)
    : stream_(stream), shared_(std::make_shared<Shared>(nullptr)), accepting_(true), accept_context_(accept_context),
      read_buffer_bytes_(kHandshakeReadBufferBytes), min_read_bytes_(kHandshakeMinReadBytes) {
  shared_->owner = this;
}

TlsStream::TlsStream(uv_stream_t *stream, fedcl::wire::TlsState::Reader state, Server &server)
    : stream_(stream), shared_(std::make_shared<Shared>(nullptr)), accepting_(true), established_(true),
      first_bytes_(false), read_buffer_bytes_(kReadBufferBytes), min_read_bytes_(kMinReadBytes) {
  shared_->owner = this;
  shared_->server = &server;  // writes may come before start()
  fedcl::TlsRecordState records;
  auto send = state.getSendSecret(), receive = state.getReceiveSecret();
  if (send.size() != sizeof records.send_secret || receive.size() != sizeof records.receive_secret) {
    problem_ = "TLS: the main process handed over traffic secrets of the wrong size";
    return;
  }
  std::memcpy(records.send_secret, send.begin(), send.size());
  std::memcpy(records.receive_secret, receive.begin(), receive.size());
  records.send_seq = state.getSendSeq();
  records.receive_seq = state.getReceiveSeq();
  records.update_asked = state.getUpdateAsked();
  problem_ = shared_->records.restore(records);
  OPENSSL_cleanse(records.send_secret, sizeof records.send_secret);
  OPENSSL_cleanse(records.receive_secret, sizeof records.receive_secret);
  auto ciphertext = state.getCiphertext();
  handed_ciphertext_.assign(reinterpret_cast<const char *>(ciphertext.begin()), ciphertext.size());
}

void TlsStream::hand_over(fedcl::wire::HandedConnection::Builder out, std::string *plaintext) {
  fedcl::TlsRecordState records;
  std::string ciphertext;
  {
    std::lock_guard<std::mutex> lock(shared_->ssl_mutex);
    shared_->records.save(&records);
    std::lock_guard<std::mutex> queue_lock(shared_->mutex);
    ciphertext = records.unopened;  // a record's beginning comes before what was read after it
    for (const Ciphertext &unread : shared_->ciphertext)
      ciphertext.append(reinterpret_cast<const char *>(unread.at), unread.size);
  }
  plaintext->append(records.plaintext);
  auto tls = out.initTls();
  tls.setSendSecret(kj::arrayPtr(records.send_secret, sizeof records.send_secret));
  tls.setSendSeq(records.send_seq);
  tls.setReceiveSecret(kj::arrayPtr(records.receive_secret, sizeof records.receive_secret));
  tls.setReceiveSeq(records.receive_seq);
  tls.setUpdateAsked(records.update_asked);
  tls.setCiphertext(kj::arrayPtr(reinterpret_cast<const uint8_t *>(ciphertext.data()), ciphertext.size()));
  OPENSSL_cleanse(records.send_secret, sizeof records.send_secret);
  OPENSSL_cleanse(records.receive_secret, sizeof records.receive_secret);
}

TlsStream::~TlsStream() {
  {
    std::lock_guard<std::mutex> lock(shared_->mutex);
    shared_->stopping = true;
  }
  shared_->wake.notify_all();
  if (worker_.joinable()) worker_.join();
  shared_->owner = nullptr;
  for (auto *pieces : {&waiting_, &shared_->to_seal, &shared_->sealed})
    for (auto &piece : *pieces) finish(*piece, UV_ECANCELED);
}

std::string TlsStream::start(Session &session, std::function<void()> ready) {
  // A handed-over stream has its server from the start, and its worker may already read it.
  if (!shared_->server) shared_->server = &session.server();
  if (established_) {
    // Handed over: the ciphertext the main process read but did not open comes first.
    if (ready) ready();
    if (handed_ciphertext_.empty()) return {};
    std::string ciphertext = std::move(handed_ciphertext_);
    uv_buf_t buf;
    alloc(session, &buf);
    if (buf.len < ciphertext.size()) return "TLS: too much ciphertext handed over";
    std::memcpy(buf.base, ciphertext.data(), ciphertext.size());
    return received(session, buf, ciphertext.size());
  }
  ready_ = std::move(ready);
  if (accepting_) return {};  // the client speaks first
  return handshake(session);  // the ClientHello
}

uint8_t *TlsStream::new_read_buffer() {
  shared_->read_buffers.emplace_back(new uint8_t[read_buffer_bytes_]);
  return shared_->read_buffers.back().get();
}

void TlsStream::alloc(Session &session, uv_buf_t *buf) {
  if (plaintext_) {
    *buf = session.plaintext_buffer();
    return;
  }
  std::lock_guard<std::mutex> lock(shared_->mutex);  // the worker reports a buffer done by what it sees here
  bool unread = !shared_->ciphertext.empty() && shared_->ciphertext.back().buffer == filling_;
  if (filling_ && !unread) {
    filled_ = 0;  // all of it decrypted: reads start over at its beginning (small traffic stays in a few pages)
  } else if (!filling_ || read_buffer_bytes_ - filled_ < min_read_bytes_) {
    // The worker reports the full one done once it decrypted it. Buffers are made as needed: one
    // while reads are decrypted here; more while the worker holds some, and one more if the session
    // reads on while it holds kReadBuffers (a paused session resumed, say).
    if (free_buffers_.empty()) free_buffers_.push_back(new_read_buffer());
    filling_ = free_buffers_.back();
    free_buffers_.pop_back();
    filled_ = 0;
    shared_->filling = filling_;
  }
  *buf = uv_buf_init(reinterpret_cast<char *>(filling_ + filled_), read_buffer_bytes_ - filled_);
}

void TlsStream::read_buffer_free(uint8_t *buffer) {
  free_buffers_.push_back(buffer);
  if (!reads_starved_) return;
  reads_starved_ = false;
  session().read_on();
}

Session &TlsStream::session() const { return *static_cast<Session *>(stream_->data); }

void TlsStream::wake_worker() {
  if (!worker_.joinable()) worker_ = std::thread(Shared::work, shared_);
  shared_->wake.notify_one();
}

std::string TlsStream::handshake(Session &session) {
  Shared &shared = *shared_;
  uint8_t *done = nullptr;
  int ret, kind = 0;
  {
    std::lock_guard<std::mutex> lock(shared.ssl_mutex);
    ret = shared.with_input([&] { return SSL_do_handshake(shared.ssl.get()); }, &done);
    if (ret != 1) kind = SSL_get_error(shared.ssl.get(), ret);
    shared.emit(nullptr);
  }
  if (done) read_buffer_free(done);
  flush_sealed();
  if (ret == 1) {
    std::string why;
    {
      std::lock_guard<std::mutex> lock(shared.ssl_mutex);
      channel_binding_ = fedcl::tls_channel_binding(shared.ssl.get());
      why = channel_binding_.empty() ? "OpenSSL gave no exporter value to bind the proofs to: " + fedcl::tls_errors()
                                     : shared.records.start(shared.ssl.get());
    }
    if (!why.empty()) {
      log_refusal(session, why);
      return why;
    }
    established_ = true;
    if (auto ready = std::move(ready_)) ready();
    return {};
  }
  if (kind == SSL_ERROR_WANT_READ) return {};
  std::string why = "TLS handshake failed: " + fedcl::tls_errors();
  long verify = SSL_get_verify_result(shared.ssl.get());
  if (verify != X509_V_OK) why += std::string(" (the peer's certificate: ") + X509_verify_cert_error_string(verify) + ")";
  log_refusal(session, why);
  return why;
}

std::string TlsStream::received(Session &session, const uv_buf_t &buf, size_t size) {
  if (plaintext_) {
    session.plaintext_landed(buf, size);
    return {};
  }
  if (size == 0) return {};  // libuv's "nothing after all"
  auto *bytes = reinterpret_cast<uint8_t *>(buf.base);
  filled_ += size;
  if (first_bytes_ && accepting_) {
    first_bytes_ = false;
    if (!fedcl::tls_record_start(bytes, size)) {
      // Its Hello is answered with a refusal (exec_handshake.cpp), which the log shows.
      plaintext_ = true;
      session.plaintext_refused = true;
      session.consume(bytes, size);
      return {};
    }
    // The handshake's state is made once the client spoke: an idle connection costs no SSL object.
    fedcl::TlsSession ssl(SSL_new(accept_context_));
    if (!ssl) return "TLS: OpenSSL cannot make a handshake: " + fedcl::tls_errors();
    // Its record buffers (16 KiB each way) go back whenever they are empty.
    SSL_set_mode(ssl.get(), SSL_MODE_RELEASE_BUFFERS);
    SSL_set_accept_state(ssl.get());
    std::lock_guard<std::mutex> lock(shared_->ssl_mutex);
    shared_->attach(std::move(ssl));
  }
  {
    std::lock_guard<std::mutex> lock(shared_->mutex);
    auto &queue = shared_->ciphertext;
    if (!queue.empty() && queue.back().buffer == filling_ && queue.back().at + queue.back().size == bytes)
      queue.back().size += size;
    else queue.push_back({filling_, bytes, size});
    if (span_on_worker_) shared_->decrypt_wanted = true;
  }
  if (span_on_worker_) {
    wake_worker();
    if (read_buffer_bytes_ - filled_ < min_read_bytes_ && free_buffers_.empty() && shared_->read_buffers.size() >= kReadBuffers) {
      reads_starved_ = true;
      uv_read_stop(stream_);
    }
    return {};
  }
  std::string why;
  if (!established_) why = handshake(session);
  if (why.empty() && established_) why = decrypt_here(session);
  return why;
}

std::string TlsStream::decrypt_here(Session &session) {
  Shared &shared = *shared_;
  std::string why;
  while (why.empty() && established_ && !session.closed()) {
    uv_buf_t dest = session.plaintext_buffer();
    if (dest.len >= kWorkerSpanBytes) {
      hand_span_to_worker(dest);
      break;
    }
    uint8_t *done = nullptr;
    ptrdiff_t got;
    {
      std::lock_guard<std::mutex> lock(shared.ssl_mutex);
      got = shared.with_input(
          [&] { return shared.records.read(shared.span, reinterpret_cast<uint8_t *>(dest.base), dest.len, &why); }, &done);
    }
    if (done) read_buffer_free(done);
    if (got > 0) session.plaintext_landed(dest, size_t(got));
    else if (got == 0 && !shared.unread()) break;
  }
  flush_sealed();
  if (!why.empty()) log_refusal(session, why);
  return why;
}

void TlsStream::log_refusal(Session &session, const std::string &why) {
  if (session.stranger) {
    session.stranger_end = StrangerEnd::tls;  // the main process logs a stranger's end (stranger_log.h)
    return;
  }
  FEDCLD_LOG(warn, "%s %llu (%s): %s", accepting_ ? "session" : "peer link", (unsigned long long)session.number(),
             session.peer().c_str(), why.c_str());
}

void TlsStream::hand_span_to_worker(const uv_buf_t &dest) {
  {
    std::lock_guard<std::mutex> lock(shared_->mutex);
    shared_->span_at = reinterpret_cast<uint8_t *>(dest.base);
    shared_->span_left = dest.len;
    shared_->decrypt_wanted = true;
  }
  span_on_worker_ = true;
  wake_worker();
}

void TlsStream::landed(uint8_t *at, size_t size, uint8_t *done, bool filled, const std::string &why) {
  if (uv_is_closing(reinterpret_cast<uv_handle_t *>(stream_))) return;
  Session &session = this->session();
  auto keep = session.shared_from_this();
  if (done) read_buffer_free(done);
  flush_sealed();
  if (session.closed()) return;
  if (size) session.plaintext_landed(uv_buf_init(reinterpret_cast<char *>(at), size), size);
  std::string problem = why;
  if (!why.empty()) log_refusal(session, why);
  if (problem.empty() && filled) {
    span_on_worker_ = false;
    problem = decrypt_here(session);
  }
  if (!problem.empty()) return session.connection_lost(problem);  // as in Session::on_read
  session.read_done();
}

int TlsStream::write(uv_write_t *req, const uv_buf_t *bufs, unsigned count, uv_write_cb cb) {
  if (plaintext_) return uv_write(req, stream_, bufs, count, cb);
  if (!established_) return UV_ENOTCONN;
  auto write = std::make_shared<Write>(Write{req, cb});
  size_t total = 0;
  for (unsigned i = 0; i < count; i++) total += bufs[i].len;
  if (total <= kWorkerWriteBytes && waiting_.empty() && pieces_in_flight_ == 0) {
    // Small, and nothing queued before it: sealed here.
    auto piece = new_piece(write);
    piece->last = true;
    {
      std::lock_guard<std::mutex> lock(shared_->ssl_mutex);
      if (!shared_->seal(bufs, count)) {
        FEDCLD_LOG(warn, "TLS: cannot encrypt a write: %s", fedcl::tls_errors().c_str());
        shared_->out.clear();
        return UV_EPROTO;
      }
      shared_->emit(std::move(piece));
    }
    flush_sealed();
    return 0;
  }
  // In pieces, for the worker: slices of the caller's buffers.
  auto piece = new_piece(write);
  size_t in_piece = 0;
  for (unsigned i = 0; i < count; i++) {
    for (size_t off = 0; off < bufs[i].len;) {
      size_t take = std::min(bufs[i].len - off, kPieceBytes - in_piece);
      piece->plain.push_back(uv_buf_init(bufs[i].base + off, take));
      off += take;
      in_piece += take;
      if (in_piece < kPieceBytes) continue;
      waiting_.push_back(std::exchange(piece, new_piece(write)));
      in_piece = 0;
    }
  }
  if (in_piece > 0 || waiting_.empty() || waiting_.back()->write != write) waiting_.push_back(std::move(piece));
  waiting_.back()->last = true;
  schedule();
  return 0;
}

std::unique_ptr<TlsStream::Sealed> TlsStream::new_piece(const std::shared_ptr<Write> &write) {
  auto piece = std::make_unique<Sealed>();
  piece->write = write;
  return piece;
}

void TlsStream::schedule() {
  bool handed = false;
  while (pieces_in_flight_ < kPiecesInFlight && !waiting_.empty()) {
    auto piece = std::move(waiting_.front());
    waiting_.pop_front();
    piece->on_worker = true;
    pieces_in_flight_++;
    std::lock_guard<std::mutex> lock(shared_->mutex);
    shared_->to_seal.push_back(std::move(piece));
    handed = true;
  }
  if (handed) wake_worker();
}

void TlsStream::flush_sealed() {
  if (flushing_ || uv_is_closing(reinterpret_cast<uv_handle_t *>(stream_))) return;  // ~TlsStream cancels the rest
  flushing_ = true;
  for (;;) {
    std::unique_ptr<Sealed> piece;
    {
      std::lock_guard<std::mutex> lock(shared_->mutex);
      shared_->flush_posted = false;
      if (shared_->sealed.empty()) break;
      piece = std::move(shared_->sealed.front());
      shared_->sealed.pop_front();
    }
    if (piece->status != 0) {
      piece_written(*piece, piece->status);
      continue;
    }
    piece->shared = shared_;
    piece->req.data = piece.get();
    uv_buf_t buf = uv_buf_init(reinterpret_cast<char *>(piece->cipher.data()), piece->cipher.size());
    int err = uv_write(&piece->req, stream_, &buf, 1, on_piece_written);
    if (err != 0) piece_written(*piece, err);
    else piece.release();  // libuv's until on_piece_written
  }
  flushing_ = false;
}

void TlsStream::on_piece_written(uv_write_t *req, int status) {
  std::unique_ptr<Sealed> piece(static_cast<Sealed *>(req->data));
  if (TlsStream *owner = piece->shared->owner) owner->piece_written(*piece, status);
  else finish(*piece, status);
}

void TlsStream::piece_written(Sealed &piece, int status) {
  if (piece.on_worker) pieces_in_flight_--;
  finish(piece, status);
  if (piece.on_worker) schedule();
}

std::string DaemonTls::setup(const ServerOptions &options, const KeyStore &keys) {
  if (!options.tls) return {};
  std::string error;
  fedcl::TlsKeyLookup lookup;
  // An unknown user gets the store's decoy: the handshake then fails as with a wrong key. Peer links
  // name an identity no user of the key list can have, and prove the daemons' key.
  if (keys.requires_key() || !options.peer_key.empty())
    lookup = [&keys, peer_key = options.peer_key](const std::string &user) {
      return user == kPeerTlsUser ? peer_key : keys.key_for(user);
    };
  if (options.tls_cert.empty() != options.tls_key.empty())
    return "--tls-cert and --tls-key go together: a certificate and its private key";
  if (options.tls_cert.empty() && !lookup)
    return "--tls yes needs a trust root: a certificate (--tls-cert and --tls-key) or a key (--key-file or --key-list)";
  accept_ = fedcl::tls_server_context(options.tls_cert, options.tls_key, std::move(lookup), &error);
  if (!accept_) return error;
  // Peer links prove the daemons' key; without one, the peer's certificate is checked.
  peer_key_ = options.peer_key;
  dial_mode_ = peer_key_.empty() ? fedcl::TlsMode::cert : fedcl::TlsMode::psk;
  dial_ = fedcl::tls_client_context(dial_mode_, options.tls_ca, &error);
  if (!dial_) return error;
  return {};
}

std::vector<std::string> DaemonTls::certificate_names() const {
  if (!accept_) return {};
  return fedcl::tls_certificate_names(SSL_CTX_get0_certificate(accept_.get()));
}

std::unique_ptr<StreamTransport> DaemonTls::accepting(uv_stream_t *stream) const {
  if (!accept_) return std::make_unique<PlainStream>(stream);
  return std::make_unique<TlsStream>(stream, accept_.get());
}

std::unique_ptr<StreamTransport> DaemonTls::dialling(uv_stream_t *stream, const std::string &address,
                                                     std::string *error) const {
  if (!dial_) return std::make_unique<PlainStream>(stream);
  fedcl::TlsSession ssl = fedcl::tls_client_session(dial_.get(), dial_mode_, fedcl::tls_host_of(address), peer_key_.view(), kPeerTlsUser, error);
  if (!ssl) return nullptr;
  return std::make_unique<TlsStream>(stream, std::move(ssl));
}

}  // namespace fedcld
