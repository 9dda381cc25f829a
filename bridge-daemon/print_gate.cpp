#include "print_gate.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "exec.h"
#include "log.h"
#include "printf_capture.h"
#include "server.h"

namespace fedcld {

namespace {

bool contains(const void *bytes, size_t size, const char *needle) {
  return size && memmem(bytes, size, needle, std::strlen(needle)) != nullptr;
}

}  // namespace

bool binary_may_print(const void *bytes, size_t size) { return contains(bytes, size, "printf"); }

bool source_may_print(const void *text, size_t size) {
  return contains(text, size, "printf") || contains(text, size, "include");
}

uint64_t PrintGate::open(uint64_t session, bool ready) {
  uint64_t id = next_ticket_++;
  Ticket &ticket = tickets_.emplace(id, Ticket{session}).first->second;
  if (ready && may_enter(session)) enter(ticket);
  return id;
}

bool PrintGate::entered(uint64_t id) const {
  auto it = tickets_.find(id);
  return it != tickets_.end() && it->second.state == State::running;
}

bool PrintGate::runs(uint64_t session, cl_event event) const {
  if (holder_ != session) return false;
  for (const auto &entry : tickets_)
    if (entry.second.state == State::running && entry.second.command == event) return true;
  return false;
}

bool PrintGate::may_enter(uint64_t session) const {
  if (holder_ == 0) return true;  // a free gate has nobody queued: pass_on() empties the queue first
  if (holder_ != session) return false;
  // Joining the holder is fine unless another session waits: then it goes first, or a session that
  // keeps printing on several queues could keep the gate for ever.
  for (uint64_t id : queue_)
    if (tickets_.at(id).session != session) return false;
  return true;
}

void PrintGate::enter(Ticket &ticket) {
  if (holder_ == 0) {
    capture_->begin();
    holder_ = ticket.session;
    FEDCLD_LOG(debug, "print gate: session %llu takes it", (unsigned long long)holder_);
  }
  running_++;
  ticket.state = State::running;
  if (ticket.release) {
    clSetUserEventStatus(ticket.release, CL_COMPLETE);
    // A command behind a failed dependency may fail now without calling back (PoCL): look for it.
    if (ticket.dependency_failed) sweep_failed_watches();
  }
}

void PrintGate::attach(uint64_t id, cl_event command, cl_event release, size_t pending) {
  Ticket &ticket = tickets_.at(id);
  clRetainEvent(command);
  ticket.command = command;
  if (release) {
    clRetainEvent(release);
    ticket.release = release;
  }
  ticket.pending = pending;
  if (ticket.state == State::waiting && pending == 0) ready(id, ticket);
}

void PrintGate::dependency_done(uint64_t id, cl_int status) {
  auto it = tickets_.find(id);
  if (it == tickets_.end() || it->second.state != State::waiting) return;
  Ticket &ticket = it->second;
  if (status < 0) ticket.dependency_failed = true;
  if (ticket.pending > 0 && --ticket.pending > 0) return;
  ready(id, ticket);
}

void PrintGate::ready(uint64_t id, Ticket &ticket) {
  if (may_enter(ticket.session)) {
    enter(ticket);
  } else {
    ticket.state = State::ready;
    queue_.push_back(id);
    FEDCLD_LOG(debug, "print gate: session %llu waits, session %llu holds it", (unsigned long long)ticket.session,
               (unsigned long long)holder_);
  }
}

void PrintGate::pass_on() {
  if (holder_ != 0 || queue_.empty()) return;
  // The oldest ready command's session takes the gate, with every ready command of its own.
  uint64_t session = tickets_.at(queue_.front()).session;
  std::deque<uint64_t> go, rest;
  for (uint64_t id : queue_) (tickets_.at(id).session == session ? go : rest).push_back(id);
  queue_.swap(rest);
  for (uint64_t id : go) enter(tickets_.at(id));
}

void PrintGate::forget(uint64_t id) {
  auto it = tickets_.find(id);
  if (it == tickets_.end()) return;
  Ticket &ticket = it->second;
  if (ticket.state == State::ready) queue_.erase(std::find(queue_.begin(), queue_.end(), id));
  if (ticket.command) clReleaseEvent(ticket.command);
  if (ticket.release) clReleaseEvent(ticket.release);
  tickets_.erase(it);
}

std::string PrintGate::command_done(uint64_t id) {
  auto it = tickets_.find(id);
  if (it == tickets_.end()) return {};
  Ticket &ticket = it->second;
  if (ticket.state != State::running) {
    // It completed without the gate: it failed behind a failed dependency before it could start.
    if (ticket.release) clSetUserEventStatus(ticket.release, CL_COMPLETE);
    forget(id);
    return {};
  }
  bool last = --running_ == 0;
  std::string output = capture_->collect(last);
  FEDCLD_LOG(debug, "print gate: a command of session %llu completed with %zu bytes of output%s",
             (unsigned long long)ticket.session, output.size(), last ? "; the gate is free" : "");
  forget(id);
  if (last) {
    holder_ = 0;
    pass_on();
  }
  return output;
}

void PrintGate::cancel(uint64_t id) {
  auto it = tickets_.find(id);
  if (it == tickets_.end()) return;
  if (it->second.state == State::running) {
    capture_->pass_through(command_done(id));
    return;
  }
  forget(id);
}

void PrintGate::orphan(uint64_t id) {
  auto it = tickets_.find(id);
  if (it == tickets_.end()) return;
  Ticket &ticket = it->second;
  if (ticket.state != State::running) {
    // It never started: fail it, so that the backend lets go of it.
    if (ticket.release) set_user_event_status(ticket.release, CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST);
    forget(id);
    return;
  }
  // It runs and may print: the gate stays taken until it completed.
  FEDCLD_LOG(debug, "print gate: a running command of session %llu has nobody to report to; the gate waits for it",
             (unsigned long long)ticket.session);
  auto *watch = new OrphanWatch{this, &server_, id};
  cl_int err = clSetEventCallback(ticket.command, CL_COMPLETE, on_orphan_complete, watch);
  if (err != CL_SUCCESS) {
    delete watch;
    FEDCLD_LOG(warn, "cannot watch an abandoned printing command (%d): the print gate is released now", err);
    orphan_done(id);
  }
}

void CL_CALLBACK PrintGate::on_orphan_complete(cl_event, cl_int, void *data) {
  std::unique_ptr<OrphanWatch> watch(static_cast<OrphanWatch *>(data));
  watch->server->post([gate = watch->gate, id = watch->ticket] { gate->orphan_done(id); });
}

void PrintGate::orphan_done(uint64_t id) { capture_->pass_through(command_done(id)); }

void PrintGate::session_closed(uint64_t session) {
  // Those that never started first, so that none of them takes the gate on the way.
  std::vector<uint64_t> waiting, running;
  for (const auto &entry : tickets_)
    if (entry.second.session == session) (entry.second.state == State::running ? running : waiting).push_back(entry.first);
  for (uint64_t id : waiting) orphan(id);
  for (uint64_t id : running) orphan(id);
}

}  // namespace fedcld
