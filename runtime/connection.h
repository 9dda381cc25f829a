// One session with one bridge daemon: a TCP, TLS or local connection (transport.h), the coalescing
// sender, and a receiver thread that delivers replies to waiting calls and notices to the runtime.
//
// Requests go into a send queue (send_queue.h) that any thread appends to without touching the
// socket; one thread at a time writes it. Requests that need no answer leave in batches: when a
// call waits, when the queue passes kCoalesceBytes, or when the flush timer (FEDCL_FLUSH_US) fires.
#pragma once

#include <CL/cl.h>
#include <capnp/serialize.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "client_auth.h"
#include "fedcl.capnp.h"
#include "frame.h"
#include "resend_buffer.h"
#include "send_queue.h"
#include "shared_region.h"
#include "transport.h"

namespace fedcl {

class Connection;
class Transport;

// A request being built; seq is filled in by the connection.
struct RequestMessage {
  ScratchMessage scratch;
  wire::Request::Builder root = scratch.builder().initRoot<wire::Request>();
  int descriptor = -1;  // passed beside the request (a local session's shared memory)
};

// A call that waits (or will be waited for) for its Reply.
struct PendingReply {
  uint64_t seq = 0;
  void *read_dest = nullptr;   // a read's bytes land here, straight from the socket
  uint64_t read_size = 0;
  long shared_slot = -1;       // or from this slot of the session's shared memory (Request.sharedReply)
  // Runs on the receiver thread once the bytes are in read_dest, before the read's event completes
  // (pitched reads unpack there).
  std::function<void()> landed;

  std::mutex mutex;
  std::condition_variable cv;
  std::atomic<bool> done{false};
  cl_int status = CL_SUCCESS;
  std::string message;
  kj::Array<capnp::word> words;
  std::unique_ptr<capnp::FlatArrayMessageReader> reader;

  wire::Reply::Reader reply() { return reader->getRoot<wire::Reply>(); }
};

// What the runtime does with what arrives; called on the receiver thread.
struct ConnectionListener {
  virtual void on_notice(Connection &connection, wire::Notice::Reader notice) = 0;
  virtual void on_read_done(Connection &connection, wire::Completion::Reader completion) = 0;
  virtual void on_lost(Connection &connection, const std::string &reason) = 0;
  // A chunk of a transfer to this process (Notice.transfer), its bytes read off the socket.
  virtual void on_transfer_chunk(Connection &connection, uint64_t transfer, uint64_t offset,
                                 std::unique_ptr<uint8_t[]> bytes, uint64_t size) = 0;
  // Where such a chunk's bytes go straight from the socket, or null (then on_transfer_chunk takes them).
  virtual uint8_t *landing_for(uint64_t transfer, uint64_t offset, uint64_t size) = 0;

 protected:
  ~ConnectionListener() = default;
};

class Connection {
 public:
  // One session serves one backend platform of the daemon (platform: its index there).
  Connection(size_t index, std::string endpoint, uint32_t platform, ConnectionListener *listener);
  ~Connection();
  Connection(const Connection &) = delete;

  // Connects, starts the threads and runs the handshake: Hello, and where the daemon has a key, the
  // challenge-response, in which the daemon must prove it holds the key too (when this client has
  // one). Returns "" or why it failed. A daemon of this host may answer with its local socket
  // instead (redirected()): open_session() takes the session there.
  std::string open(int timeout_ms, const Credentials &credentials);
  // Where a daemon of this host sent this connection (Reply.local).
  struct Redirect {
    std::string socket;
    uint32_t pid = 0;
  };
  bool redirected() const { return !redirect_.socket.empty(); }
  const Redirect &redirect() const { return redirect_; }
  // A connection to the same daemon and platform, not opened: to the local socket (go_local), or
  // over TCP without the offer to go local (keep_to_tcp).
  std::unique_ptr<Connection> fresh() const;
  void go_local(const Redirect &to) { local_ = to; }
  void keep_to_tcp() { tcp_only_ = true; }
  // Whether open() failed before a byte was exchanged (the daemon could not be reached).
  bool dial_failed() const { return dial_failed_; }
  // The session runs over the daemon's local socket.
  bool local() const { return !local_.socket.empty() || local_endpoint(endpoint_); }
  // Its bulk bytes go through shared memory (protocol/shared_region.h): payloads and reads of
  // kSharedMinBytes up to a slot (so callers cut larger transfers into pieces of a slot at most).
  bool shares_memory() const { return shared_ != nullptr; }

