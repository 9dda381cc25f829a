#include "event_failures.h"

#include <algorithm>
#include <mutex>
#include <string>
#include <unordered_map>

#include "exec.h"

namespace fedcld {

namespace {

bool g_keep = false;
// Only the loop calls in; the lock keeps a stray caller from tearing the maps.
std::mutex g_mutex;
std::unordered_map<cl_event, cl_int> g_failed;         // retained: user events and commands
std::unordered_map<cl_event, PendingEvents> g_behind;  // commands still watched: what they run behind

cl_int backend_status(cl_event event) {
  cl_int status = CL_COMPLETE;
  clGetEventInfo(event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr);
  return status;
}

bool is_user_event(cl_event event) {
  cl_command_type type = 0;
  return clGetEventInfo(event, CL_EVENT_COMMAND_TYPE, sizeof type, &type, nullptr) == CL_SUCCESS &&
         type == CL_COMMAND_USER;
}

// Under g_mutex.
void record_failure(cl_event event, cl_int status) {
  if (g_failed.emplace(event, status).second) clRetainEvent(event);
}

bool any_failed(const PendingEvents &events) {
  return std::any_of(events.events().begin(), events.events().end(),
                     [](cl_event event) { return g_failed.count(event) != 0; });
}

}  // namespace

PendingEvents::PendingEvents(const PendingEvents &other) : events_(other.events_) {
  for (cl_event event : events_) clRetainEvent(event);
}

PendingEvents &PendingEvents::operator=(const PendingEvents &other) {
  if (this == &other) return *this;
  for (cl_event event : other.events_) clRetainEvent(event);
  for (cl_event event : events_) clReleaseEvent(event);
  events_ = other.events_;
  return *this;
}

PendingEvents::~PendingEvents() {
  for (cl_event event : events_) clReleaseEvent(event);
}

void PendingEvents::add(cl_event event) {
  if (std::find(events_.begin(), events_.end(), event) != events_.end()) return;
  clRetainEvent(event);
  events_.push_back(event);
}

void PendingEvents::add(const PendingEvents &events) {
  for (cl_event event : events.events_) add(event);
}

void PendingEvents::drop_settled() {
  auto settled = std::stable_partition(events_.begin(), events_.end(),
                                       [](cl_event event) { return backend_status(event) > CL_COMPLETE; });
  for (auto it = settled; it != events_.end(); ++it) clReleaseEvent(*it);
  events_.erase(settled, events_.end());
}

void failures_keep_from_backend(bool keep) { g_keep = keep; }

cl_int failures_set_user_event(cl_event event, cl_int status, bool *backend_failed) {
  *backend_failed = false;
  if (!g_keep || status >= 0) {
    cl_int err = clSetUserEventStatus(event, status);
    *backend_failed = err == CL_SUCCESS && status < 0;
    return err;
  }
  {
    // Recorded first: the completions of the commands behind it must find it.
    std::lock_guard<std::mutex> lock(g_mutex);
    record_failure(event, status);
  }
  cl_int err = clSetUserEventStatus(event, CL_COMPLETE);
  if (err != CL_SUCCESS) {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (g_failed.erase(event)) clReleaseEvent(event);
  }
  return err;
}

cl_int failures_status(cl_event event) {
  cl_int status = backend_status(event);
  if (!g_keep || status != CL_COMPLETE) return status;  // only completed events have a failure recorded
  std::lock_guard<std::mutex> lock(g_mutex);
  auto failed = g_failed.find(event);
  return failed == g_failed.end() ? status : failed->second;
}

PendingEvents failures_behind(const std::vector<cl_event> &wait, bool in_order, Ordering ordering,
                              QueueFailures &queue) {
  PendingEvents behind;
  if (!g_keep) return behind;
  PendingEvents &follows = in_order || ordering != Ordering::command ? queue.latest : queue.barrier;
  follows.drop_settled();
  if (wait.empty() && follows.empty()) {  // a launch's usual case: nothing to copy
    if (!in_order && ordering == Ordering::barrier) queue.barrier = PendingEvents();
    return behind;
  }
  behind = follows;
  for (cl_event event : wait) {
    if (backend_status(event) > CL_COMPLETE && is_user_event(event)) behind.add(event);
    std::lock_guard<std::mutex> lock(g_mutex);
    auto command = g_behind.find(event);
    if (command == g_behind.end()) continue;
    // The backend fails a command's waiters as soon as one of its dependencies fails.
    if (any_failed(command->second))
      fail(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST, "a command of the wait list runs behind an event that failed");
    for (cl_event source : command->second.events())
      if (backend_status(source) > CL_COMPLETE) behind.add(source);
  }
  if (in_order) {
    queue.latest = behind;
  } else {
    queue.latest.add(behind);
    if (ordering == Ordering::barrier) queue.barrier = behind;
  }
  return behind;
}

void failures_remember(cl_event command, const PendingEvents &behind) {
  if (behind.empty()) return;
  std::lock_guard<std::mutex> lock(g_mutex);
  g_behind[command] = behind;
}

void failures_forget(cl_event command) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_behind.erase(command);
}

cl_int failures_settle(cl_event event, cl_int status) {
  if (!g_keep || status < 0) return status;
  std::lock_guard<std::mutex> lock(g_mutex);
  auto failed = g_failed.find(event);
  if (failed != g_failed.end()) return failed->second;
  auto command = g_behind.find(event);
  if (command == g_behind.end()) return status;
  bool failure = any_failed(command->second);
  g_behind.erase(command);
  if (!failure) return status;
  record_failure(event, CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST);
  return CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST;
}

cl_int failures_outcome(const PendingEvents &behind, cl_int status) {
  if (!g_keep || status < 0 || behind.empty()) return status;
  std::lock_guard<std::mutex> lock(g_mutex);
  return any_failed(behind) ? CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST : status;
}

}  // namespace fedcld
