// A session worker (fedcld --session-worker, started by the main process: worker_pool.h): one
// client's session on the backend, the peer links to the same client's sessions on other daemons,
// and the channel to the main process. It loads the backend, says it is ready, takes the session
// the main process hands it (the socket and the state the handshake left, handoff.cpp), answers the
// client's Hello, and ends once that session has ended. Its crash or hang ends this session alone.
#pragma once

#include <memory>
#include <unordered_map>
#include <vector>

#include "backend.h"
#include "control_channel.h"
#include "daemon_options.h"
#include "peer_link.h"
#include "print_gate.h"
#include "server.h"
#include "session.h"
#include "worker_board.h"

namespace fedcld {


class SessionHost final : public Server {
 public:
  SessionHost(uv_loop_t *loop, const DaemonSettings &settings, uint64_t instance,
              std::vector<BackendPlatform> platforms, ControlChannel *channel, WorkerBoard *board);
  ~SessionHost() override;

  // A message from the main process (link: the socket beside it, now this process's).
  void on_message(fedcl::wire::WorkerMessage::Reader message, SessionLink *link);

  const std::vector<BackendPlatform> &platforms() const { return platforms_; }
  // The largest payload a frame may bring: no object of a session is larger than its largest
  // device's memory, nor than --max-memory.
  uint64_t payload_bound() const { return payload_bound_; }
  PeerRegistry &peers() { return peers_; }
  // Kernel printf: which session's printing commands may run (print_gate.h).
  PrintGate &print_gate() { return print_gate_; }
  ControlChannel &channel() { return *channel_; }
  // Where this worker shows the main process its state and counts (null: none).
  WorkerBoard *board() { return board_; }
  // The board's clock, every second, and at once when a connection changes: the loop turns, and
  // the connections' traffic and transport (what the session holds, its object table shows there
  // as it changes).
  void publish();
  // A node file of the session's user, from the main process (node_file_broker.h): the descriptor
  // and *st, or -1 with *error.
  int open_node_file(const std::string &path, bool for_writing, struct stat *st, std::string *error);
  // The client session, when token is its token and it is still open.
  std::shared_ptr<Session> session_by_token(uint64_t token) const;
  // The client session while it is open.
  std::shared_ptr<Session> client() const;

  void execute(Session &session, Frame &frame) override;
  std::shared_ptr<uint8_t[]> payload_destination(Session &session, Frame &frame, std::string *problem) override;
  void connection_closed(Session &session, const std::string &reason) override;
  void close() override;
  bool closed() const { return closing_; }

 private:
  void take_session(fedcl::wire::TakeSession::Reader take, SessionLink *link);
  void resume_session(fedcl::wire::ResumeSession::Reader resume, SessionLink *link);
  // A connection's traffic on the board: the client's, or a peer link's (state: up, or closed).
  void publish_connection(const Session &session, BoardLink::State state);

  std::vector<BackendPlatform> platforms_;
  uint64_t payload_bound_;
  std::string trace_file_;  // --trace: this session's marks go to it + "." + the session's number
  ControlChannel *channel_;
  WorkerBoard *board_;
  std::shared_ptr<Session> client_;
  bool closing_ = false;
  PrintGate print_gate_{*this};
  PeerRegistry peers_{*this};
  uv_timer_t board_timer_;
  std::unordered_map<uint64_t, size_t> link_slots_;  // a peer link's board slot, by session number
  uv_signal_t sigterm_;  // the main process ends its workers with SIGTERM when it stops
};

// A request of the client session (exec.cpp).
void execute_request(Session &session, Frame &frame);
// Whether a client request may run while work of its session runs off the loop (a program build,
// Session::background_work_started), ahead of that work's reply (exec.cpp).
bool request_overtakes_background_work(const Frame &frame);
// Whether a client request may bring a payload of payload_bytes, decided when its message has
// arrived and before any memory is taken for the payload (which a frame may declare up to the
// wire's 1 TiB): the request must take one, of the size it states where it states one (a write, a
// buffer's contents), and a transfer chunk is at most a chunk. "" or why not (exec.cpp).
std::string request_payload_problem(fedcl::wire::Request::Reader request, uint64_t payload_bytes);

// A session worker's process: `fedcld --session-worker MAIN_PID` (worker_main.cpp).
int session_worker_main(int argc, char **argv);
// A session worker on this process's loop, for the fuzz target (WorkerPool::run_in_process).
void start_worker_in_process(uv_loop_t *loop, int channel_fd, int board_fd);

}  // namespace fedcld
