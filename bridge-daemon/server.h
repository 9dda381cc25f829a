// fedcld's listener: accepts client sessions on a libuv loop and carries work finished on backend
// threads (event callbacks, builds) back to the loop.
#pragma once

#include <uv.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "backend.h"
#include "memory_trim.h"
#include "peer_link.h"
#include "print_gate.h"
#include "tls_stream.h"

namespace fedcld {

class Session;

// How fedcld learns that a backend command completed: event callbacks, a waiting thread per queue
// as well, or whichever suits the backend (waiting for backends whose callbacks come late).
enum class CompletionMode { automatic, callback, wait };

// Which devices' queues keep page-locked staging for reads (staging_pool.h).
enum class PageLockedReads { gpus, all, none };

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 7070;
  std::string node;          // shown in client device names; default host name:port
  std::string key;           // the cluster key, for clients and peer daemons (keys.h)
  std::string key_list;      // file of per-user keys, read at each handshake
                             // (neither key nor key_list: every client is accepted)
  size_t max_sessions = 256;
  uint64_t max_session_memory = 0;  // bytes of buffers and images one session may hold; 0: no limit
  CompletionMode completion = CompletionMode::automatic;
  std::string peer_address;  // host:port advertised to peers (and listened on); empty: the client's
  uint64_t peer_timeout_ms = 10000;  // a peer link silent this long is dead
  uint32_t resume_window_ms = 10000;  // a client session whose connection dropped waits this long
  std::string file_root;     // canonical directory whose files clients may load and save; "": none
  bool status_sessions = true;  // DaemonStatus lists the client sessions and their memory
  long busy_poll_us = -1;       // how long threads poll after work before sleeping; -1: by core count
  PageLockedReads page_locked_reads = PageLockedReads::gpus;
  bool tls = false;          // every connection, accepted or dialled, speaks TLS (tls_stream.h)
  std::string tls_cert;      // PEM certificate chain shown to clients and peers; "": none (PSK only)
  std::string tls_key;       // its private key
  std::string tls_ca;        // CA file that checks peers' certificates; "": the system's

  bool requires_key() const { return !key.empty() || !key_list.empty(); }
};

class Server {
 public:
  Server(uv_loop_t *loop, ServerOptions options, std::vector<BackendPlatform> platforms);
  ~Server();

  // Runs the loop until it has nothing left, polling for up to busy_poll() after each piece of work.
  void run();
  std::chrono::microseconds busy_poll() const { return busy_poll_; }
  // Something arrived (a read, posted work): polling goes on.
  void note_activity() { activity_++; }

  // Loads what --tls needs (certificate, contexts); "" or why the daemon cannot start. Before listen().
  std::string setup_tls() { return tls_.setup(options_); }
  const DaemonTls &tls() const { return tls_; }
  // Binds and listens (on the peer address too, if one is set); returns a libuv error code.
  int listen();
  void close();
  // The port actually bound (differs from options().port when that was 0).
  int port() const;

  // Thread-safe: runs task on the loop thread soon.
  void post(std::function<void()> task);

  uv_loop_t *loop() const { return loop_; }
  const ServerOptions &options() const { return options_; }
  std::chrono::steady_clock::time_point started() const { return started_; }
  const std::vector<BackendPlatform> &platforms() const { return platforms_; }
  void session_closed(uint64_t number);
  // A new connection's session, kept until it closes (accepted ones, and peer links dialled).
  std::shared_ptr<Session> add_session();
  // Client sessions by the token peers address them with.
  uint64_t register_token(Session &session);
  std::shared_ptr<Session> session_by_token(uint64_t token) const;
  // Client sessions by their resume token (HelloReply.resumeToken): 16 fresh random bytes.
  std::string register_resume_token(Session &session);
  std::shared_ptr<Session> session_by_resume_token(const std::string &token) const;
  std::vector<std::shared_ptr<Session>> client_sessions() const;
  PeerRegistry &peers() { return peers_; }
  // Kernel printf: which session's printing commands may run (print_gate.h).
  PrintGate &print_gate() { return print_gate_; }
  // Gives freed memory back to the system once sessions close (memory_trim.h).
  MemoryTrim &memory_trim() { return memory_trim_; }

 private:
  static void on_connection(uv_stream_t *server, int status);
  // Every half second: a heartbeat to each client session sent nothing for half a second (so that
  // a client tells a frozen daemon from an idle one), and the end of handshakes that take too long.
  void watch_sessions();
  static void on_async(uv_async_t *async);
  void run_posted();
  // Whether the loop is polling (then post() need not wake it); returns whether tasks are waiting.
  bool set_polling(bool polling);
  static void on_signal(uv_signal_t *signal, int signum);

  uv_loop_t *loop_;
  ServerOptions options_;
  DaemonTls tls_;
  std::chrono::microseconds busy_poll_;
  uint64_t activity_ = 0;
  const std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  std::vector<BackendPlatform> platforms_;
  uv_tcp_t listener_;
  uv_tcp_t peer_listener_;
  bool peer_listening_ = false;
  uv_async_t wakeup_;
  uv_timer_t watch_timer_;
  uv_signal_t sigint_, sigterm_;
  std::mutex posted_mutex_;
  std::vector<std::function<void()>> posted_;
  bool polling_ = false;  // under posted_mutex_
  uint64_t next_session_ = 1;
  std::unordered_map<uint64_t, std::shared_ptr<Session>> sessions_;
  std::unordered_map<uint64_t, std::weak_ptr<Session>> tokens_;
  std::unordered_map<std::string, std::weak_ptr<Session>> resume_tokens_;
  PrintGate print_gate_{*this};
  PeerRegistry peers_{*this};
  MemoryTrim memory_trim_{loop_};
};

}  // namespace fedcld
