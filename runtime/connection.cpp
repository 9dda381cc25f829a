#include "connection.h"
#include "host_cores.h"
#include "host_identity.h"
#include "message_check.h"
#include "same_node.h"
#include "spin_wait.h"
#include "trace.h"

#include "transfer_chunks.h"
#include "transport.h"

#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace fedcl {

namespace {

constexpr size_t kCoalesceBytes = 64 * 1024;   // past this, queued requests leave at once
constexpr size_t kInlinePayloadBytes = 64 * 1024;  // smaller payloads are copied into the batch
// Payloads from this size on are kept for resending by reference: the call then waits for the
// daemon's acknowledgement (about one round trip) instead of copying them.
constexpr size_t kReferencedPayloadBytes = 1 << 20;
constexpr size_t kReceiveBufferBytes = 256 * 1024;
// A local session's shared memory: slots of a transfer's largest piece (transfer_chunks.h), enough
// of them for a transfer's pieces to overlap the two ends' copies; payloads and reads from 64 KiB
// go through it (smaller ones cost less on the socket than a slot's bookkeeping).
constexpr uint64_t kSharedSlotBytes = kMaxTransferChunkBytes;
constexpr uint32_t kSharedSlots = 16;
constexpr uint64_t kSharedMinBytes = 64 * 1024;
// How long a thread waits for a slot while none is freed before the bytes go on the socket instead.
constexpr int kSlotWaitMs = 50;

std::chrono::microseconds flush_delay() {
  static const long us = [] {
    const char *text = std::getenv("FEDCL_FLUSH_US");
    return text ? std::strtol(text, nullptr, 10) : 50L;
  }();
  return std::chrono::microseconds(us);
}

// Set on receiver threads: they never write to a socket (the daemon on the other end may be blocked
// writing to this process, and another receiver waiting on it), so the flusher writes for them.
thread_local bool t_receiver_thread = false;

// Ends a call whose reply will never come: the daemon is gone.
void fail_pending(PendingReply &pending, std::string message) {
  std::lock_guard<std::mutex> lock(pending.mutex);
  pending.status = CL_DEVICE_NOT_AVAILABLE;
  pending.message = std::move(message);
  pending.done = true;
  pending.cv.notify_all();
}

}  // namespace

bool spare_cores() {
  static const bool spare = usable_cores() >= 4;
  return spare;
}

std::chrono::microseconds spin_time() {
  static const long us = [] {
    const char *text = std::getenv("FEDCL_SPIN_US");
    // Long enough to span a short kernel (a wake-up costs 25-30 us on a virtual GPU node), where a
    // core can be spared for it; a short one where the backend needs every core.
    return text ? std::strtol(text, nullptr, 10) : spare_cores() ? 1000L : 100L;
  }();
  return std::chrono::microseconds(us);
}

// How long a daemon may stay silent before it counts as lost (FEDCL_DAEMON_TIMEOUT, seconds; connection.h). A
// daemon sends a heartbeat every half second when it has nothing else to say, also while kernels run,
// so silence means a daemon that is frozen or cut off; TCP keepalive cannot tell, since a frozen
// daemon's kernel still answers it.
std::chrono::milliseconds daemon_timeout() {
  static const long ms = [] {
    const char *text = std::getenv("FEDCL_DAEMON_TIMEOUT");
    double seconds = text ? std::strtod(text, nullptr) : 10.0;
    return long(std::max(seconds, 2.0) * 1000);  // two heartbeats' room at least
  }();
  return std::chrono::milliseconds(ms);
}

bool sync_mode() {
  static const bool on = [] {
    const char *text = std::getenv("FEDCL_SYNC");
    return text && *text && std::strcmp(text, "0") != 0;
  }();
  return on;
}

Connection::Connection(size_t index, std::string endpoint, uint32_t platform, ConnectionListener *listener)
    : index_(index),
      endpoint_(std::move(endpoint)),
      platform_(platform),
      listener_(listener),
      in_(new uint8_t[kReceiveBufferBytes]) {}