  // Sends a request that needs no reply. In synchronous mode (FEDCL_SYNC=1) it waits for the
  // daemon's verdict and returns it; otherwise it returns CL_SUCCESS, or an error if the daemon is gone.
  cl_int post(RequestMessage &request, const void *payload = nullptr, uint64_t payload_bytes = 0);
  // Appends a request that needs no reply and carries no payload to what leaves next, without
  // touching the socket (it leaves with the next write or flush, or the flush timer's): callable
  // under other locks, which must never be held while a thread writes to a socket.
  void queue(RequestMessage &request);
  // Sends a request whose Reply will come back; the caller may wait for it now or later.
  std::shared_ptr<PendingReply> send_call(RequestMessage &request, const void *payload = nullptr,
                                          uint64_t payload_bytes = 0, void *read_dest = nullptr,
                                          uint64_t read_size = 0, std::function<void()> landed = nullptr);
  // Waits for a Reply; returns its status (a failure also fills pending.message).
  cl_int wait(PendingReply &pending);
  std::shared_ptr<PendingReply> call(RequestMessage &request, const void *payload = nullptr, uint64_t payload_bytes = 0);

  // Sends everything queued: writes it, or leaves it to the thread that is writing (or, on a
  // receiver thread, to the flusher); never waits for another thread's write.
  void flush();
  // The process exits: sends what is queued and a Goodbye, so that the daemon closes the session
  // at once instead of keeping it for a resumption (waits at most kGoodbyeWait for the writer).
  void say_goodbye();

  bool alive() const { return alive_.load(std::memory_order_acquire); }
  // The connection dropped and is being resumed (session_resume.cpp), or its socket has seen the
  // daemon's side close or fail: the daemon may be gone.
  bool dropped();
  const std::string &lost_reason() const { return lost_reason_; }
  size_t index() const { return index_; }
  // The connection's position among the runtime's, fixed once all are open (bit masks use it).
  void set_index(size_t index) { index_ = index; }
  const std::string &endpoint() const { return endpoint_; }
  const std::string &node() const { return node_; }
  // The daemon's HelloReply, kept for the runtime to build devices from.
  wire::HelloReply::Reader hello() { return hello_->reply().getHello(); }

  // Errors the daemon reported for an object, returned by the next call that waits on it.
  void defer_error(uint64_t object, cl_int status);
  cl_int take_error(uint64_t object);

 private:
  // Sends a handshake request and waits for its reply, at most timeout_ms.
  std::shared_ptr<PendingReply> handshake_call(RequestMessage &request, int timeout_ms);
  // Reaches the daemon: its local socket once sent there, else the endpoint. Null with *error.
  std::unique_ptr<Transport> dial_daemon(int timeout_ms, std::string *error);
  // A local session: makes its shared memory and passes it to the daemon (shared_ stays null if
  // either cannot).
  void share_memory();
  // Whether a payload or a read of bytes goes through the shared memory.
  bool uses_shared(uint64_t bytes) const;
  // A free slot of the shared memory, marked taken; waits while slots are being freed, and gives up
  // (-1: the bytes go on the socket) when none was freed for a while: the commands that hold them
  // may wait for this very thread (a user event it sets later).
  long take_slot();
  // Copies payload into a slot and names it in request; false if no slot could be had.
  bool put_in_slot(RequestMessage &request, const void *payload, uint64_t payload_bytes);
  // Wakes the flusher: after the flush delay, or at once (now: a thread hands its writing over).
  void arm(bool now = false);
  // Under queue_mutex_ (lock), which it releases while it writes: becomes the writer unless a
  // thread is one already (that one takes what was appended when it looks again), and writes what
  // is queued, at most `rounds` batches (0: until the queue is empty) before it hands the rest to
  // the flusher. A receiver thread only hands over.
  void drain(std::unique_lock<std::mutex> &lock, int rounds = kWriterRounds);
  // The writer's part without the lock: keeps the batch for resending (keep) and writes it, unless
  // the link is down. "" or why the send failed.
  std::string write_batch(const SendQueue::Batch &batch, Transport &transport, bool keep, bool link_down);
  // Under queue_mutex_: waits until the stream up to offset end has been written (or dropped, the
  // daemon being lost).
  void wait_written(std::unique_lock<std::mutex> &lock, uint64_t end);
  // Under queue_mutex_: appends a request's payload after its frame, copied when small; a large one
  // is borrowed and its end offset returned, for the caller to wait_written before its memory may
  // change (referenced: kept for resending by reference; the caller also waits for the daemon's
  // acknowledgement). 0 when copied.
  uint64_t append_payload(const void *payload, uint64_t payload_bytes, bool referenced);
  // Waits until the daemon acknowledged the session's stream up to offset end (or is lost).
  void wait_acknowledged(uint64_t end);
  void flusher_main();
  void receiver_main();
  bool read_exact(void *dst, size_t size);
  // One recv from the socket, polling instead of sleeping while a thread spins for an answer.
  ssize_t receive(void *dst, size_t size);
  bool discard(uint64_t size);
  // Moves size bytes of kernel printf output from the socket to the application's stdout.
  bool write_printf(uint64_t size);
  void lose(const std::string &reason);

