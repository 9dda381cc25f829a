#include "record_endpoint.h"

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "loopback_address.h"

namespace fedcl_test {

namespace {

constexpr int kHandshakeSeconds = 10;
// A send that makes no progress for this long fails (the other end stopped reading).
constexpr int kSendSeconds = 20;
// Ciphertext is sent once this much has been sealed (many small records to one send).
constexpr size_t kSendBatch = 256 * 1024;

// Limits on a receive's and a send's wait, in seconds (0: none).
void set_timeouts(int fd, int receive, int send) {
  timeval limit{receive, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
  limit.tv_sec = send;
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof limit);
}

bool send_all(int fd, const uint8_t *bytes, size_t size) {
  while (size > 0) {
    ssize_t done = ::send(fd, bytes, size, MSG_NOSIGNAL);
    if (done < 0 && errno == EINTR) continue;
    if (done <= 0) return false;
    bytes += done;
    size -= size_t(done);
  }
  return true;
}

}  // namespace

std::unique_ptr<RecordEndpoint> RecordEndpoint::dial(int port, const std::string &user, const std::string &key,
                                                     std::string *error) {
  fedcl::TlsContext ctx = fedcl::tls_client_context(fedcl::TlsMode::psk, "", error);
  if (!ctx) return nullptr;
  fedcl::TlsSession ssl = fedcl::tls_client_session(ctx.get(), fedcl::TlsMode::psk, "127.0.0.1", key, user, error);
  if (!ssl) return nullptr;
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address = loopback_address(port);
  if (fd < 0 || connect(fd, reinterpret_cast<sockaddr *>(&address), sizeof address) != 0) {
    *error = "cannot connect to 127.0.0.1:" + std::to_string(port) + ": " + std::strerror(errno);
    if (fd >= 0) close(fd);
    return nullptr;
  }
  std::unique_ptr<RecordEndpoint> end(new RecordEndpoint(fd, std::move(ctx), std::move(ssl)));
  *error = end->handshake(true);
  return error->empty() ? std::move(end) : nullptr;
}

std::unique_ptr<RecordEndpoint> RecordEndpoint::accept(int listener, const std::string &user, const std::string &key,
                                                       std::string *error) {
  fedcl::TlsContext ctx = fedcl::tls_server_context(
      "", "", [user, key](const std::string &asked) { return asked == user ? fedcl::Secret(key) : fedcl::Secret(); },
      error);
  if (!ctx) return nullptr;
  pollfd waiting{listener, POLLIN, 0};
  if (poll(&waiting, 1, kHandshakeSeconds * 1000) != 1) {
    *error = "no connection came within " + std::to_string(kHandshakeSeconds) + " s";
    return nullptr;
  }
  int fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
  if (fd < 0) {
    *error = std::string("accept: ") + std::strerror(errno);
    return nullptr;
  }
  fedcl::TlsSession ssl(SSL_new(ctx.get()));
  std::unique_ptr<RecordEndpoint> end(new RecordEndpoint(fd, std::move(ctx), std::move(ssl)));
  *error = end->handshake(false);
  return error->empty() ? std::move(end) : nullptr;
}

std::string RecordEndpoint::handshake(bool client) {
  if (!ssl_ || SSL_set_fd(ssl_.get(), fd_) != 1) return "cannot set up the TLS connection: " + fedcl::tls_errors();
  set_timeouts(fd_, kHandshakeSeconds, kHandshakeSeconds);
  int done = client ? SSL_connect(ssl_.get()) : SSL_accept(ssl_.get());
  if (done != 1) return fedcl::tls_handshake_failure(ssl_.get(), done, fedcl::TlsMode::psk, "the other end");
  set_timeouts(fd_, 0, kSendSeconds);  // a receive waits until stop()
  // OpenSSL has read nothing past the handshake: the records that follow are fedcl's to open.
  return records_.start(ssl_.get());
}

RecordEndpoint::~RecordEndpoint() {
  stop();
  close(fd_);
}

void RecordEndpoint::start_receiving() {
  receiver_ = std::thread([this] { receive(); });
}

void RecordEndpoint::receive() {
  std::vector<uint8_t> cipher(256 * 1024), plain(64 * 1024);
  std::string why;
  while (why.empty()) {
    ssize_t got = recv(fd_, cipher.data(), cipher.size(), 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      why = got == 0 ? "the other end closed the connection" : std::string("recv: ") + std::strerror(errno);
      break;
    }
    fedcl::TlsSpan span;
    span.in = cipher.data();
    span.in_size = size_t(got);
    for (;;) {
      ptrdiff_t opened = records_.read(span, plain.data(), plain.size(), &why);
      if (opened <= 0) break;
      received_.take(plain.data(), size_t(opened));
    }
    // Counted once the record layer has taken them: a test that waits for the peer's KeyUpdate to
    // show here then knows that fedcl has seen it (and owes its answer), not only that it arrived.
    std::lock_guard<std::mutex> lock(mutex_);
    received_tally_.take(cipher.data(), size_t(got));
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (!stopping_) receive_failure_ = why;
}

std::string RecordEndpoint::send(const std::vector<size_t> &writes) {
  std::vector<uint8_t> plain;
  fedcl::TlsBytes cipher;
  uint64_t offset = sent();
  for (size_t i = 0; i < writes.size(); i++) {
    plain.resize(writes[i]);
    pattern_fill(offset, plain.data(), plain.size());
    if (!records_.write(plain.data(), plain.size(), &cipher)) return "fedcl's record layer could not seal a write";
    offset += plain.size();
    if (cipher.size() < kSendBatch && i + 1 < writes.size()) continue;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      sent_tally_.take(cipher.data(), cipher.size());
    }
    if (!send_all(fd_, cipher.data(), cipher.size())) return std::string("send: ") + std::strerror(errno);
    cipher.clear();
    sent_.store(offset, std::memory_order_release);
  }
  return {};
}

RecordTally RecordEndpoint::sent_records() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return sent_tally_;
}

RecordTally RecordEndpoint::received_records() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return received_tally_;
}

std::string RecordEndpoint::receive_failure() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return receive_failure_;
}

void RecordEndpoint::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  shutdown(fd_, SHUT_RDWR);
  if (receiver_.joinable()) receiver_.join();
}

}  // namespace fedcl_test
