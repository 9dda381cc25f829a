// Failures fedcld applies itself. PoCL 3.1 walks into freed memory when an event that commands wait
// for fails (design-decisions, "Failures stay out of PoCL"): on a backend marked so
// (BackendPlatform::frees_failed_waiters) fedcld never sets a user event to a failure. It completes
// the event in the backend and records the failure here; the commands behind it then run, on memory
// whose contents the specification leaves undefined after a failure, and fedcld reports each of them
// failed with CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST, as the backend would have.
//
// What a command runs behind: the user events of its wait list still pending, those the commands of
// its wait list run behind, and what the commands it follows in its queue ran behind, while still
// pending (the backend fails a command's waiters at once, so a command enqueued after the failure
// runs: the same here). It follows, on an in-order queue, the command before it; on an out-of-order
// one, the latest barrier, and a marker or barrier follows every command before it (PoCL's order,
// whether or not the marker has a wait list). Elsewhere the calls pass failures through and record
// nothing.
//
// On the session worker's loop. The records hold references to their events; a failure's stays until
// the process ends (a worker serves one session), as ObjectTable::keep_failed_event does.
#pragma once

#include <CL/cl.h>

#include <utility>
#include <vector>

namespace fedcld {

// User events, each retained once.
class PendingEvents {
 public:
  PendingEvents() = default;
  PendingEvents(const PendingEvents &other);
  PendingEvents(PendingEvents &&other) noexcept : events_(std::move(other.events_)) { other.events_.clear(); }
  PendingEvents &operator=(const PendingEvents &other);
  PendingEvents &operator=(PendingEvents &&other) noexcept {
    events_.swap(other.events_);
    return *this;
  }
  ~PendingEvents();
  void add(cl_event event);
  void add(const PendingEvents &events);
  // Drops the events that have their status (succeeded or failed).
  void drop_settled();
  bool empty() const { return events_.empty(); }
  const std::vector<cl_event> &events() const { return events_; }

 private:
  std::vector<cl_event> events_;
};

// What a queue's next commands follow (QueueState).
struct QueueFailures {
  PendingEvents latest;   // in-order: the latest command's; out-of-order: every command's
  PendingEvents barrier;  // out-of-order: the latest barrier's
};
enum class Ordering { command, marker, barrier };

// Set once, when the worker learns its session's backend.
void failures_keep_from_backend(bool keep);

// clSetUserEventStatus, where failures are kept from the backend a failure recorded and the event
// completed. Returns the backend's error; *backend_failed tells whether the backend saw a failure
// (commands behind it may then fail without calling back: sweep_failed_watches).
cl_int failures_set_user_event(cl_event event, cl_int status, bool *backend_failed);
// An event's status as the client must see it: the backend's, or the failure recorded for it.
cl_int failures_status(cl_event event);
// What a command enqueued behind wait on queue runs behind; queue is updated. Fails the request with
// CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST when a command of wait runs behind a failure (it fails
// once it completes).
PendingEvents failures_behind(const std::vector<cl_event> &wait, bool in_order, Ordering ordering,
                              QueueFailures &queue);
// Keeps what command runs behind until its completion is settled (its watch is set).
void failures_remember(cl_event command, const PendingEvents &behind);
void failures_forget(cl_event command);
// A watched event's completion as the client must see it; a failure found is recorded for later
// wait lists.
cl_int failures_settle(cl_event event, cl_int status);
// The outcome of work that ran behind behind (a transfer's device commands).
cl_int failures_outcome(const PendingEvents &behind, cl_int status);

}  // namespace fedcld
