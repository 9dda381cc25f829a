// One connection of a fedcld process (server.h): in the main process a connection still in its
// handshake (a client's, a status request's or a peer's), which leaves for a worker once the other
// side proved itself (hand_over); in a worker, the client session (its framing, its object table
// and the order of its requests) or a peer link to a session of another daemon (peer_link.h), both
// taken over from the main process (adopt).
//
// Requests run on the loop thread in the order they arrive. A request that would block (a program
// build) runs on libuv's thread pool; meanwhile the requests that may overtake it (commands on
// queues, exec.cpp) run as they come, and the first that may not waits, with every one after it.
#pragma once

#include <uv.h>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <functional>
#include <kj/array.h>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "backend.h"
#include "fedcl.capnp.h"
#include "frame.h"
#include "objects.h"
#include "peer_inbox.h"
#include "resend_buffer.h"
#include "shared_region.h"
#include "stranger_log.h"
#include "stream_transport.h"
#include "worker_board.h"

namespace fedcld {

class Server;
class SessionHost;

// A session's connection: its libuv handle (a TCP connection, or a local one: a Unix socket) and
// the transport over it (plain or TLS, with its state). Apart from the Session so that a client
// session whose connection dropped can stay (parked) without one and take over the connection that
// resumed it (session_resume.cpp).
struct SessionLink {
  union {  // first: the handle's address is the link's
    uv_tcp_t tcp;
    uv_pipe_t pipe;
  };
  bool local = false;  // pipe: a Unix socket
  std::unique_ptr<StreamTransport> transport;
  SessionLink() {}
  ~SessionLink() {}
  uv_stream_t *stream() { return reinterpret_cast<uv_stream_t *>(&tcp); }
  uv_handle_t *handle() { return reinterpret_cast<uv_handle_t *>(&tcp); }
  // Inits the handle for a connection of that kind on loop (ipc: a local one that may carry
  // descriptors, as a worker's client session does: shared_memory.h).
  void init(uv_loop_t *loop, bool local_link, bool ipc = false);
};
// Closes link's handle and frees it.
void session_link_discard(SessionLink *link);

struct Frame {
  fedcl::FrameHeader header;
  kj::Array<capnp::word> message;
  // header.payload_bytes bytes (and the padding after them); shared, so that a peer's data can land
  // straight in the memory its transfer set aside (PeerRegistry::payload_destination).
  std::shared_ptr<uint8_t[]> payload;
  // Why the payload was read past instead of kept (more than the session may hold): the request
  // fails with it when it runs (take_payload), as a legitimate request past the limit would.
  std::string payload_refused;
};

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(Server &server, uint64_t number);
  ~Session();

  // Accepts the pending connection on listener (TCP, or the local socket) and starts reading (the
  // main process).
  int start(uv_stream_t *listener);
  // Dials a peer daemon; done(status) runs on the loop once connected (status 0, reading started)
  // or not (a libuv error). The main process, for a worker's peer link.
  void connect(const sockaddr *address, std::string name, std::function<void(int status)> done);
  // The same to a daemon of this host at its local socket (path).
  void connect_local(const std::string &path, std::string name, std::function<void(int status)> done);
  // The dial's connect ended (libuv's status).
  void dial_ended(int status);
  // Hand-over from the main process to a worker (handoff.h). The main process's side: whether
  // everything written has left (the socket may move only then), and the connection's state, after
  // which this session ends without touching the socket again.
  bool writes_done() const { return writes_in_flight_ == 0; }
  void hand_over(fedcl::wire::HandedConnection::Builder out);
  // The worker has the socket (why: "" ) or could not get it (why not): this copy closes silently.
  void end_handed_over(const std::string &why);
  uv_stream_t *stream() { return link_ ? link_->stream() : nullptr; }
  // The worker's side: this session goes on over link (its handle accepted from the main process)
  // in that state; reading starts. "" or why it cannot.
  std::string adopt(SessionLink *link, fedcl::wire::HandedConnection::Reader state);
  // Runs the requests read so far (after adopt, once the session is set up).
  void run_pending() { run(); }
  // Closes at once (pending writes are dropped) and logs why.
  void close(const std::string &reason);
  // Sends what is queued, then closes.
  void close_after_writes(const std::string &reason);
  bool closed() const { return closing_; }

