// A fedcld process: its libuv loop and the connections on it.
//
// fedcld runs as one main process (listener.h), which accepts connections, does TLS's handshake and
// the challenge-response and never calls the backend, and a worker process per client session
// (session_host.h), which runs that session's OpenCL objects and talks to its client and its peer
// links directly once the main process handed them over. Both carry their connections as Sessions
// (session.h) on a loop run here; what a connection's frames mean is the role's.
#pragma once

#include <uv.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "secret.h"
#include "tls_stream.h"

namespace fedcld {

class Session;
struct Frame;

// How fedcld learns that a backend command completed: event callbacks, a waiting thread per queue
// as well, or whichever suits the backend (waiting for backends whose callbacks come late).
enum class CompletionMode : uint8_t { automatic, callback, wait };

// Which devices' queues keep page-locked staging for reads (staging_pool.h).
enum class PageLockedReads : uint8_t { gpus, all, none };

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 7070;
  std::string node;          // shown in client device names; default host name:port
  fedcl::Secret key;         // a key every client may prove (keys.h)
  std::string key_list;      // file of per-user keys (KeyStore loads it again when it changes)
                             // (neither key nor key_list: every client is accepted)
  fedcl::Secret peer_key;    // the daemons' key, proved on peer links (default: key)
  bool allow_unauthenticated = false;  // serve without a key beyond loopback
  bool sandbox = true;       // session workers are confined (worker_sandbox.h)
  bool session_accounts = false;  // a key-list user's sessions run as the local account of that name
  size_t max_sessions = 256;
  size_t max_handshakes = 0;              // strangers' connections at once (handshake_limits.h); 0: by
  size_t max_handshakes_per_address = 0;  // the open-file limit
  size_t spare_workers = 2;  // workers started ahead, their backend loaded, for the next sessions
  uint64_t worker_hang_ms = 30000;  // a worker whose loop stands still this long is killed
  uint64_t max_session_memory = 0;  // bytes of buffers and images one session may hold; 0: no limit
  uint64_t session_open_files = 0;  // a session worker's RLIMIT_NOFILE; 0: the daemon's own
  CompletionMode completion = CompletionMode::automatic;
  std::string peer_address;  // host:port advertised to peers (and listened on); empty: the client's
  std::string local_socket = "auto";  // Unix socket path also listened on; "auto": by the port; "": none
  std::string host_identity;  // this host's (protocol/host_identity.h), as the main process read it
  uint64_t peer_timeout_ms = 10000;  // a peer link silent this long is dead
  uint64_t peer_ahead_bytes = uint64_t(256) << 20;  // how far a peer's send may run ahead of a receive
  uint32_t resume_window_ms = 10000;  // a client session whose connection dropped waits this long
  std::string file_root;     // canonical directory whose files clients may load and save; "": none
  bool status_sessions = true;  // DaemonStatus lists the client sessions and their memory
  std::string status_admin;     // the key list's user whose DaemonStatus lists every session
  long busy_poll_us = -1;       // how long threads poll after work before sleeping; -1: by core count
  PageLockedReads page_locked_reads = PageLockedReads::gpus;
  std::vector<std::string> aliases;  // names clients dial this daemon by, beyond its own (daemon_names.h)
  bool tls = false;          // every connection, accepted or dialled, speaks TLS (tls_stream.h)
  std::string tls_cert;      // PEM certificate chain shown to clients and peers; "": none (PSK only)
  std::string tls_key;       // its private key
  std::string tls_ca;        // CA file that checks peers' certificates; "": the system's

  bool requires_key() const { return !key.empty() || !key_list.empty(); }
};

class Server {
 public:
  // instance: this run of the daemon, as peers and clients know it (random, never 0).
  Server(uv_loop_t *loop, ServerOptions options, uint64_t instance);
  virtual ~Server();
  Server(const Server &) = delete;
  Server &operator=(const Server &) = delete;

