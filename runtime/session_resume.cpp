// A client's side of resuming a session whose connection dropped (connection.h, "Resumption").
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include "connection.h"
#include "transport.h"

namespace fedcl {

namespace {

// Past this many bytes received since the last Ack, the client sends one, so that what the daemon
// keeps for resending stays bounded while it streams a large read.
constexpr uint64_t kAckBytes = 4ull << 20;
// How long the Goodbye at exit waits for another thread that is writing to write it.
constexpr auto kGoodbyeWait = std::chrono::milliseconds(500);
// Between two dials that failed (a proxy that refuses connections while it restarts).
constexpr auto kRedialPause = std::chrono::milliseconds(100);

// Reads exactly size bytes off transport (outside the session's stream, so not counted). "" or why not.
std::string receive_exactly(Transport &transport, void *dst, size_t size) {
  auto *out = static_cast<uint8_t *>(dst);
  while (size > 0) {
    ssize_t got = transport.receive(out, size, true);
    if (got == 0) return "the connection closed";
    if (got < 0) {
      if (errno == EINTR) continue;
      return transport.failure("receive");
    }
    out += got;
    size -= got;
  }
  return {};
}

// Sends request on transport and reads its Reply frame (no more: the daemon's resent bytes follow).
std::string exchange(Transport &transport, capnp::MessageBuilder &request, kj::Array<capnp::word> *words) {
  std::vector<uint8_t> frame;
  frame_append(frame, wire::FrameKind::REQUEST, request, 0);
  iovec iov{frame.data(), frame.size()};
  std::string why = transport.send(&iov, 1);
  if (!why.empty()) return why;
  FrameHeader header;
  why = receive_exactly(transport, &header, sizeof header);
  if (!why.empty()) return why;
  std::string problem = frame_check(header);
  if (problem.empty() && (header.kind != uint16_t(wire::FrameKind::REPLY) || header.payload_bytes != 0))
    problem = "not a reply without payload";
  if (!problem.empty()) return "malformed answer to Resume: " + problem;
  *words = kj::heapArray<capnp::word>(header.message_words);
  return receive_exactly(transport, words->begin(), words->size() * sizeof(capnp::word));
}

}  // namespace

void Connection::count_received(size_t bytes) {
  received_ += bytes;
  if (!resumable() || received_ - received_acked_ < kAckBytes) return;
  received_acked_ = received_;
  // The flusher sends it: this thread never waits for a sender (the daemon may be blocked writing
  // to it while a sender waits for the daemon).
  ack_due_.store(received_, std::memory_order_release);
  arm();
}

void Connection::append_due_ack() {
  uint64_t received = ack_due_.exchange(0, std::memory_order_acq_rel);
  if (received == 0) return;
  RequestMessage ack;
  ack.root.setAck(received);
  queue_.append_frame(wire::FrameKind::REQUEST, ack.scratch.builder(), 0);
}

std::string Connection::resume_over(Transport &transport, uint64_t *daemon_received, bool *refused) {
  ClientAuth auth(credentials_, transport, endpoint_, resume_token_);
  ScratchMessage request;
  auto resume = request.builder().initRoot<wire::Request>().initResume();
  resume.setProtocolVersion(wire::PROTOCOL_VERSION);
  resume.setToken(capnp::Data::Reader(reinterpret_cast<const uint8_t *>(resume_token_.data()), resume_token_.size()));
  resume.setReceived(received_);
  resume.setUser(auth.user());
  resume.setNonce(auth.nonce());
  resume.setDaemon(auth.daemon());
  kj::Array<capnp::word> words;
  std::string why = exchange(transport, request.builder(), &words);
  if (!why.empty()) return why;
  try {
    auto reader = std::make_unique<capnp::FlatArrayMessageReader>(words.asPtr());
    if (reader->getRoot<wire::Reply>().which() == wire::Reply::CHALLENGE) {
      ScratchMessage proof;
      why = auth.answer(reader->getRoot<wire::Reply>().getChallenge(),
                        proof.builder().initRoot<wire::Request>().initAuthenticate());
      if (!why.empty()) return *refused = true, why;
      why = exchange(transport, proof.builder(), &words);
      if (!why.empty()) return why;
      reader = std::make_unique<capnp::FlatArrayMessageReader>(words.asPtr());
    }
    auto reply = reader->getRoot<wire::Reply>();
    *refused = true;  // from here on, the daemon has spoken
    if (reply.getStatus() != CL_SUCCESS) return reply.getMessage();
    if (reply.which() != wire::Reply::RESUMED) return "the daemon answered Resume with something else";
    why = auth.check_daemon(reply.getResumed().getProof());
    if (!why.empty()) return why;
    *daemon_received = reply.getResumed().getReceived();
    *refused = false;
    return {};
  } catch (const kj::Exception &e) {
    *refused = true;
    return std::string("malformed answer to Resume: ") + e.getDescription().cStr();
  }
}

void Connection::wait_acknowledged(uint64_t end) {
  std::unique_lock<std::mutex> lock(sent_mutex_);
  acknowledged_cv_.wait(lock, [&] { return sent_.acknowledged() >= end || !alive(); });
}

void Connection::say_goodbye() {
  std::unique_lock<std::mutex> lock(queue_mutex_);
  if (!alive() || !resumable() || link_down_) return;
  // Before the Goodbye leaves: the daemon may close the connection before the write returns.
  said_goodbye_.store(true, std::memory_order_release);
  RequestMessage goodbye;
  goodbye.root.setGoodbye();
  queue_.append_frame(wire::FrameKind::REQUEST, goodbye.scratch.builder(), 0);
  uint64_t end = queue_.end();
  drain(lock);
  // Another thread may be the writer: it writes the Goodbye too. Without the Goodbye the daemon
  // keeps the session, and what it holds on the device, for the whole resume window (seen on an
  // H100 under 8 CTS processes: contexts refused to the sessions that came next); a writer stuck in
  // a send for good must not hang the exit, though.
  written_cv_.wait_for(lock, kGoodbyeWait, [&] { return written_end_ >= end; });
}

bool Connection::dropped() {
  std::lock_guard<std::mutex> lock(queue_mutex_);
  if (link_down_ || !transport_) return true;
  // The receiver may not have read the close yet (a daemon killed a moment ago, whose peer already
  // reported that it cannot reach it): the socket knows.
  pollfd socket{transport_->fd(), POLLRDHUP, 0};
  return poll(&socket, 1, 0) == 1 && (socket.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

bool Connection::resume_session(const std::string &why_dropped) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(resume_window_ms_);
  // Senders blocked on the dead socket return, and from now on only keep their bytes.
  transport_->shutdown();
  {
    std::lock_guard<std::mutex> lock(queue_mutex_);
    link_down_ = true;
    send_error_.clear();
  }
  std::string why = "the daemon could not be reached again within its resume window (" +
                    std::to_string(resume_window_ms_) + " ms)";
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(flush_mutex_);
      if (stopping_) return false;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    std::string error;
    auto fresh = dial_daemon(int(std::min<long>(left.count(), connect_timeout_ms_)), &error);
    if (!fresh) {
      std::this_thread::sleep_for(kRedialPause);
      continue;
    }
    fresh->limit_silence(std::chrono::milliseconds(std::max<long>(left.count(), 1000)));
    uint64_t daemon_received = 0;
    bool refused = false;
    error = resume_over(*fresh, &daemon_received, &refused);
    if (!error.empty()) {
      if (refused) {
        why = error;
        break;
      }
      std::this_thread::sleep_for(kRedialPause);
      continue;  // the new connection dropped too: try again within the window
    }
    // This thread becomes the writer, so that nothing is written or kept between the resent bytes
    // (a writer at work only keeps its batch, the link being down).
    std::unique_lock<std::mutex> lock(queue_mutex_);
    written_cv_.wait(lock, [&] { return !writing_; });
    std::vector<iovec> pieces;
    {
      std::lock_guard<std::mutex> sent_lock(sent_mutex_);
      if (!sent_.pieces_from(daemon_received, &pieces)) {
        why = "the daemon says it received " + std::to_string(daemon_received) + " bytes, this client kept bytes " +
              std::to_string(sent_.acknowledged()) + " to " + std::to_string(sent_.sent());
        break;  // unlocks before lose(): its callbacks may queue requests
      }
    }
    writing_ = true;
    fresh->limit_silence(daemon_timeout());
    dropped_transports_.push_back(std::move(transport_));
    transport_ = std::move(fresh);
    Transport &transport = *transport_;
    lock.unlock();
    // The pieces stay valid: only this thread trims sent_ (acknowledgements) or adds to it (the writer).
    std::string failed;
    for (size_t first = 0; first < pieces.size() && failed.empty(); first += kPiecesPerSend)
      failed = transport.send(pieces.data() + first, int(std::min(kPiecesPerSend, pieces.size() - first)));
    lock.lock();
    writing_ = false;
    if (failed.empty())
      link_down_ = false;
    else
      transport.shutdown();  // dropped again while resending: the next receive finds it closed and resumes again
    written_cv_.notify_all();
    if (!queue_.empty()) arm(true);  // what was queued meanwhile; a receiver never writes
    return true;
  }
  lose(why_dropped + "; the session could not be resumed: " + why);
  return false;
}

}  // namespace fedcl