  // Resumption (session_resume.cpp, docs/design-decisions.md "Lost daemons"). A client session
  // counts the bytes of its stream both ways and keeps what it sent until the client acknowledged
  // it; when its connection drops (EOF, reset, a failed write) it is parked for the daemon's
  // resume window instead of closed, and a new connection that proves it may resume hands it its
  // link. Peer links and status connections are not resumed.
  bool resumable() const;
  bool parked() const { return parked_; }
  uint64_t parked_at() const { return parked_at_; }
  // The connection is gone: parks a resumable session, closes any other.
  void connection_lost(const std::string &reason);
  void park(const std::string &reason);
  // This session, parked (or about to be: the client found the old connection dead first), goes on
  // over link, a connection that resumed it handed over by the main process: first is written before
  // anything else (the answer to Resume, outside the stream), then what the client has not received
  // (it has client_received bytes, which the caller checked against sent()).
  std::string resume_over(SessionLink *link, fedcl::wire::HandedConnection::Reader state, std::vector<uint8_t> first,
                          uint64_t client_received);
  // The client has received this many bytes of the session's stream (Request.ack).
  void acknowledged(uint64_t client_received) { sent_.acknowledge(client_received); }
  uint64_t received() const { return received_; }
  // Bytes written to the connection (every role; what a resumption sends again not counted twice).
  uint64_t written() const { return written_; }
  const fedcl::ResendBuffer &sent() const { return sent_; }
  std::string resume_token;  // HelloReply.resumeToken; empty: this session is not resumed

  // A Reply, optionally followed by payload_bytes of payload, which the session owns until written.
  // A lent payload (a page-locked staging slab, staging_pool.h) goes back to its pool once written:
  // what the session keeps for a resumption is a copy of it. Kept by reference until the client's
  // acknowledgement, a slab would keep its queue's context alive on the device for that long (a
  // program that makes and releases contexts in a loop filled an H100 with them).
  enum class Payload { owned, lent };
  void send_reply(capnp::MessageBuilder &message, std::shared_ptr<uint8_t[]> payload = nullptr,
                  uint64_t payload_bytes = 0, Payload kind = Payload::owned);
  void send_status(uint64_t seq, cl_int status, const std::string &message);
  // On a peer link: a PeerMessage, optionally followed by payload_bytes of payload.
  // A chunk of a transfer to this session's client (Notice.transfer); written as send_peer's.
  void send_transfer_chunk(uint64_t transfer, uint64_t offset, std::shared_ptr<uint8_t[]> payload,
                           uint64_t payload_bytes, std::function<void(int status)> written);
  // written(status) runs once the bytes have gone to the socket (status 0) or could not (negative).
  void send_peer(capnp::MessageBuilder &message, std::shared_ptr<uint8_t[]> payload = nullptr,
                 uint64_t payload_bytes = 0, std::function<void(int status)> written = nullptr);
  // On a local peer link: a PeerMessage with descriptor passed beside it; false if it cannot go.
  bool send_peer_descriptor(capnp::MessageBuilder &message, int descriptor);
  // Work to do the moment a command's event completes, beside telling the client (signals to peer
  // daemons): the command's own completion watch runs it, which comes no later than a new watch
  // would (callbacks of one event run one after the other; NVIDIA's come late, its waiter does not).
  // watching(): the event's watch is set; on_completion() returns false once it has fired.
  void watching(uint64_t event_id) { on_completion_[event_id]; }
  // Whether a watch set with watching() has yet to report the event.
  bool reporting(uint64_t event_id) const { return on_completion_.count(event_id) != 0; }
  bool on_completion(uint64_t event_id, std::function<void(cl_int status)> work);
  void completed(uint64_t event_id, cl_int status);
  // Notices are batched and sent at the end of the current loop pass, or before the next reply.
  void notify_completion(uint64_t event, cl_int status, const uint64_t *profiling);
  void notify_error(uint64_t object, uint64_t event, cl_int status, const std::string &message,
                    cl_context context = nullptr);
  // Kernel printf output, sent with the next notice, before its completions.
  void notify_printf(std::string bytes);
  void flush_notices();
  // An empty Notice: tells a client whose session has been quiet that this daemon still answers.
  void send_heartbeat();