Connection::~Connection() {
  {
    std::lock_guard<std::mutex> lock(flush_mutex_);
    stopping_ = true;
  }
  flush_cv_.notify_all();
  if (transport_) transport_->shutdown();
  if (flusher_.joinable()) flusher_.join();
  if (receiver_.joinable()) receiver_.join();
}

std::shared_ptr<PendingReply> Connection::handshake_call(RequestMessage &request, int timeout_ms) {
  auto pending = send_call(request);
  flush();
  // A peer that accepts but never answers must not hang the application. (A socket receive timeout
  // would also cut off the receiver's next read, which may already have started.)
  {
    std::unique_lock<std::mutex> lock(pending->mutex);
    if (!pending->cv.wait_for(lock, std::chrono::milliseconds(timeout_ms), [&] { return pending->done.load(); })) {
      lock.unlock();
      lose("no answer to the handshake within " + std::to_string(timeout_ms) + " ms");
    }
  }
  wait(*pending);
  return pending;
}

std::unique_ptr<Transport> Connection::dial_daemon(int timeout_ms, std::string *error) {
  if (local_.socket.empty()) return dial(endpoint_, timeout_ms, credentials_, error);
  return dial_local(local_.socket, local_.pid, timeout_ms, error);
}

std::unique_ptr<Connection> Connection::fresh() const {
  return std::make_unique<Connection>(index_, endpoint_, platform_, listener_);
}

std::string open_session(std::unique_ptr<Connection> &connection, int timeout_ms, const Credentials &credentials) {
  std::string why = connection->open(timeout_ms, credentials);
  if (!why.empty() || !connection->redirected()) return why;
  std::unique_ptr<Connection> local = connection->fresh();
  local->go_local(connection->redirect());
  why = local->open(timeout_ms, credentials);
  if (why.empty() || !local->dial_failed() || local_mode() == LocalMode::on) {
    connection = std::move(local);
    return why;
  }
  // Another mount namespace (a container) that shares the host's kernel: the daemon is as far as
  // another host's.
  std::unique_ptr<Connection> tcp = connection->fresh();
  tcp->keep_to_tcp();
  connection = std::move(tcp);
  return connection->open(timeout_ms, credentials);
}

