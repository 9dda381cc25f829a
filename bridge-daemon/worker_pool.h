// The main process's session workers (docs/design-decisions.md, "Processes"): fedcld itself started
// again with --session-worker, each running one client session. A few are started ahead
// (--spare-workers) with their backend loaded, so that a session starts at once. The pool learns of
// each worker's end (its exit, and from its board the signal and the backend call it died in), and
// kills a worker whose loop has stood still for --worker-hang-timeout.
#pragma once

#include <uv.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "accounts.h"
#include "backend.h"
#include "fedcl.capnp.h"

namespace fedcld {

class ControlChannel;
class Listener;
struct SessionLink;
struct WorkerBoard;

class WorkerPool;

struct Worker {
  enum class State { starting, spare, serving, gone };
  WorkerPool *pool = nullptr;
  uint64_t id = 0;
  int pid = 0;
  uv_process_t process;
  ControlChannel *channel = nullptr;
  WorkerBoard *board = nullptr;
  State state = State::starting;
  bool enumerator = false;       // it lists the devices for the main process when ready
  bool enumerate_only = false;   // ... and then ends, rather than staying on as the first spare
  uint64_t started_ms = 0;
  bool in_process = false;  // the fuzz target's: no process, it ends when it closes its channel
  std::string hung;  // why the pool killed it, if it did
  std::string scratch;  // its own folder (temporary files, JIT caches), removed when it ends; "": none
  LocalAccount account;  // whose it is (--session-accounts); uid 0: fedcld's own user
  uint64_t stall_reported = 0;  // the board's loop_turned_ns when a stall of its loop was reported (0: none)
  // Its session (the main process's view of it), once it has one.
  uint64_t number = 0;
  std::string client, user;
  std::string address;  // the client's connection, as this daemon sees it
  uint32_t platform = 0;
  uint64_t token = 0;
  std::string resume_token;
  uint64_t since_ms = 0;
  // Who waits for it to be ready (state starting).
  std::vector<std::function<void(Worker *, const std::string &)>> waiting;
};

class WorkerPool {
 public:
  explicit WorkerPool(Listener &listener);
  ~WorkerPool();

  // Starts a worker that loads the backend and describes its platforms; done(platforms, "") or
  // done({}, why) runs on the loop. It then stays on as the first spare (none with --spare-workers 0).
  using Enumerated = std::function<void(std::vector<BackendPlatform> platforms, const std::string &problem)>;
  void enumerate(Enumerated done);
  // Keeps the spares started, and watches the workers.
  void start();
  // A worker for a new session: got(worker, "") once one is ready, which the caller hands the
  // session to (register() then), or got(nullptr, why) when none can be had.
  using Got = std::function<void(Worker *worker, const std::string &why)>;
  void take(Got got);
  // A worker started for account's session alone (--session-accounts): it becomes the account before
  // it loads the backend, so no spare can serve it.
  void take_for(const LocalAccount &account, Got got);
  // The worker took a session with these tokens (the caller filled the Worker's session fields).
  void serving(Worker &worker);
  // A worker taken is not needed after all (its session's client left meanwhile): a spare again.
  void unused(Worker &worker);
  Worker *by_id(uint64_t id);
  Worker *by_token(uint64_t token);
  Worker *by_resume_token(const std::string &token);
  // Why the session whose resume token this was ended with its worker, if it did ("" if unknown).
  std::string death_of(const std::string &resume_token) const;
  std::vector<const Worker *> sessions() const;
  size_t session_count() const;
  // Ends every worker (SIGTERM) and stops watching.
  void close();

  // For the fuzz target: workers run in this process, on its loop (start gets the worker's end of
  // the channel and its board's memfd, which it maps itself, as a worker process would) instead of
  // in processes of their own.
  using InProcessStart = std::function<void(int channel_fd, int board_fd)>;
  void run_in_process(InProcessStart start) { in_process_ = std::move(start); }

 private:
  Worker *spawn(bool enumerator, const LocalAccount *account = nullptr);
  // The process of worker (its channel's pipe set up first); libuv's error or 0.
  int start_process(Worker &worker, int board_fd);
  // An in-process worker closed its channel: it ended as a process would have.
  void in_process_ended(Worker &worker);
  void on_message(Worker &worker, fedcl::wire::WorkerMessage::Reader message, SessionLink *link);
  void ready(Worker &worker, fedcl::wire::WorkerReady::Reader ready);
  static void on_exit(uv_process_t *process, int64_t status, int term_signal);
  void exited(Worker &worker, int64_t status, int term_signal);
  // What the end of a worker means, in words for its client and the log.
  std::string describe_end(const Worker &worker, int64_t status, int term_signal) const;
  void replenish();
  // Ends worker with signum (a process) or by closing its channel (in-process).
  void end(Worker &worker, int signum);
  void watch();
  // Logs that worker's loop stood still for still_ms and has it write where its loop thread stands.
  void report_stall(Worker &worker, uint64_t still_ms);

  // The folder of worker's own (under scratch_root_, made at the first), or why it cannot be made.
  std::string make_scratch(Worker &worker);

  Listener &listener_;
  std::string scratch_root_;  // this daemon's workers' folders, in $TMPDIR or /tmp
  std::map<uint64_t, std::unique_ptr<Worker>> workers_;
  uint64_t next_id_ = 1;
  Enumerated enumerated_;
  InProcessStart in_process_;
  unsigned failed_starts_ = 0;  // workers in a row that ended before they were ready
  bool closing_ = false;
  struct Death {
    std::string why;
    uint64_t at_ms;
  };
  std::unordered_map<std::string, Death> deaths_;  // by resume token
  uv_timer_t timer_;
};

}  // namespace fedcld
