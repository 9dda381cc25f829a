#include "tls_stream.h"

#include <openssl/err.h>

#include <cstring>

#include "keys.h"
#include "log.h"
#include "server.h"
#include "session.h"

namespace fedcld {

namespace {

// Ciphertext read at once: records are 16 KiB at most, several land per read.
constexpr size_t kCipherReadBytes = 256 * 1024;

// A write of ciphertext for the session's write req (null: OpenSSL's own bytes).
struct CipherWrite {
  uv_write_t req;  // first: libuv's callback gets its address
  fedcl::TlsBytes bytes;
  uv_write_t *outer = nullptr;
  uv_write_cb cb = nullptr;
};

int write_cipher(uv_stream_t *stream, CipherWrite *write) {
  uv_buf_t buf = uv_buf_init(reinterpret_cast<char *>(write->bytes.data()), write->bytes.size());
  int err = uv_write(&write->req, stream, &buf, 1, [](uv_write_t *req, int status) {
    auto *done = reinterpret_cast<CipherWrite *>(req);
    if (done->cb) done->cb(done->outer, status);
    delete done;
  });
  if (err != 0) delete write;
  return err;
}

}  // namespace

TlsStream::TlsStream(uv_stream_t *stream, fedcl::TlsSession ssl, bool accepting)
    : stream_(stream), ssl_(std::move(ssl)), accepting_(accepting), in_(new uint8_t[kCipherReadBytes]) {
  span_.out = &control_;
  BIO *bio = fedcl::tls_span_bio(&span_);
  SSL_set_bio(ssl_.get(), bio, bio);
  if (accepting_) SSL_set_accept_state(ssl_.get());
  else SSL_set_connect_state(ssl_.get());
}

std::string TlsStream::start(Session &session, std::function<void()> ready) {
  ready_ = std::move(ready);
  if (accepting_) return {};  // the client speaks first
  return handshake(session);  // the ClientHello
}

void TlsStream::alloc(Session &session, uv_buf_t *buf) {
  if (plaintext_) *buf = session.plaintext_buffer();
  else *buf = uv_buf_init(reinterpret_cast<char *>(in_.get()), kCipherReadBytes);
}

void TlsStream::flush_control() {
  if (control_.empty()) return;
  auto *write = new CipherWrite;
  write->bytes.swap(control_);
  write_cipher(stream_, write);  // a failure shows as the connection's next read failing
}

std::string TlsStream::handshake(Session &session) {
  ERR_clear_error();
  int ret = SSL_do_handshake(ssl_.get());
  flush_control();
  if (ret == 1) {
    established_ = true;
    if (auto ready = std::move(ready_)) ready();
    return {};
  }
  if (SSL_get_error(ssl_.get(), ret) == SSL_ERROR_WANT_READ) return {};
  std::string why = "TLS handshake failed: " + fedcl::tls_errors();
  long verify = SSL_get_verify_result(ssl_.get());
  if (verify != X509_V_OK) why += std::string(" (the peer's certificate: ") + X509_verify_cert_error_string(verify) + ")";
  FEDCLD_LOG(warn, "%s %llu (%s): %s", accepting_ ? "session" : "peer link", (unsigned long long)session.number(),
             session.peer().c_str(), why.c_str());
  return why;
}

std::string TlsStream::received(Session &session, const uv_buf_t &buf, size_t size) {
  if (plaintext_) {
    session.plaintext_landed(buf, size);
    return {};
  }
  if (size == 0) return {};  // libuv's "nothing after all"
  const auto *bytes = reinterpret_cast<const uint8_t *>(buf.base);
  if (first_bytes_ && accepting_) {
    first_bytes_ = false;
    if (!fedcl::tls_record_start(bytes, size)) {
      FEDCLD_LOG(warn, "session %llu (%s): a plain-TCP connection refused: this fedcld takes TLS connections only (--tls)",
                 (unsigned long long)session.number(), session.peer().c_str());
      plaintext_ = true;
      session.plaintext_refused = true;
      session.consume(bytes, size);
      return {};
    }
  }
  span_.in = bytes;
  span_.in_size = size;
  std::string why;
  if (!established_) why = handshake(session);
  while (why.empty() && established_ && !session.closed()) {
    uv_buf_t dest = session.plaintext_buffer();
    ERR_clear_error();
    int got = SSL_read(ssl_.get(), dest.base, int(dest.len));
    if (got > 0) {
      session.plaintext_landed(dest, got);
      continue;
    }
    int kind = SSL_get_error(ssl_.get(), got);
    if (kind == SSL_ERROR_WANT_READ) break;
    why = kind == SSL_ERROR_ZERO_RETURN ? "the other side ended the TLS session" : "TLS: " + fedcl::tls_errors();
  }
  span_.in = nullptr;
  span_.in_size = 0;
  flush_control();
  return why;
}

int TlsStream::write(uv_write_t *req, const uv_buf_t *bufs, unsigned count, uv_write_cb cb) {
  if (plaintext_) return uv_write(req, stream_, bufs, count, cb);
  if (!established_) return UV_ENOTCONN;
  flush_control();
  auto *write = new CipherWrite;
  write->outer = req;
  write->cb = cb;
  size_t total = 0;
  for (unsigned i = 0; i < count; i++) total += bufs[i].len;
  write->bytes.reserve(total + (total / fedcl::kTlsRecordBytes + 1) * 32);  // each record adds 22 bytes
  span_.out = &write->bytes;
  bool ok = true;
  if (count > 1 && total <= fedcl::kTlsRecordBytes) {
    // A reply and its small payload (and padding) as one record.
    uint8_t gathered[fedcl::kTlsRecordBytes];
    size_t used = 0;
    for (unsigned i = 0; i < count; i++) {
      std::memcpy(gathered + used, bufs[i].base, bufs[i].len);
      used += bufs[i].len;
    }
    size_t written = 0;
    ok = SSL_write_ex(ssl_.get(), gathered, used, &written) == 1;
  } else {
    for (unsigned i = 0; i < count && ok; i++) {
      size_t written = 0;
      ok = SSL_write_ex(ssl_.get(), bufs[i].base, bufs[i].len, &written) == 1;
    }
  }
  span_.out = &control_;
  if (!ok) {
    FEDCLD_LOG(warn, "TLS: cannot encrypt a write: %s", fedcl::tls_errors().c_str());
    delete write;
    return UV_EPROTO;
  }
  return write_cipher(stream_, write);
}

std::string DaemonTls::setup(const ServerOptions &options) {
  if (!options.tls) return {};
  std::string error;
  fedcl::TlsKeyLookup lookup;
  if (options.requires_key()) {
    lookup = [cluster = options.key, list = options.key_list](const std::string &user) {
      std::string why, key = key_for_user(cluster, list, user, &why);
      if (key.empty()) FEDCLD_LOG(warn, "TLS: no pre-shared key for user '%s': %s", user.c_str(), why.c_str());
      return key;
    };
  }
  if (options.tls_cert.empty() != options.tls_key.empty())
    return "--tls-cert and --tls-key go together: a certificate and its private key";
  if (options.tls_cert.empty() && !lookup)
    return "--tls yes needs a trust root: a certificate (--tls-cert and --tls-key) or a key (--key-file or --key-list)";
  accept_ = fedcl::tls_server_context(options.tls_cert, options.tls_key, std::move(lookup), &error);
  if (!accept_) return error;
  // Peer links prove the cluster key; without one, the peer's certificate is checked.
  cluster_key_ = options.key;
  dial_mode_ = cluster_key_.empty() ? fedcl::TlsMode::cert : fedcl::TlsMode::psk;
  dial_ = fedcl::tls_client_context(dial_mode_, options.tls_ca, &error);
  if (!dial_) return error;
  return {};
}

std::unique_ptr<StreamTransport> DaemonTls::accepting(uv_stream_t *stream) const {
  if (!accept_) return std::make_unique<PlainStream>(stream);
  fedcl::TlsSession ssl(SSL_new(accept_.get()));
  if (!ssl) return nullptr;
  return std::make_unique<TlsStream>(stream, std::move(ssl), true);
}

std::unique_ptr<StreamTransport> DaemonTls::dialling(uv_stream_t *stream, const std::string &address,
                                                     std::string *error) const {
  if (!dial_) return std::make_unique<PlainStream>(stream);
  fedcl::TlsSession ssl = fedcl::tls_client_session(dial_.get(), dial_mode_, fedcl::tls_host_of(address), cluster_key_, "", error);
  if (!ssl) return nullptr;
  return std::make_unique<TlsStream>(stream, std::move(ssl), false);
}

}  // namespace fedcld