std::string Connection::open(int timeout_ms, const Credentials &credentials) {
  static const bool traced = [] {
    const char *path = std::getenv("FEDCL_TRACE");
    std::string why = path && *path ? trace::start(path) : "";
    if (!why.empty()) std::fprintf(stderr, "fedcl: FEDCL_TRACE: %s\n", why.c_str());
    return why.empty();
  }();
  (void)traced;
  credentials_ = credentials;
  connect_timeout_ms_ = timeout_ms;
  std::string error;
  transport_ = dial_daemon(timeout_ms, &error);
  dial_failed_ = !transport_;
  if (!transport_) return error;
  // The daemon's heartbeat: a receive that waits this long for a single byte gives up.
  transport_->limit_silence(daemon_timeout());
  sockaddr_storage mine{};
  socklen_t mine_size = sizeof mine;
  if (getsockname(transport_->fd(), reinterpret_cast<sockaddr *>(&mine), &mine_size) == 0 && mine.ss_family != AF_UNIX)
    local_port_ = ntohs(reinterpret_cast<sockaddr_in *>(&mine)->sin_port);  // same place in IPv6
  alive_ = true;
  receiver_ = std::thread([this] { receiver_main(); });
  flusher_ = std::thread([this] { flusher_main(); });

  ClientAuth auth(credentials, *transport_, endpoint_);
  RequestMessage request;
  auto hello = request.root.initHello();
  hello.setProtocolVersion(wire::PROTOCOL_VERSION);
  hello.setUser(auth.user());
  hello.setNonce(auth.nonce());
  hello.setDaemon(auth.daemon());
  char host[128] = {};
  gethostname(host, sizeof host - 1);
  std::string me = std::string(host) + ":" + std::to_string(getpid());
  hello.setClient(me);
  hello.setPlatform(platform_);
  // Over TCP, the client names its host: a daemon of the same host sends it to its local socket.
  bool offers_local = !local() && !tcp_only_ && local_mode() != LocalMode::off && !host_identity().empty();
  if (offers_local)
    hello.setHost(capnp::Data::Reader(reinterpret_cast<const uint8_t *>(host_identity().data()), host_identity().size()));
  auto answer = handshake_call(request, timeout_ms);
  if (answer->status != CL_SUCCESS) return answer->message.empty() ? "no answer to Hello" : answer->message;
  // Read here and (the HelloReply) by the runtime for as long as the session lasts: a malformed
  // pointer in it would throw in the application's thread (found by tests/fuzz/handshake_fuzzer).
  std::string malformed = message_check(answer->reply());
  if (!malformed.empty()) return "malformed answer to Hello: " + malformed;
  if (answer->reply().which() == wire::Reply::LOCAL) {
    if (!offers_local) return "the daemon sent this connection to a local socket it was not asked for";
    redirect_ = {answer->reply().getLocal().getSocket(), answer->reply().getLocal().getPid()};
    if (redirect_.socket.empty()) return "the daemon sent this connection to a local socket without a path";
    return {};
  }
  if (answer->reply().which() == wire::Reply::CHALLENGE) {
    RequestMessage authenticate;
    std::string why = auth.answer(answer->reply().getChallenge(), authenticate.root.initAuthenticate());
    if (!why.empty()) return why;
    answer = handshake_call(authenticate, timeout_ms);
    if (answer->status != CL_SUCCESS) return answer->message.empty() ? "no answer to the proof" : answer->message;
    malformed = message_check(answer->reply());
    if (!malformed.empty()) return "malformed answer to the proof: " + malformed;
  }
  if (answer->reply().which() != wire::Reply::HELLO) return "the daemon answered Hello with something else";
  std::string why = auth.check_daemon(answer->reply().getHello().getProof());
  if (!why.empty()) return why;
  hello_ = std::move(answer);
  hello_->reader = kept_message_reader(hello_->words.asPtr());  // read for the whole session
  node_ = hello_->reply().getHello().getNode();
  auto daemon_host = hello_->reply().getHello().getHost();
  if (local_mode() == LocalMode::on && !local() && !tcp_only_ && !host_identity().empty() &&
      daemon_host.size() == host_identity().size() && std::memcmp(daemon_host.begin(), host_identity().data(), daemon_host.size()) == 0)
    return "FEDCL_LOCAL=on: the daemon runs on this host but offers no local socket (fedcld --local-socket)";
  {
    std::lock_guard<std::mutex> lock(queue_mutex_);
    auto token = hello_->reply().getHello().getResumeToken();
    resume_token_.assign(reinterpret_cast<const char *>(token.begin()), token.size());
    resume_window_ms_ = hello_->reply().getHello().getResumeWindowMs();
    if (!resumable()) {
      // A daemon that does not resume (--resume-window 0, an older fedcld): nothing is kept.
      keeps_sent_ = false;
      std::lock_guard<std::mutex> sent_lock(sent_mutex_);
      sent_ = ResendBuffer();
    }
  }
  serving_ = true;
  if (local()) share_memory();
  return {};
}

void Connection::share_memory() {
  auto region = std::make_unique<SharedRegion>();
  if (!region->create(kSharedSlotBytes, kSharedSlots).empty()) return;  // the socket carries everything
  RequestMessage request;
  auto shared = request.root.initSharedMemory();
  shared.setBytes(region->bytes());
  shared.setSlotBytes(region->slot_bytes());
  shared.setSlots(region->slots());
  request.descriptor = region->fd();
  // Only once the daemon has mapped it may a request name a slot.
  if (call(request)->status == CL_SUCCESS) shared_ = std::move(region);
}

bool Connection::uses_shared(uint64_t bytes) const {
  return shared_ && bytes >= kSharedMinBytes && bytes <= shared_->slot_bytes();
}

long Connection::take_slot() {
  for (;;) {
    uint32_t seen = shared_->released();
    long slot = shared_->try_take();
    // A receiver thread never waits: it is what frees the slots of reads. Nor does anyone while the
    // slots stand still since a wait gave up (until one is freed).
    if (slot >= 0 || t_receiver_thread || !alive() || seen == slots_stalled_at_.load(std::memory_order_relaxed))
      return slot;
    shared_->wait_released(seen, kSlotWaitMs);
    if (shared_->released() == seen) {
      slots_stalled_at_.store(seen, std::memory_order_relaxed);
      return -1;
    }
  }
}

