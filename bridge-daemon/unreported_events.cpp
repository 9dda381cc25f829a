#include "unreported_events.h"

#include <algorithm>

#include "objects.h"

namespace fedcld {

namespace {

cl_int status_now(cl_event event) {
  cl_int status = CL_QUEUED;
  if (clGetEventInfo(event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr) != CL_SUCCESS)
    return CL_QUEUED;
  return status;
}

}  // namespace

UnreportedEvents::~UnreportedEvents() {
  for (const Entry &entry : entries_) {
    failures_forget(entry.event);
    clReleaseEvent(entry.event);
  }
}

void UnreportedEvents::add(uint64_t id, cl_event event, const PendingEvents &behind, ObjectTable &objects) {
  clRetainEvent(event);
  failures_remember(event, behind);
  entries_.push_back({++added_, id, event});
  if (entries_.size() < sweep_at_) return;
  drop_ended(added_, false, objects, nullptr);
  sweep_at_ = std::max(kFirstSweep, 2 * entries_.size());
}

std::vector<std::pair<uint64_t, cl_int>> UnreportedEvents::take_ended(uint64_t mark, ObjectTable &objects) {
  std::vector<std::pair<uint64_t, cl_int>> failed;
  drop_ended(mark, true, objects, &failed);
  return failed;
}

void UnreportedEvents::drop_ended(uint64_t mark, bool report, ObjectTable &objects,
                                  std::vector<std::pair<uint64_t, cl_int>> *failed) {
  auto kept = entries_.begin();
  for (Entry &entry : entries_) {
    cl_int status = entry.serial <= mark ? status_now(entry.event) : CL_QUEUED;
    // A command that ran behind a failure fedcld kept from the backend failed all the same.
    cl_int outcome = status <= CL_COMPLETE ? failures_settle(entry.event, status) : status;
    bool drop = outcome == CL_COMPLETE || (outcome < 0 && report);
    if (!drop) {
      *kept++ = entry;
      continue;
    }
    if (outcome < 0) failed->emplace_back(entry.id, outcome);
    objects.release_ended_event(entry.event, status);
  }
  entries_.erase(kept, entries_.end());
}

cl_event UnreportedEvents::take(uint64_t id) {
  // Usually one of the latest: the client asks about an event soon after it was enqueued.
  for (auto it = entries_.rbegin(); it != entries_.rend(); ++it) {
    if (it->id != id) continue;
    cl_event event = it->event;
    entries_.erase(std::next(it).base());
    return event;
  }
  return nullptr;
}

void UnreportedEvents::keep_unsettled(ObjectTable &objects) {
  drop_ended(added_, false, objects, nullptr);
  for (const Entry &entry : entries_) objects.keep_failed_event(entry.event);
  entries_.clear();
}

}  // namespace fedcld
