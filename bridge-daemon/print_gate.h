// The print gate: whose kernel printf output fedcld's stdout carries right now.
//
// stdout is one per process, so printing commands of different sessions must not run at the same
// time, or their output could not be told apart. A session holds the gate while any of its printing
// commands runs; commands of the same session run together under it. A printing command waits on
// the backend for a user event of the gate (its "release"), which is set CL_COMPLETE once
//   (a) all its own dependencies are complete (its wait list, and on an in-order queue the queue's
//       previous command), and
//   (b) the gate is free, or held by the same session and no other session waits for it.
// Taking the gate only once a command could start anyway means a holder always finishes: no session
// can hold the gate while it waits for something another session must do first. Ready commands wait
// for the gate in arrival order. While the gate is held PrintfCapture keeps what reaches stdout; each
// printing command's completion takes what was captured so far for its session, and the last one's
// passes the gate on.
//
// Only commands of kernels that may print (print_gate_may_print) come here; the others never touch
// the gate. Everything here runs on the loop thread.
#pragma once

#include <CL/cl.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <unordered_map>

namespace fedcld {

class PrintfCapture;
class Server;

// Whether a program made from these bytes (source text or a backend binary) may call printf: they
// contain "printf". Sources also count when they include other files, which fedcld cannot see.
bool binary_may_print(const void *bytes, size_t size);
bool source_may_print(const void *text, size_t size);

class PrintGate {
 public:
  explicit PrintGate(Server &server) : server_(server) {}
  PrintGate(const PrintGate &) = delete;

  // Without a capture (stdout could not be redirected) every command runs ungated, as before.
  void set_capture(PrintfCapture *capture) { capture_ = capture; }
  bool enabled() const { return capture_ != nullptr; }

  // A printing command of session is about to be enqueued: returns its ticket. With ready (its
  // dependencies are complete) the session may take the gate at once; entered() then says so, and
  // the command needs no release event.
  uint64_t open(uint64_t session, bool ready);
  bool entered(uint64_t ticket) const;
  // Whether event is a command of session that runs under the gate: a command waiting only for
  // such commands may join them at once (they finish, so it will start).
  bool runs(uint64_t session, cl_event event) const;
  // The backend accepted the command: its event, and the release event in its wait list (null when
  // it entered at once), both retained here. It waits until pending more dependencies completed.
  void attach(uint64_t ticket, cl_event command, cl_event release, size_t pending);
  // One of the command's dependencies completed (status < 0: it failed; the command is released
  // anyway and fails, or not, as the backend decides).
  void dependency_done(uint64_t ticket, cl_int status);
  // The command completed, in its completion handler: returns the output captured for its session
  // since the last collection, to be sent before the command's completion.
  std::string command_done(uint64_t ticket);
  // The backend refused the command (nothing was enqueued).
  void cancel(uint64_t ticket);
  // Nobody will report the command's completion (its session closed, or watching it failed): the
  // gate watches it itself and passes its output through to fedcld's stdout.
  void orphan(uint64_t ticket);
  // The session closed: its waiting commands fail, its running ones become orphans.
  void session_closed(uint64_t session);

 private:
  enum class State { waiting, ready, running };
  struct Ticket {
    uint64_t session;
    State state = State::waiting;
    cl_event command = nullptr;
    cl_event release = nullptr;   // set already when not waiting
    size_t pending = 0;           // dependencies not complete yet
    bool dependency_failed = false;
  };

  struct OrphanWatch {
    PrintGate *gate;
    Server *server;
    uint64_t ticket;
  };

  bool may_enter(uint64_t session) const;
  // All dependencies complete: take the gate, or wait for it.
  void ready(uint64_t id, Ticket &ticket);
  void enter(Ticket &ticket);
  static void CL_CALLBACK on_orphan_complete(cl_event event, cl_int status, void *data);
  void orphan_done(uint64_t id);
  void pass_on();
  void forget(uint64_t id);

  Server &server_;
  PrintfCapture *capture_ = nullptr;
  std::unordered_map<uint64_t, Ticket> tickets_;
  std::deque<uint64_t> queue_;  // ready tickets waiting for the gate, oldest first
  uint64_t next_ticket_ = 1;
  uint64_t holder_ = 0;         // the session holding the gate, 0 when free
  size_t running_ = 0;          // the holder's printing commands that entered and did not complete
};

}  // namespace fedcld