bool Connection::put_in_slot(RequestMessage &request, const void *payload, uint64_t payload_bytes) {
  long slot = take_slot();
  if (slot < 0) return false;
  std::memcpy(shared_->slot(uint32_t(slot)), payload, payload_bytes);
  auto span = request.root.initSharedPayload();
  span.setSlot(uint32_t(slot));
  span.setBytes(payload_bytes);
  return true;
}

// ---------------------------------------------------------------------------------------------
// Sending. Threads append to queue_ under queue_mutex_, which is never held across a socket call;
// one thread at a time is the writer (writing_) and writes batches with the lock released. A thread
// that appends while another writes leaves its bytes to that writer.


void Connection::arm(bool now) {
  if (now) urgent_.store(true, std::memory_order_release);
  if (armed_.exchange(true, std::memory_order_acq_rel) && !now) return;  // the flusher is already counting
  // Taking flush_mutex_ orders this against the flusher's check; notifying outside it spares the
  // woken thread from blocking on a lock this thread still holds.
  { std::lock_guard<std::mutex> lock(flush_mutex_); }
  flush_cv_.notify_one();
}

std::string Connection::write_batch(const SendQueue::Batch &batch, Transport &transport, bool keep, bool link_down) {
  if (keep) {
    // Kept until the daemon says it has them: copied, since the application may reuse its memory
    // as soon as the call returns, unless the caller waits for the acknowledgement (referenced).
    std::lock_guard<std::mutex> lock(sent_mutex_);
    for (const auto &segment : batch.segments) {
      if (segment.referenced)
        sent_.append_shared(nullptr, segment.data(), segment.size());
      else
        sent_.append_copy(segment.data(), segment.size());
    }
  }
  if (link_down) return {};  // the receiver is resuming the session; it resends these bytes from sent_
  iovec iov[kPiecesPerSend];
  int count = 0;
  int descriptor = -1;  // goes beside iov[0]
  auto send = [&] {
    std::string why = descriptor >= 0 ? transport.send_with_descriptor(iov, count, descriptor) : transport.send(iov, count);
    count = 0;
    descriptor = -1;
    return why;
  };
  for (const auto &segment : batch.segments) {
    if (segment.descriptor >= 0 && count) {
      std::string why = send();
      if (!why.empty()) return why;
    }
    if (segment.descriptor >= 0) descriptor = segment.descriptor;
    if (segment.size() == 0) continue;
    iov[count++] = {const_cast<void *>(segment.data()), size_t(segment.size())};
    if (count < int(kPiecesPerSend)) continue;
    std::string why = send();
    if (!why.empty()) return why;
  }
  return count ? send() : std::string();
}

void Connection::drain(std::unique_lock<std::mutex> &lock, int rounds) {
  if (writing_) return;  // the writer at work takes what was appended when it looks again
  if (t_receiver_thread) {
    if (!queue_.empty()) arm(true);
    return;
  }
  writing_ = true;
  for (int round = 0; !queue_.empty(); round++) {
    if (rounds && round == rounds) {
      // Other threads keep appending: the flusher writes on, so that this caller gets to its work.
      arm(true);
      break;
    }
    append_due_ack();
    auto batch = queue_.take();
    Transport *transport = transport_.get();
    bool keep = keeps_sent_, link_down = link_down_, live = alive();
    lock.unlock();
    std::string why = live ? write_batch(batch, *transport, keep, link_down) : std::string();
    lock.lock();
    if (!why.empty()) {
      transport->shutdown();
      if (resumable())
        link_down_ = true;  // the receiver finds the connection closed and resumes
      else if (send_error_.empty())
        send_error_ = why;  // the receiver reports the loss: here, a caller may hold an object's lock
    }
    written_end_ = batch.end;
    queue_.recycle(std::move(batch));
  }
  writing_ = false;
  written_cv_.notify_all();
}

void Connection::wait_written(std::unique_lock<std::mutex> &lock, uint64_t end) {
  written_cv_.wait(lock, [&] { return written_end_ >= end; });
}

