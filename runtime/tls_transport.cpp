#include "tls_transport.h"

#include <fcntl.h>
#include <openssl/err.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>

namespace fedcl {

namespace {

// Ciphertext per send to the socket: bounds the buffers, and lets the socket take one piece while the
// next is encrypted.
constexpr size_t kSendPieceBytes = 512 * 1024;
// Sends larger than this hand their pieces to the writer's thread; smaller ones leave at once.
constexpr size_t kHandOffBytes = 256 * 1024;
// Receives of this much or more let the reader's thread read ahead.
constexpr size_t kReadAheadBytes = 1 << 20;
// How far short of a receive's size the reader stops: what the record layer holds of it already (a
// record's unread plaintext, part of the next record) is at most two records, and each record's
// ciphertext is longer than its plaintext.
constexpr size_t kReadAheadMargin = 2 * kTlsRecordMax;

// One client context per trust root and CA file, shared by every connection of the process. Never
// freed: connections (and the runtime's exit handler) may still use them while static objects are
// destroyed at exit.
SSL_CTX *client_context(TlsMode mode, const std::string &ca_file, std::string *error) {
  static std::mutex mutex;
  static auto *contexts = new std::map<std::pair<TlsMode, std::string>, TlsContext>;
  std::lock_guard<std::mutex> lock(mutex);
  auto &ctx = (*contexts)[{mode, ca_file}];
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

TlsTransport::TlsTransport(int fd, TlsSession ssl) : Transport(fd), ssl_(std::move(ssl)), writer_(fd), reader_(fd) {}

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
  bool hand_off = total > kHandOffBytes;
  std::string why;
  for (int i = 0; i < count && why.empty(); i++)
    why = encrypt(static_cast<const uint8_t *>(iov[i].iov_base), iov[i].iov_len, hand_off);
  if (why.empty()) why = writer_.post(hand_off);
  std::string failed = writer_.finish();  // returns once every byte is on the socket
  return why.empty() ? failed : why;
}

std::string TlsTransport::encrypt(const uint8_t *bytes, size_t size, bool hand_off) {
  while (size > 0) {
    TlsBytes &out = writer_.pending();
    size_t piece = std::min(size, kSendPieceBytes - out.size());  // out holds less than a piece here
    if (!records_.write(bytes, piece, &out)) return "send: TLS: cannot seal a record: " + tls_errors();
    bytes += piece;
    size -= piece;
    // Small pieces (a header, a small payload) join the next ones in one send.
    if (out.size() >= kSendPieceBytes) {
      std::string why = writer_.post(hand_off);
      if (!why.empty()) return why;
    }
  }
  return {};
}

ssize_t TlsTransport::receive(void *dst, size_t size, bool wait) {
  // A large landing: the reader may take its ciphertext off the socket while this thread decrypts.
  if (size >= kReadAheadBytes) reader_.read_ahead(reader_.given() - span_.in_size + size - kReadAheadMargin);
  for (;;) {
    ptrdiff_t got = records_.read(span_, static_cast<uint8_t *>(dst), size, &failure_);
    if (got > 0) return got;
    if (got < 0) {
      errno = EPROTO;
      return -1;
    }
    // The last ciphertext is used up: more (this thread alone receives). EAGAIN: nothing there now,
    // or nothing within the silence limit.
    const uint8_t *bytes;
    ssize_t n = reader_.next(&bytes, wait);
    if (n <= 0) {
      if (n < 0 && errno == EINTR) continue;
      return n;
    }
    span_.in = bytes;
    span_.in_size = size_t(n);
  }
}

std::string TlsTransport::failure(const char *what) const {
  if (errno == EPROTO && !failure_.empty()) return std::string(what) + ": " + failure_;
  return Transport::failure(what);
}

std::string TlsTransport::start() {
  channel_binding_ = tls_channel_binding(ssl_.get());
  if (channel_binding_.empty()) return "OpenSSL gave no exporter value to bind the proofs to: " + tls_errors();
  return records_.start(ssl_.get());
}

std::unique_ptr<Transport> tls_connect(int fd, const std::string &endpoint, const Credentials &credentials,
                                       std::chrono::steady_clock::time_point deadline, std::string *error) {
  SSL_CTX *ctx = client_context(credentials.tls, credentials.tls_ca, error);
  TlsSession ssl = ctx ? tls_client_session(ctx, credentials.tls, tls_host_of(endpoint), credentials.key.view(), credentials.user, error)
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
  auto transport = std::make_unique<TlsTransport>(fd, std::move(ssl));  // owns fd now
  std::string why = transport->start();
  if (!why.empty()) {
    *error = "TLS with " + endpoint + ": " + why;
    return nullptr;
  }
  return transport;
}

}  // namespace fedcl