  // For the transport (stream_transport.h): where the next bytes of the stream should land (a large
  // payload's own buffer, else the read buffer), and that size of them landed in buf, which came from
  // plaintext_buffer(); consume() takes bytes that lie elsewhere.
  uv_buf_t plaintext_buffer();
  void plaintext_landed(const uv_buf_t &buf, size_t size);
  void consume(const uint8_t *bytes, size_t size);
  // For a transport that lands bytes outside libuv's read callback (TLS's worker): requests run as
  // after a read. read_on(): reading goes on after the transport stopped it (its buffers were all
  // busy), unless the session itself waits.
  void read_done();
  void read_on();
  // The connection spoke plain TCP to a daemon that takes TLS only (tls_stream.h): its handshake is
  // answered with a refusal.
  bool plaintext_refused = false;

  void pause();
  void resume();
  // Work of a request that runs off the loop (a program build) started or ended: see above. Work
  // alone (a buffer made from host memory, which any later request may name) lets none overtake it.
  void background_work_started(bool alone) {
    background_work_++;
    alone_work_ += alone;
  }
  void background_work_ended(bool alone);
  // Memory for the bytes of a read until its reply is written. Past kMaxStagedBytes in use the
  // session takes no new request until replies drain, so a client that queues many large reads
  // without waiting cannot make fedcld hold them all at once. Null if the memory cannot be had.
  std::shared_ptr<uint8_t[]> stage(uint64_t size);
  // Queues that received commands in this pass; they are flushed when the pass ends, so the
  // device starts work without waiting for the client to ask.
  void touch_queue(uint64_t queue_id);

  Server &server() { return server_; }
  // The worker process this session runs in (only there: requests run in workers).
  SessionHost &host();
  // The backend platform this session serves (chosen by its Hello), and how completion is learnt.
  void set_platform(const BackendPlatform &backend, size_t index);
  const BackendPlatform &backend() const { return *backend_; }
  size_t platform_index() const { return platform_index_; }
  bool waits_for_events() const { return waits_for_events_; }
  ObjectTable &objects() { return objects_; }
  const std::string &peer() const { return peer_; }
  // What the handshake's proofs cover of the connection: TLS's exporter value, on a local one the
  // two processes ("unix DIALLING-PID ANSWERING-PID"); "" on plain TCP.
  std::string channel_binding() const;
  // A local connection (a Unix socket of this host), and who the kernel says is at its other end.
  bool local() const { return link_ && link_->local; }
  // How the connection travels, for `fedcl status`.
  BoardTransport transport() const;
  uint32_t peer_uid() const { return peer_uid_; }
  // Whose connections count together before the other side proved itself (handshake caps, the
  // auth throttle, strangers' log lines): the address without its port (handshake_limits.h
  // address_key), on a local connection the user the kernel names (all that user's processes).
  std::string address_key() const;
  uint32_t peer_pid() const { return peer_pid_; }
  // The client's TCP port: names the connection in traces (trace.h).
  uint16_t peer_port() const { return peer_port_; }
  uint64_t number() const { return number_; }
  // The client's handshake succeeded: its requests run.
  bool greeted = false;
  // For `fedcl status`: who the client said it is (Hello.client).
  std::string client;
  // Whose key the client proved (Hello.user): only that user may resume the session.
  std::string user;