uint64_t Connection::append_payload(const void *payload, uint64_t payload_bytes, bool referenced) {
  if (payload_bytes < kInlinePayloadBytes) {
    queue_.append_copy(payload, payload_bytes);
    return 0;
  }
  return queue_.append_borrowed(payload, payload_bytes, referenced);
}

cl_int Connection::post(RequestMessage &request, const void *payload, uint64_t payload_bytes) {
  if (sync_mode()) {
    auto pending = call(request, payload, payload_bytes);
    return pending->status;
  }
  if (!alive()) return CL_DEVICE_NOT_AVAILABLE;
  if (uses_shared(payload_bytes) && put_in_slot(request, payload, payload_bytes)) payload_bytes = 0;
  std::unique_lock<std::mutex> lock(queue_mutex_);
  queue_.append_frame(wire::FrameKind::REQUEST, request.scratch.builder(), payload_bytes);
  bool referenced = keeps_sent_ && payload_bytes >= kReferencedPayloadBytes;
  uint64_t borrowed_end = payload_bytes ? append_payload(payload, payload_bytes, referenced) : 0;
  if (borrowed_end) {
    // The application's memory is written from: it may change once the bytes have left (or, kept
    // for resending by reference, once the daemon has them).
    drain(lock);
    wait_written(lock, borrowed_end);
    if (!send_error_.empty()) return CL_DEVICE_NOT_AVAILABLE;
    lock.unlock();
    if (referenced) wait_acknowledged(borrowed_end);
    return alive() ? CL_SUCCESS : CL_DEVICE_NOT_AVAILABLE;
  }
  if (queue_.waiting_bytes() >= kCoalesceBytes) {
    drain(lock);
    return send_error_.empty() ? CL_SUCCESS : CL_DEVICE_NOT_AVAILABLE;
  }
  lock.unlock();
  arm();
  return CL_SUCCESS;
}

void Connection::queue(RequestMessage &request) {
  if (!alive()) return;
  {
    std::lock_guard<std::mutex> lock(queue_mutex_);
    queue_.append_frame(wire::FrameKind::REQUEST, request.scratch.builder(), 0);
  }
  arm();
}

std::shared_ptr<PendingReply> Connection::send_call(RequestMessage &request, const void *payload,
                                                    uint64_t payload_bytes, void *read_dest, uint64_t read_size,
                                                    std::function<void()> landed) {
  auto pending = std::make_shared<PendingReply>();
  pending->seq = next_seq_.fetch_add(1, std::memory_order_relaxed);
  pending->read_dest = read_dest;
  pending->read_size = read_size;
  pending->landed = std::move(landed);
  request.root.setSeq(pending->seq);
  if (uses_shared(payload_bytes) && put_in_slot(request, payload, payload_bytes)) payload_bytes = 0;
  if (read_dest && uses_shared(read_size)) {
    pending->shared_slot = take_slot();
    if (pending->shared_slot >= 0) {
      auto span = request.root.initSharedReply();
      span.setSlot(uint32_t(pending->shared_slot));
      span.setBytes(read_size);
    }
  }
  {
    std::lock_guard<std::mutex> lock(pending_mutex_);
    if (!alive()) {
      pending->done = true;
      pending->status = CL_DEVICE_NOT_AVAILABLE;
      pending->message = "fedcl: daemon " + endpoint_ + " is gone: " + lost_reason_;
      return pending;
    }
    pending_.emplace(pending->seq, pending);
  }
  std::unique_lock<std::mutex> lock(queue_mutex_);
  queue_.append_frame(wire::FrameKind::REQUEST, request.scratch.builder(), payload_bytes, request.descriptor);
  uint64_t borrowed_end = payload_bytes ? append_payload(payload, payload_bytes, false) : 0;
  trace::mark(trace::Point::client_sent, local_port_, pending->seq);
  drain(lock);
  if (borrowed_end) wait_written(lock, borrowed_end);
  return pending;
}

cl_int Connection::wait(PendingReply &pending) {
  spin_then_wait(pending.mutex, pending.cv, [&] { return pending.done.load(std::memory_order_acquire); });
  trace::mark(trace::Point::client_resumed, local_port_, pending.seq);
  return pending.status;
}