  // Runs the loop until it has nothing left, polling for up to busy_poll() after each piece of work.
  void run();
  std::chrono::microseconds busy_poll() const { return busy_poll_; }
  // Something arrived (a read, posted work): polling goes on.
  void note_activity() { activity_++; }
  // Thread-safe: runs task on the loop thread soon. After close(), only until the backend has
  // reported the commands it was watched for (or kClosingMs passed): then never.
  void post(std::function<void()> task);
  // A backend command is watched (its completion will be posted) / its completion was handled.
  void watch_started() { watches_.fetch_add(1, std::memory_order_relaxed); }
  void watch_done() { watches_.fetch_sub(1, std::memory_order_relaxed); }
  // The process ends with the session (a session worker of its own): what the session holds is
  // left to the process's end rather than released object by object.
  void set_ends_with_process(bool ends) { ends_with_process_ = ends; }
  bool ends_with_process() const { return ends_with_process_; }
  // Backend commands watched and not reported yet.
  uint64_t watches() const { return uint64_t(std::max(0, watches_.load(std::memory_order_relaxed))); }

  // TLS's contexts (main process: handshakes) or nothing (workers: connections arrive established).
  const DaemonTls &tls() const { return tls_; }
  uv_loop_t *loop() const { return loop_; }
  const ServerOptions &options() const { return options_; }
  uint64_t instance() const { return instance_; }
  std::chrono::steady_clock::time_point started() const { return started_; }

  // A new connection's session, kept until it closes.
  std::shared_ptr<Session> add_session();
  void session_closed(uint64_t number);
  // The open connection numbered so, or null.
  std::shared_ptr<Session> session(uint64_t number) const;
  // Connections held, those closing included (their memory is free only once they are gone).
  size_t connections() const { return sessions_.size(); }
  std::vector<std::shared_ptr<Session>> sessions() const;

  // What the role makes of a connection's frames (a handshake in the main process, a client's
  // requests or a peer's messages in a worker).
  virtual void execute(Session &session, Frame &frame) = 0;
  // Where the payload of a frame whose message has arrived lands (a transfer's memory), or null for
  // memory of its own; checked before any of it is taken: *problem says why the payload may not be
  // read at all (the connection is then closed), frame.payload_refused why it is read past.
  virtual std::shared_ptr<uint8_t[]> payload_destination(Session &session, Frame &frame, std::string *problem) = 0;
  // A connection closes (before its session releases what it holds).
  virtual void connection_closed(Session &session, const std::string &reason) = 0;
  // Closes everything; the loop then ends.
  virtual void close();

 protected:
  // Starts the half-second watch: a heartbeat to each client session sent nothing for half a second
  // (so that a client tells a frozen daemon from an idle one), and the end of handshakes past their
  // deadline (Session::handshake_deadline) and of parked sessions not resumed in time. It alone
  // keeps no loop running.
  void start_watch();
  DaemonTls tls_;
  ServerOptions options_;
  uint64_t next_session_ = 1;  // session numbers in the log; a worker takes the main process's

 private:
  void watch_sessions();
  // After close(): the wake-up closes once no watched command is outstanding (or the time is up).
  void close_when_reported();
  static void on_async(uv_async_t *async);
  void run_posted();
  // Whether the loop is polling (then post() need not wake it); returns whether tasks are waiting.
  bool set_polling(bool polling);

  uv_loop_t *loop_;
  uint64_t instance_;
  std::chrono::microseconds busy_poll_;
  uint64_t activity_ = 0;
  const std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  uv_async_t wakeup_;
  uv_timer_t watch_timer_;
  bool watching_ = false;
  std::mutex posted_mutex_;
  std::vector<std::function<void()>> posted_;
  bool polling_ = false;  // under posted_mutex_
  bool closed_ = false;   // under posted_mutex_: the wake-up is gone, posts are dropped
  bool closing_ = false;  // close() ran; the wake-up waits for the watched commands' reports
  bool ends_with_process_ = false;
  std::atomic<int> watches_{0};
  uv_timer_t closing_timer_;
  static constexpr uint64_t kClosingMs = 10000;
  std::unordered_map<uint64_t, std::shared_ptr<Session>> sessions_;
};

// A random 64-bit number, never 0 (daemon instances, session tokens).
uint64_t random_id();

}  // namespace fedcld
