// fedcld's main process (docs/design-decisions.md, "Processes"): it listens, takes every connection
// through TLS's handshake and the challenge-response (exec_handshake.cpp, peer_handshake.h), and
// hands it to a session worker (worker_pool.h), which runs the session and talks to the client
// directly from then on. It answers `fedcl status` itself. It never calls the backend: a driver that
// crashes or hangs takes one session's worker with it, never the daemon.
#pragma once

#include <functional>
#include <random>
#include <string>
#include <vector>

#include "auth.h"
#include "auth_throttle.h"
#include "backend.h"
#include "daemon_counters.h"
#include "daemon_names.h"
#include "daemon_options.h"
#include "handshake_limits.h"
#include "keys.h"
#include "metrics_http.h"
#include "node_file_broker.h"
#include "peer_handshake.h"
#include "server.h"
#include "session.h"
#include "stranger_log.h"
#include "worker_pool.h"

namespace fedcld {

class Listener final : public Server {
 public:
  Listener(uv_loop_t *loop, DaemonSettings settings);
  ~Listener() override;

  // Loads what --tls needs (certificate, contexts); "" or why the daemon cannot start. Before listen().
  std::string setup_tls();
  // Binds the listening sockets (the peer address's too, if one is set) and, without --node, names
  // the node after this host and the port bound; returns a libuv error code. Before enumerate().
  int bind();
  // Lists the backend's devices in a worker (the loop runs until it answered), which then stays on
  // as the first spare (so it must know the node's name); "" or why fedcld cannot serve.
  std::string enumerate();
  // Listens on what bind() bound, then starts the spare workers; returns a libuv error code.
  int listen();
  // The port actually bound (differs from the option when that was 0).
  int port() const;
  // The local socket's path once bound (--local-socket), else "".
  const std::string &local_socket() const { return local_socket_; }
  // --metrics: serves Prometheus's scrapes (metrics_http.h); libuv's error or 0. Then the port bound.
  int listen_metrics(const std::string &host, int port);
  int metrics_port() const { return metrics_.port(); }
  void close() override;

  const DaemonSettings &settings() const { return settings_; }
  // The backend's platforms as the workers describe them (no handles: this process never loads it).
  const std::vector<BackendPlatform> &platforms() const { return platforms_; }
  WorkerPool &workers() { return workers_; }
  PeerHandshakes &peers() { return peers_; }
  const KeyStore &keys() const { return keys_; }
  const DaemonNames &names() const { return names_; }
  AuthThrottle &throttle() { return throttle_; }
  NodeFileBroker &node_files() { return node_files_; }
  DaemonCounters &counters() { return counters_; }
  const HandshakeLimits &handshakes() const { return handshakes_; }
  // The key daemons prove to each other and tag their peer addresses with ("" none).
  const fedcl::Secret &daemons_key() const { return options_.peer_key; }

  // A stranger's connection (handshake_limits.h) has proved itself, or finished its Hello on a
  // daemon without keys: no longer counted, nor held to the handshake's deadline.
  void verified(Session &session);
  // What ended a stranger's connection, logged one line per address and interval (stranger_log.h).
  void log_stranger_end(Session &session, StrangerEnd end, const std::string &why);
  // Runs then(session) at uv_now time at (at once if that has come), unless the connection closed
  // meanwhile: a refused proof's answer waits its turn (auth_throttle.h).
  void at_turn(Session &session, uint64_t at, std::function<void(Session &)> then);

  // What the handshakes come to (exec_handshake.cpp). The connection, paused, goes to a worker:
  // a new session (start_session), or the worker whose session it resumes (resume_session).
  void start_session(Session &session, uint64_t seq, const fedcl::Proof *proof);
  void resume_session(Session &session, uint64_t seq, const fedcl::Proof *proof);
  // Answers `fedcl status` (exec_status.cpp) and closes the connection.
  void send_status(Session &session, uint64_t seq, const fedcl::Proof *proof);
  // Refuses the connection's handshake: the other side gets status and why, the log warns, the
  // connection closes.
  void refuse(Session &session, uint64_t seq, cl_int status, const std::string &why);
  // The same for a stranger (a wrong key, a plain-TCP client of a TLS daemon, another protocol
  // version, a malformed Hello): logged as its end (log_stranger_end).
  void refuse_stranger(Session &session, uint64_t seq, StrangerEnd end, const std::string &why);

  // Moves session's connection to worker once all written to it has left: fill makes the
  // message and returns where the connection's state goes; the socket travels beside it. The
  // session ends here; sent(ok) runs once the worker has it, or could not get it.
  using Fill = std::function<fedcl::wire::HandedConnection::Builder(fedcl::wire::WorkerMessage::Builder)>;
  void hand_off(Session &session, Worker &worker, Fill fill, std::function<void(bool ok)> sent = nullptr);

  void execute(Session &session, Frame &frame) override;
  // Frames before the proof carry no payload (Session::parse refuses them); later ones go to the worker.
  std::shared_ptr<uint8_t[]> payload_destination(Session &, Frame &, std::string *) override { return nullptr; }
  void connection_closed(Session &session, const std::string &reason) override;

 private:
  static void on_connection(uv_stream_t *server, int status);
  // Accepts the connection waiting on listener as a stranger's (closing the oldest past a cap).
  void accept_from(uv_stream_t *listener);
  // The loop's turn ended (uv_check): accepts that waited for it go on.
  void turn_ended();
  static void on_signal(uv_signal_t *signal, int signum);
  // Each second: the strangers' log lines of intervals that ended, and the heap given back to the
  // system once a flood of strangers has passed.
  void tick();
  void answer_refusal(Session &session, uint64_t seq, cl_int status, const std::string &why);
  // Where peers reach this daemon for session's client (HelloReply.peerAddress): --peer-address,
  // else the host the client dialled and the port it reached; "" when the client named no host.
  std::string peer_address_for(Session &session);

  DaemonSettings settings_;
  KeyStore keys_;
  DaemonNames names_;
  AuthThrottle throttle_;
  HandshakeLimits handshakes_;
  StrangerLog stranger_log_;
  size_t admitted_since_trim_ = 0;  // strangers accepted since the heap was last trimmed
  std::minstd_rand deadline_jitter_{std::random_device{}()};
  uint64_t accept_failures_ = 0;    // accepts that failed in this interval, beyond the one logged
  uint64_t accept_failure_logged_ = 0;
  DaemonCounters counters_;
  MetricsHttp metrics_;
  std::vector<BackendPlatform> platforms_;
  WorkerPool workers_{*this};
  NodeFileBroker node_files_;
  PeerHandshakes peers_{*this};
  uv_tcp_t listener_;
  uv_tcp_t peer_listener_;
  bool peer_listening_ = false;
  uv_pipe_t local_listener_;
  std::string local_socket_;  // bound: removed again when the daemon stops
  // Binds --local-socket (after the port is known); "" or why not.
  std::string bind_local();
  uv_signal_t sigint_, sigterm_;
  uv_timer_t tick_;
  uv_check_t turn_end_;
  unsigned accepted_this_turn_ = 0;
  std::vector<uv_stream_t *> deferred_accepts_;  // listeners whose connection waits for the next turn
};

}  // namespace fedcld
