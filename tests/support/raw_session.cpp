#include "raw_session.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "auth.h"
#include "descriptor_passing.h"

namespace fedcl_test {

RawSession::RawSession(int port, int timeout_ms, const std::string &source) {
  fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ >= 0 && !source.empty()) {
    sockaddr_in from{};
    from.sin_family = AF_INET;
    if (inet_pton(AF_INET, source.c_str(), &from.sin_addr) != 1 || bind(fd_, reinterpret_cast<sockaddr *>(&from), sizeof from) != 0)
      throw std::runtime_error("bind to " + source + ": " + std::strerror(errno));
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd_ < 0 || connect(fd_, reinterpret_cast<sockaddr *>(&addr), sizeof addr) != 0)
    throw std::runtime_error(std::string("connect to the daemon: ") + std::strerror(errno));
  limit_reads(timeout_ms);
}

RawSession::RawSession(const std::string &local_socket, int timeout_ms) {
  fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", local_socket.c_str());
  ucred peer{};
  socklen_t size = sizeof peer;
  if (fd_ < 0 || connect(fd_, reinterpret_cast<sockaddr *>(&addr), sizeof addr) != 0 ||
      getsockopt(fd_, SOL_SOCKET, SO_PEERCRED, &peer, &size) != 0)
    throw std::runtime_error("connect to " + local_socket + ": " + std::strerror(errno));
  binding_ = "unix " + std::to_string(getpid()) + " " + std::to_string(peer.pid);
  limit_reads(timeout_ms);
}

void RawSession::limit_reads(int timeout_ms) {
  timeval tv{timeout_ms / 1000, (timeout_ms % 1000) * 1000};
  setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
}

bool RawSession::readable() const {
  pollfd ready{fd_, POLLIN, 0};
  return poll(&ready, 1, 0) == 1;
}

RawSession::~RawSession() {
  if (fd_ >= 0) close(fd_);
}

bool RawSession::send_bytes(const void *bytes, size_t size) {
  const auto *next = static_cast<const uint8_t *>(bytes);
  while (size > 0) {
    ssize_t sent = send(fd_, next, size, MSG_NOSIGNAL);
    if (sent < 0 && errno == EINTR) continue;
    if (sent <= 0) return false;
    next += sent;
    size -= sent;
  }
  return true;
}

bool RawSession::send_request(capnp::MessageBuilder &message) {
  std::vector<uint8_t> bytes;
  fedcl::frame_append(bytes, fedcl::wire::FrameKind::REQUEST, message, 0);
  return send_bytes(bytes.data(), bytes.size());
}

bool RawSession::send_request(capnp::MessageBuilder &message, int descriptor) {
  std::vector<uint8_t> bytes;
  fedcl::frame_append(bytes, fedcl::wire::FrameKind::REQUEST, message, 0);
  iovec iov{bytes.data(), bytes.size()};
  return fedcl::send_with_descriptor(fd_, &iov, 1, descriptor) == ssize_t(bytes.size());
}

bool RawSession::send_hello(uint32_t protocol_version, uint64_t seq) {
  capnp::MallocMessageBuilder message;
  auto request = message.initRoot<fedcl::wire::Request>();
  request.setSeq(seq);
  auto hello = request.initHello();
  hello.setProtocolVersion(protocol_version);
  hello.setClient("raw test client");
  return send_request(message);
}

bool RawSession::handshake(const std::string &user, const std::string &key, ReceivedFrame *last,
                           const std::string &dialled) {
  fedcl::Nonce nonce = fedcl::fresh_nonce();
  capnp::MallocMessageBuilder hello_message;
  auto request = hello_message.initRoot<fedcl::wire::Request>();
  request.setSeq(1);
  auto hello = request.initHello();
  hello.setProtocolVersion(fedcl::wire::PROTOCOL_VERSION);
  hello.setClient("raw test client");
  hello.setUser(user);
  hello.setNonce(fedcl::as_data(nonce));
  hello.setDaemon(dialled);
  if (!send_request(hello_message) || !read_frame(last)) return false;
  auto reply = last->reader->getRoot<fedcl::wire::Reply>();
  if (reply.which() != fedcl::wire::Reply::CHALLENGE) return true;
  capnp::MallocMessageBuilder proof_message;
  auto answer = proof_message.initRoot<fedcl::wire::Request>();
  answer.setSeq(2);
  auto proof = answer.initAuthenticate();
  if (!key.empty())
    proof.setProof(fedcl::as_data(fedcl::auth_proof(key, fedcl::AuthRole::client, reply.getChallenge().getNonce(),
                                                    fedcl::as_data(nonce), user, fedcl::AuthBinding{binding_, dialled, {}})));
  return send_request(proof_message) && read_frame(last);
}

bool RawSession::read_exact(void *dst, size_t size) {
  auto *next = static_cast<uint8_t *>(dst);
  while (size > 0) {
    ssize_t got = recv(fd_, next, size, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    received_ += got;
    next += got;
    size -= got;
  }
  return true;
}

bool RawSession::read_frame(ReceivedFrame *frame) {
  if (!read_exact(&frame->header, sizeof frame->header)) return false;
  if (!fedcl::frame_check(frame->header).empty()) return false;
  frame->words = kj::heapArray<capnp::word>(frame->header.message_words);
  if (!read_exact(frame->words.begin(), frame->words.size() * sizeof(capnp::word))) return false;
  uint64_t payload = frame->header.payload_bytes + fedcl::frame_padding(frame->header.payload_bytes);
  frame->payload.resize(static_cast<size_t>(payload));
  if (payload && !read_exact(frame->payload.data(), frame->payload.size())) return false;
  frame->payload.resize(static_cast<size_t>(frame->header.payload_bytes));
  frame->reader = std::make_unique<capnp::FlatArrayMessageReader>(frame->words.asPtr());
  return true;
}

bool RawSession::wait_closed() {
  uint8_t sink[4096];
  for (;;) {
    ssize_t got = recv(fd_, sink, sizeof sink, 0);
    if (got > 0) continue;
    if (got == 0) return true;
    if (errno == EINTR) continue;
    return errno == ECONNRESET || errno == EPIPE;  // a timeout means the session is still open
  }
}

}  // namespace fedcl_test