std::shared_ptr<PendingReply> Connection::call(RequestMessage &request, const void *payload, uint64_t payload_bytes) {
  auto pending = send_call(request, payload, payload_bytes);
  wait(*pending);
  return pending;
}

void Connection::flush() {
  std::unique_lock<std::mutex> lock(queue_mutex_);
  trace::mark(trace::Point::client_flushed, local_port_, 0);
  drain(lock);
}

void Connection::flusher_main() {
  // The timer flush is a back-stop for requests no waiting call has sent yet. SCHED_BATCH: a fair
  // share of the CPU like any thread of the application (at idle priority it starved on a busy
  // host), but waking it does not preempt the thread that just queued a request.
  sched_param normal{};
  pthread_setschedparam(pthread_self(), SCHED_BATCH, &normal);
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(flush_mutex_);
      flush_cv_.wait(lock, [&] { return armed_.load(std::memory_order_acquire) || stopping_; });
      if (stopping_) return;
    }
    // Let more requests join the batch, unless a thread handed its writing over (armed_ stays set
    // meanwhile, so that requests queued now do not wake us again).
    if (!urgent_.exchange(false, std::memory_order_acq_rel)) std::this_thread::sleep_for(flush_delay());
    std::unique_lock<std::mutex> lock(queue_mutex_);
    // Cleared under queue_mutex_ before writing: a request queued after the batch is taken arms us again.
    armed_.store(false, std::memory_order_release);
    append_due_ack();
    drain(lock, 0);
  }
}

// ---------------------------------------------------------------------------------------------
// Receiving

ssize_t Connection::receive(void *dst, size_t size) {
  // Poll while a thread spins for an answer (spin_wait.h) and, with cores to spare, for a while
  // after the last bytes came (the next answer of a program in a loop comes soon); sleep in recv
  // otherwise.
  auto until = last_received_ + (spare_cores() ? spin_time() : std::chrono::microseconds(0));
  while (spinning_waiters.load(std::memory_order_relaxed) > 0 || std::chrono::steady_clock::now() < until) {
    ssize_t got = transport_->receive(dst, size, false);
    if (got >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
      last_received_ = std::chrono::steady_clock::now();
      return got;
    }
    std::this_thread::yield();
  }
  ssize_t got = transport_->receive(dst, size, true);
  last_received_ = std::chrono::steady_clock::now();
  return got;
}

bool Connection::read_exact(void *dst, size_t size) {
  auto *out = static_cast<uint8_t *>(dst);
  while (size > 0) {
    if (in_begin_ < in_end_) {
      size_t take = std::min(size, in_end_ - in_begin_);
      std::memcpy(out, in_.get() + in_begin_, take);
      in_begin_ += take;
      out += take;
      size -= take;
      continue;
    }
    // Large reads go straight to their destination; small ones through the buffer.
    bool direct = size >= kReceiveBufferBytes / 2;
    ssize_t got = receive(direct ? out : in_.get(), direct ? size : kReceiveBufferBytes);
    if ((got == 0 || (got < 0 && errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK)) && resumable() && alive() &&
        !said_goodbye_.load(std::memory_order_acquire)) {
      // The connection dropped (closed, reset, a send failed), not a silent daemon: resume.
      if (resume_session(got == 0 ? "the daemon's side closed the connection" : transport_->failure("receive"))) continue;
      return false;
    }
    if (got == 0 || (got < 0 && errno != EINTR)) {
      std::string reason = got == 0 ? "the daemon closed the connection"
                           : errno == EAGAIN ? "no word from the daemon for " + std::to_string(daemon_timeout().count()) +
                                                   " ms (FEDCL_DAEMON_TIMEOUT): it is frozen or cut off"
                                             : transport_->failure("receive");
      {
        std::lock_guard<std::mutex> lock(queue_mutex_);
        if (!send_error_.empty()) reason = send_error_;
      }
      lose(reason);
      return false;
    }
    if (got < 0) continue;
    count_received(got);
    if (direct) {
      out += got;
      size -= got;
    } else {
      in_begin_ = 0;
      in_end_ = got;
    }
  }
  return true;
}