  // A handshake under way (protocol/auth.h): what the proofs are computed over. Before the other side
  // has proved itself, nothing else of the connection is used and its frames stay handshake-sized.
  struct Handshake {
    std::vector<uint8_t> challenge_nonce;  // the answering daemon's nonce
    std::vector<uint8_t> hello_nonce;      // the nonce of the side that opened the connection
    std::string identity;                  // who the opening side says it is: a client's user, or
                                           // a peer link's two instances (peer_identity)
    std::string client;                    // client sessions: "host:pid", for the log and status
    bool status_request = false;           // the connection opened with DaemonStatus, not Hello
    uint32_t platform = 0;                 // client sessions: the platform asked for
    uint64_t dialling_instance = 0;        // peer links: the daemon that dialled
    uint64_t expected_instance = 0;        // peer links: the daemon it meant to reach (this one?)
    uint64_t session = 0;                  // peer links: the session at the answering end (its token)
    uint64_t from_session = 0;             // peer links: the session at the dialling end
    bool challenged = false;               // a challenge went out (answering) or came in (dialling)
    bool resuming = false;                 // the connection opened with Resume
    std::string resume_token;              // which session it resumes
    std::string daemon;                    // this daemon's host as the client dialled it
    // The client's proof (Authenticate: one per connection), kept until its verdict, which may wait
    // for the address's turn (AuthThrottle) and for a lookup of the name dialled (DaemonNames).
    bool proved = false;
    std::vector<uint8_t> proof;
    uint64_t proof_seq = 0;
    uint64_t resume_received = 0;          // how much of that session's stream the client received
  } handshake;
  bool authenticated() const { return greeted || peer_instance != 0; }
  // uv_now when the connection was made: `fedcl status` shows how long a session has been open.
  uint64_t opened_at = 0;
  // uv_now by which the handshake must be done, else the connection closes (0: no deadline).
  uint64_t handshake_deadline = 0;
  // Main process: the connection was accepted and the other side has not proved itself yet (nor
  // finished its Hello, on a daemon without keys). Its end is the listener's to log, one line per
  // address and interval (stranger_log.h): stranger_end says what ended it when it closes (unless
  // it closes because the other side went away), end_logged that its refusal was logged already.
  bool stranger = false;
  StrangerEnd stranger_end = StrangerEnd::gone;
  bool end_logged = false;

  // What the connection is, decided by its first frame.
  enum class Role { undecided, client, peer };
  Role role = Role::undecided;
  // Client sessions: how peer daemons address this session, and what they delivered to it.
  uint64_t token = 0;
  // A local client session's shared memory (shared_memory.h), once the client passed it, and the
  // bytes that went through it each way.
  std::shared_ptr<fedcl::SharedRegion> shared_memory;
  uint64_t shared_received = 0, shared_sent = 0;
  // A local peer link's own memory, which what it sends may lie in (shared_memory: the other side's).
  std::shared_ptr<fedcl::SharedRegion> own_shared_memory;
  PeerInbox &inbox() { return inbox_; }
  // Peer links: the other daemon's instance once the handshake is done, and when the link last
  // carried something each way (uv_now), for the heartbeat.
  uint64_t peer_instance = 0;
  bool dialled = false;
  uint64_t last_heard = 0, last_sent = 0;
  // Watches events of no queue (signals to peers) for backends whose callbacks come late.
  std::unique_ptr<EventWaiter> event_waiter;

 private:
  // What connect and connect_local share: the link's handle made (local: a pipe), its connect
  // request, whose data names this session for on_connected.
  uv_connect_t *start_dial(std::string name, std::function<void(int status)> done, bool local);
  enum class ReadState { header, message, payload, skipped_payload };
  struct PendingCompletion {
    uint64_t event;
    cl_int status;
    bool has_profiling;
    uint64_t profiling[4];
  };
  struct PendingError {
    uint64_t object, event, context;
    cl_int status;
    std::string message;
  };

