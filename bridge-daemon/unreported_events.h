// Commands whose completion fedcld reports only when the client asks (wire Command.unwatched): the
// client's own bookkeeping, and application events that nothing has waited for or asked about yet
// (a Python loop drops the event that each of PyOpenCL's enqueues returns). A watch costs the loop a
// backend callback, a hand-off and a notice per command; these get none.
//
// Each queue keeps them, each retained, until it knows how they ended. A failure is reported in the
// reply to the queue's next finish (Reply.finished) or, once the client asks (watchEvent), in a
// Completion; the event of a command that failed in the backend is then kept as every failed
// command's is (ObjectTable::keep_failed_event). Between finishes the list drops the commands that
// completed whenever it has doubled in length, so that a program that never calls clFinish holds only
// what is still under way (and what failed).
#pragma once

#include <CL/cl.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "event_failures.h"

namespace fedcld {

class ObjectTable;

class UnreportedEvents {
 public:
  UnreportedEvents() = default;
  UnreportedEvents(const UnreportedEvents &) = delete;
  ~UnreportedEvents();

  // The command's event under the client's id, retained here; behind: the user events it runs
  // behind (event_failures.h), whose failure is its own.
  void add(uint64_t id, cl_event event, const PendingEvents &behind, ObjectTable &objects);
  // Where a finish stands: the commands added so far.
  uint64_t mark() const { return added_; }
  // The commands added up to mark that have ended: those that succeeded are dropped, those that
  // failed are dropped too and returned (id, status). Those still under way stay.
  std::vector<std::pair<uint64_t, cl_int>> take_ended(uint64_t mark, ObjectTable &objects);
  // id's event, if it is listed: removed, and its reference handed to the caller.
  cl_event take(uint64_t id);
  // The queue goes: what may still fail is kept with the failed commands' events.
  void keep_unsettled(ObjectTable &objects);

 private:
  struct Entry {
    uint64_t serial;
    uint64_t id;
    cl_event event;
  };
  // Drops the ended entries up to mark that succeeded and, if report is set, those that failed,
  // whose (id, status) it appends to failed.
  void drop_ended(uint64_t mark, bool report, ObjectTable &objects, std::vector<std::pair<uint64_t, cl_int>> *failed);

  static constexpr size_t kFirstSweep = 256;
  std::vector<Entry> entries_;
  uint64_t added_ = 0;
  size_t sweep_at_ = kFirstSweep;
};

}  // namespace fedcld