bool Connection::discard(uint64_t size) {
  uint8_t sink[4096];
  while (size > 0) {
    size_t take = std::min<uint64_t>(size, sizeof sink);
    if (!read_exact(sink, take)) return false;
    size -= take;
  }
  return true;
}

bool Connection::write_printf(uint64_t size) {
  uint8_t chunk[16 * 1024];
  while (size > 0) {
    size_t take = std::min<uint64_t>(size, sizeof chunk);
    if (!read_exact(chunk, take)) return false;
    std::fwrite(chunk, 1, take, stdout);
    size -= take;
  }
  std::fflush(stdout);
  return true;
}

void Connection::receiver_main() {
  t_receiver_thread = true;
  // A reply's call leaves pending_ when the reply's header comes, and lose() fails only what is still
  // there: every way out after that fails the call itself, or its caller waits for ever.
  auto fail_taken = [this](PendingReply &taken) {
    std::string reason;
    {
      std::lock_guard<std::mutex> lock(pending_mutex_);
      reason = lost_reason_;
    }
    fail_pending(taken, "fedcl: lost daemon " + endpoint_ + ": " + reason);
  };
  for (;;) {
    FrameHeader header;
    if (!read_exact(&header, sizeof header)) return;
    std::string problem = frame_check(header);
    if (problem.empty() && header.kind != uint16_t(wire::FrameKind::REPLY) && header.kind != uint16_t(wire::FrameKind::NOTICE))
      problem = "the daemon sent a frame of kind " + std::to_string(header.kind) + ", neither a reply nor a notice";
    if (!problem.empty()) {
      lose("malformed frame from the daemon: " + problem);
      return;
    }
    auto words = kj::heapArray<capnp::word>(header.message_words);
    if (!read_exact(words.begin(), words.size() * sizeof(capnp::word))) return;
    std::shared_ptr<PendingReply> pending;
    try {
      auto reader = std::make_unique<capnp::FlatArrayMessageReader>(words.asPtr());
      if (header.kind == uint16_t(wire::FrameKind::NOTICE)) {
        auto notice = reader->getRoot<wire::Notice>();
        if (notice.hasTransfer()) {
          auto chunk = notice.getTransfer();
          if (uint8_t *landing = listener_->landing_for(chunk.getTransfer(), chunk.getOffset(), header.payload_bytes)) {
            if (!read_exact(landing, header.payload_bytes) || !discard(frame_padding(header.payload_bytes))) return;
            continue;
          }
          // A chunk of a transfer to this process: off the socket into memory of its own, for the
          // thread that writes it where it goes (a file). Its size is checked before that memory is
          // taken: a frame may declare up to the wire's 1 TiB.
          if (header.payload_bytes > kMaxTransferChunkBytes) {
            lose("the daemon sent a transfer chunk of " + std::to_string(header.payload_bytes) + " bytes (chunks are at most " +
                 std::to_string(kMaxTransferChunkBytes) + ")");
            return;
          }
          std::unique_ptr<uint8_t[]> bytes(new (std::nothrow) uint8_t[header.payload_bytes ? header.payload_bytes : 1]);
          if (!bytes) {
            lose("cannot allocate " + std::to_string(header.payload_bytes) + " bytes for a transfer chunk");
            return;
          }
          if (!read_exact(bytes.get(), header.payload_bytes) || !discard(frame_padding(header.payload_bytes))) return;
          listener_->on_transfer_chunk(*this, notice.getTransfer().getTransfer(), notice.getTransfer().getOffset(),
                                       std::move(bytes), header.payload_bytes);
          continue;
        }
        if (notice.getReceived()) {
          {
            std::lock_guard<std::mutex> lock(sent_mutex_);
            sent_.acknowledge(notice.getReceived());
          }
          acknowledged_cv_.notify_all();
        }
        if (header.payload_bytes != notice.getPrintfBytes()) {
          lose("the daemon sent a notice whose payload is not its printf output");
          return;
        }
        // Kernel printf output is the application's stdout's before any completion of this notice
        // is processed: once the application sees the command complete, its output is written.
        if (header.payload_bytes && (!write_printf(header.payload_bytes) || !discard(frame_padding(header.payload_bytes))))
          return;
        listener_->on_notice(*this, notice);
        continue;
      }
      auto reply = reader->getRoot<wire::Reply>();
      trace::mark(trace::Point::client_reply_read, local_port_, reply.getSeq());
      {
        std::lock_guard<std::mutex> lock(pending_mutex_);
        auto it = pending_.find(reply.getSeq());
        if (it != pending_.end()) {
          pending = it->second;
          pending_.erase(it);
        }
      }
      if (!pending) {
        lose("the daemon answered request " + std::to_string(reply.getSeq()) + ", which was never sent");
        return;
      }
      if (reply.getSharedPayload()) {
        if (pending->shared_slot < 0 || header.payload_bytes) {
          lose("the daemon put a reply's bytes in shared memory it was not asked to use");
          fail_taken(*pending);
          return;
        }
        // The one copy of a local session's read: from the slot the daemon read into.
        std::memcpy(pending->read_dest, shared_->slot(uint32_t(pending->shared_slot)), pending->read_size);
        if (pending->landed) pending->landed();
      }
      if (pending->shared_slot >= 0) {
        shared_->release(uint32_t(pending->shared_slot));
        pending->shared_slot = -1;
      }
      if (header.payload_bytes) {
        if (!pending->read_dest || header.payload_bytes != pending->read_size) {
          lose("the daemon sent a payload that no request asked for");
          fail_taken(*pending);  // it waited for ever (found by tests/fuzz/handshake_fuzzer)
          return;
        }
        if (!read_exact(pending->read_dest, header.payload_bytes) || !discard(frame_padding(header.payload_bytes))) {
          fail_taken(*pending);  // a blocking read whose bytes the daemon's death cut off waited for ever
          return;
        }
        if (pending->landed) pending->landed();
      }
      if (reply.which() == wire::Reply::READ) listener_->on_read_done(*this, reply.getRead());
      std::lock_guard<std::mutex> lock(pending->mutex);
      pending->status = reply.getStatus();
      pending->message = reply.getMessage();
      pending->words = std::move(words);
      pending->reader = std::move(reader);
      pending->done.store(true, std::memory_order_release);
      pending->cv.notify_all();
    } catch (const kj::Exception &e) {
      lose(std::string("malformed message from the daemon: ") + e.getDescription().cStr());
      if (pending) fail_taken(*pending);  // a malformed field of a reply already taken
      return;
    }
  }
}