  static void on_alloc(uv_handle_t *handle, size_t suggested, uv_buf_t *buf);
  static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf);
  static void on_closed(uv_handle_t *handle);
  // Releases what the session held once it is closed and its link (if any) is gone.
  void finish();
  // Closes the link's handle; the session itself stays.
  void drop_link();
  // The session's connection becomes link, handed over by the main process in state; "" or why not.
  std::string install_link(SessionLink *link, fedcl::wire::HandedConnection::Reader state);
  // The bytes the main process read but did not use, then reading on.
  std::string take_handed_bytes(fedcl::wire::HandedConnection::Reader state);
  // Tells the client how far this daemon read (Notice.received) once it read kAckBytes more.
  void acknowledge_if_due();
  bool keeps_sent() const;
  // A frame with a payload of this size or more is acknowledged as soon as it was read.
  static constexpr uint64_t kAckPromptlyBytes = 1 << 20;
  // A dialled connection is up: its transport starts (TLS: the handshake); libuv's error or 0.
  int start_dialled();
  // The other end's process (SO_PEERCRED) of a local connection, and the binding it gives the
  // proofs; dialled: this process dialled it. "" or why not.
  std::string read_peer_credentials(bool dialled);
  // Frames out of bytes of the stream (consume() counts them first).
  void parse(const uint8_t *bytes, size_t size);
  void frame_complete();
  void run();
  void flush_queues();
  void write_bytes(std::vector<uint8_t> bytes, std::shared_ptr<uint8_t[]> payload, uint64_t payload_bytes,
                   std::function<void(int status)> written = nullptr, Payload kind = Payload::owned);
  void mark_dirty();
  // Appends the pending notices as one frame to bytes (false: none pending); printf_bytes of output,
  // taken from printf_ by the caller, follow the frame as its payload.
  bool append_notices(std::vector<uint8_t> &bytes, uint64_t printf_bytes = 0);

  Server &server_;
  uint64_t number_;
  std::string peer_;
  uint16_t peer_port_ = 0;
  uint32_t peer_uid_ = 0, peer_pid_ = 0;
  std::string local_binding_;  // channel_binding() of a local connection
  SessionLink *link_;  // null while parked; freed once its handle closed
  bool link_open_ = false;  // its handle was initialized (accepted, dialled, or handed over)
  bool closing_ = false;
  bool draining_ = false;  // close_after_writes: what is written leaves, nothing read runs
  bool parked_ = false;
  uint64_t parked_at_ = 0;
  // Resumption's byte counts of the session's stream, from its first byte.
  fedcl::ResendBuffer sent_;
  uint64_t received_ = 0;
  uint64_t written_ = 0;
  uint64_t received_told_ = 0;  // the last Notice.received sent
  bool large_frame_read_ = false;  // a client waits for the acknowledgement of its large payload
  unsigned writes_in_flight_ = 0;  // handed to the transport, not reported written yet
  bool paused_ = false;
  unsigned background_work_ = 0;          // requests whose work runs off the loop
  unsigned alone_work_ = 0;               // of which no request may overtake
  bool behind_background_work_ = false;   // the next request waits for that work (reading stops)
  bool running_ = false;
  bool dirty_ = false;
  bool waits_for_events_ = false;
  const BackendPlatform *backend_ = nullptr;
  size_t platform_index_ = 0;
  static constexpr uint64_t kMaxStagedBytes = uint64_t(1) << 30;
  uint64_t staged_bytes_ = 0;  // changed on the loop only: stage() and the staging's deleter
  // Staging kept only for resending does not count: the client's Ack that frees it must still be read.
  bool throttled() const { return staged_bytes_ - std::min(staged_bytes_, sent_.held()) > kMaxStagedBytes; }
  // The session was throttled and is no longer: reads and runs again.
  void unthrottled();

  // Framing.
  ReadState state_ = ReadState::header;
  uint8_t header_bytes_[sizeof(fedcl::FrameHeader)];
  size_t have_ = 0;       // bytes of the current part received so far
  Frame frame_;
  uint64_t payload_wire_bytes_ = 0;
  // Made at the first read, the size of a handshake's frames until the other side proved itself (a
  // stranger's connection costs a few KiB: a thousand held open cost 64 MiB when it was not).
  static constexpr size_t kReadBufferBytes = 64 * 1024;
  static constexpr size_t kHandshakeReadBytes = 4096;
  std::unique_ptr<uint8_t[]> read_buffer_;
  size_t read_buffer_bytes_ = 0;
  std::deque<Frame> pending_;
  std::string unparsed_;  // read before the handshake was done, behind a frame not yet run
  std::vector<uint64_t> touched_queues_;

  ObjectTable objects_;
  std::vector<PendingCompletion> completions_;
  std::vector<PendingError> errors_;
  std::string printf_;
  PeerInbox inbox_;
  std::unordered_map<uint64_t, std::vector<std::function<void(cl_int)>>> on_completion_;
  std::function<void(int)> connected_;
};


}  // namespace fedcld
