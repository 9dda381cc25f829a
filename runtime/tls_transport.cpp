#include "tls_transport.h"

#include <fcntl.h>
#include <openssl/err.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>

namespace fedcl {

namespace {

// Plaintext encrypted per send: bounds the buffer, and lets the socket take one piece while the
// next is encrypted.
constexpr size_t kSendPieceBytes = 1 << 20;
// Ciphertext taken off the socket per recv: many records per system call.
constexpr size_t kReceiveBytes = 256 * 1024;

// One client context per trust root and CA file, shared by every connection of the process.
SSL_CTX *client_context(TlsMode mode, const std::string &ca_file, std::string *error) {
  static std::mutex mutex;
  static std::map<std::pair<TlsMode, std::string>, TlsContext> contexts;
  std::lock_guard<std::mutex> lock(mutex);
  auto &ctx = contexts[{mode, ca_file}];
  if (!ctx) ctx = tls_client_context(mode, ca_file, error);
  return ctx.get();
}

// Waits until fd is ready for events, at most timeout_ms; false on timeout.
bool await(int fd, short events, int timeout_ms) {
  for (;;) {
    pollfd p{fd, events, 0};
    int ready = poll(&p, 1, timeout_ms);
    if (ready < 0 && errno == EINTR) continue;
    return ready != 0;  // an error shows in the next call on the socket
  }
}

}  // namespace

TlsTransport::TlsTransport(int fd, TlsSession ssl)
    : Transport(fd), ssl_(std::move(ssl)), in_(new uint8_t[kReceiveBytes]) {
  // The handshake used the socket itself (and, without read-ahead, read no byte past it); from now on
  // records come from in_ and go to out_, each filled and emptied in large pieces.
  BIO *bio = tls_span_bio(&span_);
  SSL_set_bio(ssl_.get(), bio, bio);
}

std::string TlsTransport::drain() {
  size_t done = 0;
  while (done < out_.size()) {
    ssize_t sent = ::send(fd_, out_.data() + done, out_.size() - done, MSG_NOSIGNAL);
    if (sent >= 0) {
      done += sent;
    } else if (errno != EINTR) {
      out_.clear();
      return std::string("send: ") + std::strerror(errno);
    }
  }
  out_.clear();
  return {};
}

// A request and its small payload (and padding) travel as one record.
std::string TlsTransport::send(iovec *iov, int count) {
  size_t total = 0;
  for (int i = 0; i < count; i++) total += iov[i].iov_len;
  if (count > 1 && total <= kTlsRecordBytes) {
    uint8_t gathered[kTlsRecordBytes];
    size_t used = 0;
    for (int i = 0; i < count; i++) {
      std::memcpy(gathered + used, iov[i].iov_base, iov[i].iov_len);
      used += iov[i].iov_len;
    }
    iovec one{gathered, used};
    return send(&one, 1);
  }
  for (int i = 0; i < count; i++) {
    const auto *bytes = static_cast<const uint8_t *>(iov[i].iov_base);
    size_t left = iov[i].iov_len;
    while (left > 0) {
      size_t piece = std::min(left, kSendPieceBytes - out_.size());  // out_ holds less than a piece here
      size_t written = 0;
      int ok;
      {
        std::lock_guard<std::mutex> lock(ssl_mutex_);
        span_.out = &out_;
        ok = SSL_write_ex(ssl_.get(), bytes, piece, &written);
        span_.out = nullptr;
      }
      if (!ok) return "send: TLS: " + tls_errors();
      bytes += written;
      left -= written;
      // Small pieces (a header, a small payload) join the next ones in one send.
      if (out_.size() >= kSendPieceBytes) {
        std::string why = drain();
        if (!why.empty()) return why;
      }
    }
  }
  return drain();
}

ssize_t TlsTransport::receive(void *dst, size_t size, bool wait) {
  for (;;) {
    int got, kind;
    {
      std::lock_guard<std::mutex> lock(ssl_mutex_);
      ERR_clear_error();
      got = SSL_read(ssl_.get(), dst, int(std::min<size_t>(size, 1 << 30)));
      kind = got > 0 ? SSL_ERROR_NONE : SSL_get_error(ssl_.get(), got);
      if (kind == SSL_ERROR_SSL) failure_ = tls_errors();
    }
    if (kind == SSL_ERROR_NONE) return got;
    if (kind == SSL_ERROR_ZERO_RETURN) return 0;
    if (kind != SSL_ERROR_WANT_READ) {
      errno = EPROTO;
      return -1;
    }
    // OpenSSL used up in_: more ciphertext from the socket (this thread alone receives). EAGAIN:
    // nothing there now, or nothing within the silence limit.
    ssize_t n = recv(fd_, in_.get(), kReceiveBytes, wait ? 0 : MSG_DONTWAIT);
    if (n <= 0) {
      if (n < 0 && errno == EINTR) continue;
      return n;
    }
    std::lock_guard<std::mutex> lock(ssl_mutex_);
    span_.in = in_.get();
    span_.in_size = size_t(n);
  }
}

std::string TlsTransport::failure(const char *what) const {
  if (errno == EPROTO && !failure_.empty()) return std::string(what) + ": TLS: " + failure_;
  return Transport::failure(what);
}

std::unique_ptr<Transport> tls_connect(int fd, const std::string &endpoint, const Credentials &credentials,
                                       std::chrono::steady_clock::time_point deadline, std::string *error) {
  SSL_CTX *ctx = client_context(credentials.tls, credentials.tls_ca, error);
  TlsSession ssl = ctx ? tls_client_session(ctx, credentials.tls, tls_host_of(endpoint), credentials.key, credentials.user, error)
                       : nullptr;
  if (!ssl) {
    close(fd);
    return nullptr;
  }
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  SSL_set_fd(ssl.get(), fd);
  for (;;) {
    ERR_clear_error();
    int ret = SSL_connect(ssl.get());
    if (ret == 1) break;
    int kind = SSL_get_error(ssl.get(), ret);
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if ((kind == SSL_ERROR_WANT_READ || kind == SSL_ERROR_WANT_WRITE) && left > 0) {
      if (await(fd, kind == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, int(left))) continue;
    }
    *error = kind == SSL_ERROR_WANT_READ || kind == SSL_ERROR_WANT_WRITE
                 ? "TLS handshake with " + endpoint + ": no answer in time (a frozen daemon?)"
                 : tls_handshake_failure(ssl.get(), ret, credentials.tls, endpoint);
    close(fd);
    return nullptr;
  }
  // A daemon that skipped the key for a certificate was refused by the empty store already; this is
  // the check that the key, not something else, made the session.
  if (credentials.tls == TlsMode::psk && !SSL_session_reused(ssl.get())) {
    *error = "TLS handshake with " + endpoint + " failed: the daemon did not take this client's pre-shared key";
    close(fd);
    return nullptr;
  }
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);  // non-blocking for the handshake's deadline only
  return std::make_unique<TlsTransport>(fd, std::move(ssl));
}

}  // namespace fedcl