void Connection::lose(const std::string &reason) {
  std::unordered_map<uint64_t, std::shared_ptr<PendingReply>> orphans;
  {
    std::lock_guard<std::mutex> lock(pending_mutex_);
    if (!alive_.exchange(false)) return;
    lost_reason_ = reason;
    orphans.swap(pending_);
  }
  transport_->shutdown();  // wakes the receiver if another thread noticed first
  { std::lock_guard<std::mutex> lock(sent_mutex_); }  // orders alive_ against a waiter's check
  acknowledged_cv_.notify_all();
  // Before Hello succeeded the caller reports the failure itself; nothing of the runtime uses us yet.
  // After the Goodbye at exit the daemon closing the session is expected: no message, no callbacks
  // (a thread still waiting gets its error below all the same).
  if (serving_ && !said_goodbye_.load(std::memory_order_acquire)) listener_->on_lost(*this, reason);
  for (auto &entry : orphans) fail_pending(*entry.second, "fedcl: lost daemon " + endpoint_ + ": " + reason);
}

void Connection::defer_error(uint64_t object, cl_int status) {
  std::lock_guard<std::mutex> lock(pending_mutex_);
  deferred_errors_.emplace(object, status);
}

cl_int Connection::take_error(uint64_t object) {
  std::lock_guard<std::mutex> lock(pending_mutex_);
  if (deferred_errors_.empty()) return alive() ? CL_SUCCESS : CL_DEVICE_NOT_AVAILABLE;
  auto it = deferred_errors_.find(object);
  if (it == deferred_errors_.end()) return alive() ? CL_SUCCESS : CL_DEVICE_NOT_AVAILABLE;
  cl_int status = it->second;
  deferred_errors_.erase(it);
  return status;
}

}  // namespace fedcl
