#include "status_query.h"

#include <capnp/serialize.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>

#include "fedcl.capnp.h"
#include "frame.h"
#include "transport.h"

namespace fedcl {

namespace {

using Clock = std::chrono::steady_clock;

int remaining_ms(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left > 0 ? int(left) : 0;
}

// Moves size bytes over the connection before deadline; "" or why not.
std::string transfer(Transport &link, void *bytes, size_t size, bool sending, Clock::time_point deadline, int timeout_ms) {
  if (sending) {
    iovec piece{bytes, size};  // a request of a few hundred bytes: the socket's buffer takes it
    return link.send(&piece, 1);
  }
  auto *cursor = static_cast<uint8_t *>(bytes);
  while (size > 0) {
    ssize_t n = link.receive(cursor, size, false);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd p{link.fd(), POLLIN, 0};
      int ready = poll(&p, 1, remaining_ms(deadline));
      if (ready < 0 && errno == EINTR) continue;
      if (ready <= 0) return "no answer within " + std::to_string(timeout_ms) + " ms (a frozen or overloaded daemon?)";
      continue;
    }
    if (n < 0) return link.failure("receive");
    if (n == 0) return "the daemon closed the connection without answering (a fedcld too old for `fedcl status`?)";
    cursor += n;
    size -= size_t(n);
  }
  return {};
}

void copy_status(wire::DaemonStatus::Reader status, DaemonReport &report) {
  report.protocol = status.getProtocolVersion();
  report.node = status.getNode();
  report.uptime_seconds = status.getUptimeSeconds();
  report.max_sessions = status.getMaxSessions();
  report.max_session_memory = status.getMaxSessionMemory();
  for (auto platform : status.getPlatforms()) {
    DaemonReport::Platform copy{platform.getName(), {}};
    for (auto device : platform.getDevices()) copy.devices.push_back({device.getName(), device.getGlobalMemory()});
    report.platforms.push_back(std::move(copy));
  }
  report.sessions_shown = status.getSessionsShown();
  report.version = status.getVersion();
  report.admin = status.getAdmin();
  report.sessions_hidden = status.getSessionsHidden();
  report.sessions_started = status.getSessionsStarted();
  report.handshakes_refused = status.getHandshakesRefused();
  report.requests_failed = status.getRequestsFailed();
  report.worker_failures = status.getWorkerFailures();
  for (auto session : status.getSessions()) {
    DaemonReport::Session copy;
    copy.client = session.getClient();
    copy.platform = session.getPlatform();
    copy.memory = session.getMemoryBytes();
    copy.objects = session.getObjects();
    copy.seconds = session.getSeconds();
    copy.pid = session.getPid();
    copy.user = session.getUser();
    copy.address = session.getAddress();
    copy.transport = session.getTransport();
    copy.commands_in_flight = session.getCommandsInFlight();
    copy.requests = session.getRequests();
    copy.requests_failed = session.getRequestsFailed();
    copy.bytes_received = session.getBytesReceived();
    copy.bytes_sent = session.getBytesSent();
    for (auto link : session.getLinks())
      copy.links.push_back({link.getPeer(), link.getUp(), link.getBytesSent(), link.getBytesReceived(), link.getTransport()});
    report.sessions.push_back(std::move(copy));
  }
}

// A reply as read off the socket, and the reader over its words.
struct ReceivedReply {
  kj::Array<capnp::word> words;
  std::unique_ptr<capnp::FlatArrayMessageReader> reader;
  wire::Reply::Reader root() { return reader->getRoot<wire::Reply>(); }
};

// Sends request and reads the daemon's reply into *reply before the deadline; "" or why not (the
// daemon's refusal included).
std::string exchange(Transport &link, capnp::MessageBuilder &request, Clock::time_point deadline, int timeout_ms,
                     ReceivedReply *reply) {
  std::vector<uint8_t> out;
  frame_append(out, wire::FrameKind::REQUEST, request, 0);
  std::string why = transfer(link, out.data(), out.size(), true, deadline, timeout_ms);
  if (!why.empty()) return why;

  FrameHeader header{};
  why = transfer(link, &header, sizeof header, false, deadline, timeout_ms);
  if (!why.empty()) return why;
  why = frame_check(header);
  if (!why.empty() || header.kind != uint16_t(wire::FrameKind::REPLY) || header.payload_bytes != 0)
    return "the daemon's answer is not a fedcl reply" + (why.empty() ? "" : ": " + why);
  reply->reader.reset();
  reply->words = kj::heapArray<capnp::word>(header.message_words);
  why = transfer(link, reply->words.begin(), reply->words.asBytes().size(), false, deadline, timeout_ms);
  if (!why.empty()) return why;
  reply->reader = std::make_unique<capnp::FlatArrayMessageReader>(reply->words.asPtr());
  if (reply->root().getStatus() != 0) return reply->root().getMessage();
  return {};
}

// The StatusRequest, and on a daemon with a key the challenge-response, as a session's handshake.
std::string ask(Transport &link, const Credentials &credentials, Clock::time_point deadline, int timeout_ms,
                DaemonReport &report) {
  ClientAuth auth(credentials, link, report.endpoint);
  capnp::MallocMessageBuilder request;
  auto root = request.initRoot<wire::Request>();
  root.setSeq(1);
  auto status = root.initDaemonStatus();
  status.setProtocolVersion(wire::PROTOCOL_VERSION);
  status.setUser(auth.user());
  status.setNonce(auth.nonce());
  status.setDaemon(auth.daemon());
  ReceivedReply answer;
  std::string why = exchange(link, request, deadline, timeout_ms, &answer);
  if (why.empty() && answer.root().which() == wire::Reply::CHALLENGE) {
    capnp::MallocMessageBuilder proof;
    auto proof_root = proof.initRoot<wire::Request>();
    proof_root.setSeq(2);
    why = auth.answer(answer.root().getChallenge(), proof_root.initAuthenticate());
    if (why.empty()) why = exchange(link, proof, deadline, timeout_ms, &answer);
  }
  if (!why.empty()) return why;
  if (answer.root().which() != wire::Reply::DAEMON_STATUS) return "the daemon answered with something else than its status";
  auto daemon_status = answer.root().getDaemonStatus();
  why = auth.check_daemon(daemon_status.getProof());
  if (!why.empty()) return why;
  copy_status(daemon_status, report);
  return {};
}

}  // namespace

uint64_t DaemonReport::memory_in_use() const {
  uint64_t total = 0;
  for (const Session &session : sessions) total += session.memory;
  return total;
}

DaemonReport query_daemon_status(const std::string &endpoint, const Credentials &credentials, int timeout_ms) {
  DaemonReport report;
  report.endpoint = endpoint;
  auto start = Clock::now();
  auto deadline = start + std::chrono::milliseconds(timeout_ms);
  std::unique_ptr<Transport> link = dial(endpoint, timeout_ms, credentials, &report.error);
  if (!link) return report;
  try {
    report.error = ask(*link, credentials, deadline, timeout_ms, report);
  } catch (const kj::Exception &e) {
    report.error = "the daemon's answer is malformed: " + std::string(e.getDescription().cStr());
  }
  link.reset();
  report.answered = report.error.empty();
  report.answer_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  return report;
}

}  // namespace fedcl