  // Resumption (session_resume.cpp; docs/design-decisions.md, "Lost daemons"). The connection
  // dropped under a session whose daemon resumes: dials again within the daemon's window, resumes,
  // resends what the daemon did not receive, and returns true; the receiver then reads on where it
  // was. False once the window passed or the daemon refused (the caller loses the daemon).
  bool resumable() const { return !resume_token_.empty(); }
  bool resume_session(const std::string &why_dropped);
  // One attempt on a fresh connection: "" with the daemon's received count in *daemon_received,
  // or why not; *refused: the daemon answered and refused (trying again cannot help).
  std::string resume_over(Transport &transport, uint64_t *daemon_received, bool *refused);
  // Appends an Ack (Request.ack) to queue_ when the receiver asked for one; under queue_mutex_.
  void append_due_ack();
  // Counts received bytes of the session's stream; asks for an Ack every kAckBytes.
  void count_received(size_t bytes);

  size_t index_;
  std::string endpoint_;
  uint32_t platform_;
  std::string node_;
  ConnectionListener *listener_;
  Redirect local_;      // the daemon's local socket this session runs over
  std::unique_ptr<SharedRegion> shared_;  // a local session's shared memory, once the daemon has it
  // The count of freed slots at which a wait for one gave up: no thread waits again until it moves.
  std::atomic<int64_t> slots_stalled_at_{-1};
  Redirect redirect_;   // where the daemon sent this connection (open() then ends)
  bool tcp_only_ = false;
  bool dial_failed_ = false;
  std::unique_ptr<Transport> transport_;  // plain TCP or TLS (transport.h); set by open(), replaced
                                          // by the receiver when it resumes (under queue_mutex_,
                                          // as the writer)
  std::vector<std::unique_ptr<Transport>> dropped_transports_;  // other threads may still shut them down
  Credentials credentials_;  // for dialling again
  int connect_timeout_ms_ = 0;
  uint16_t local_port_ = 0;  // names this connection in traces (trace.h)
  std::atomic<bool> alive_{false};
  std::atomic<bool> serving_{false};  // Hello succeeded: losing the daemon now matters to the runtime
  std::string lost_reason_;
  std::atomic<uint64_t> next_seq_{1};
  std::shared_ptr<PendingReply> hello_;

  // A writer takes at most this many batches before it hands the rest to the flusher.
  static constexpr int kWriterRounds = 4;
  // What leaves next, the writer's role and how far it wrote; never held across a socket call.
  std::mutex queue_mutex_;
  std::condition_variable written_cv_;  // written_end_ moved on, or the writer left
  SendQueue queue_;
  bool writing_ = false;    // a thread is the writer
  uint64_t written_end_ = 0;  // the stream offset up to which the writer wrote (or dropped) the queue
  std::mutex flush_mutex_;  // the flusher sleeps on flush_cv_ under it
  std::condition_variable flush_cv_;
  std::string send_error_;  // why the last send failed; the receiver reports it (under queue_mutex_)
  // Resumption: the session's token and the daemon's window (HelloReply), what was sent and not
  // acknowledged (appended by the writer under sent_mutex_; the receiver trims it under sent_mutex_,
  // so that it never waits for a writer), and whether writers only keep their bytes because the
  // connection dropped and the receiver is resuming (under queue_mutex_).
  std::string resume_token_;
  uint32_t resume_window_ms_ = 0;
  bool keeps_sent_ = true;  // until HelloReply says that the daemon does not resume
  std::mutex sent_mutex_;
  std::condition_variable acknowledged_cv_;  // sent_ was acknowledged further, or the daemon lost
  ResendBuffer sent_;
  bool link_down_ = false;
  // say_goodbye ran: the daemon closes the session, so its closing the connection is the end, not
  // a drop to resume, and nothing to report (the process is exiting).
  std::atomic<bool> said_goodbye_{false};
  std::atomic<uint64_t> ack_due_{0};  // the received count an Ack should carry; 0: none due
  uint64_t received_ = 0, received_acked_ = 0;  // receiver thread only
  std::atomic<bool> armed_{false};  // a flush is scheduled
  std::atomic<bool> urgent_{false};  // ... without the delay
  bool stopping_ = false;
  std::thread flusher_;

  std::mutex pending_mutex_;
  std::unordered_map<uint64_t, std::shared_ptr<PendingReply>> pending_;
  std::unordered_map<uint64_t, cl_int> deferred_errors_;

  std::thread receiver_;
  std::unique_ptr<uint8_t[]> in_;
  std::chrono::steady_clock::time_point last_received_;  // receiver thread only
  size_t in_begin_ = 0, in_end_ = 0;
};

// Opens connection (Connection::open); a daemon of this host that sends it to its local socket gets
// the session there, on a fresh connection, and over TCP again where FEDCL_LOCAL is auto and the
// socket cannot be reached. "" or why the session could not be had.
std::string open_session(std::unique_ptr<Connection> &connection, int timeout_ms, const Credentials &credentials);

// How long a daemon may stay silent before it counts as lost (FEDCL_DAEMON_TIMEOUT).
std::chrono::milliseconds daemon_timeout();

// FEDCL_SYNC=1: every call waits for the daemon, as the Hybrid OpenCL runtime did.
bool sync_mode();

}  // namespace fedcl
