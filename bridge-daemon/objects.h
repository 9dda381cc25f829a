// A session's object table: the OpenCL objects a client created, under the ids the client chose.
#pragma once

#include <CL/cl.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "event_failures.h"
#include "event_waiter.h"
#include "staging_pool.h"
#include "sub_buffer_order.h"
#include "unreported_events.h"

namespace fedcld {

enum class ObjectKind : uint8_t { device, context, queue, mem, program, kernel, event, sampler, command_buffer };

// command_buffer.h; the table deletes those it holds.
class CommandBuffer;
class HeaderFolder;
void destroy_command_buffer(CommandBuffer *buffer);

// Thrown by request handlers; becomes a Reply status or an AsyncError.
struct RequestError {
  cl_int status;
  std::string message;
};

// A user event nobody will set any more (its session is gone) fails, so that the commands waiting for
// it, and the memory they hold (payloads, buffers), leave the backend instead of waiting for ever.
void fail_unset_user_event(cl_event event);

// A clFinish waiting for its answer: its request, and where the queue's unreported commands stood
// when it came (the answer reports those before it).
struct FinishWaiter {
  uint64_t seq;
  uint64_t mark;
};

// What fedcld tracks about a queue beyond its handle.
struct QueueState {
  bool profiling = false;
  bool in_order = true;
  uint32_t outstanding = 0;             // commands whose completion the loop has not processed yet
  std::vector<FinishWaiter> finish_waiters;  // clFinish calls answered once outstanding is 0
  cl_event last = nullptr;              // an in-order queue's latest command with an event
  bool last_watched = false;            // last has a watch that has not delivered yet, which a
                                        // clFinish shares
  std::vector<std::pair<cl_event, FinishWaiter>> finish_behind;  // clFinish calls that wait for
                                        // that watch (the event, not retained: the watch holds it)
  UnreportedEvents unreported;          // its commands reported only when asked
  bool untracked = false;               // commands without an event came after last (clFinish
                                        // then enqueues a marker)
  cl_event barrier = nullptr;           // an out-of-order queue's latest barrier (print_gate.h)
  QueueFailures failures;               // what its next commands run behind (event_failures.h)
  std::unique_ptr<EventWaiter> waiter;  // for backends whose event callbacks come late
  std::unique_ptr<StagingPool> staging; // page-locked memory for its reads (GPUs; --page-locked-reads)
  QueueState() = default;
  QueueState(const QueueState &) = delete;
  ~QueueState() {
    if (last) clReleaseEvent(last);
    if (barrier) clReleaseEvent(barrier);
  }
};

struct Object {
  ObjectKind kind;
  void *handle;
  std::unique_ptr<QueueState> queue;    // queues only
  cl_context context = nullptr;         // the context a queue or program belongs to
  cl_mem parent = nullptr;              // a sub-buffer's parent (add_sub_buffer)
  uint64_t bytes = 0;                   // device memory a buffer or image counts against the limit
  bool may_print = false;               // programs and their kernels: may call printf (print_gate.h)
  std::shared_ptr<HeaderFolder> headers = nullptr;  // programs: what their source includes by absolute name
};

class ObjectTable {
 public:
  ObjectTable() = default;
  ObjectTable(const ObjectTable &) = delete;
  ~ObjectTable() { release_all(); }

  // Takes over one reference to handle. Fails if the id is taken or reserved for devices.
  void add(uint64_t id, ObjectKind kind, void *handle, cl_context context = nullptr);
  // add() for a sub-buffer of parent; released on the backend in the order sub_buffer_order.h keeps,
  // once order_sub_buffers was called (before, at once).
  void add_sub_buffer(uint64_t id, cl_mem handle, cl_mem parent, cl_context context);
  void order_sub_buffers(SubBufferOrder::Post post) { sub_buffer_order_ = SubBufferOrder::make(std::move(post)); }
  // Null before order_sub_buffers.
  const std::shared_ptr<SubBufferOrder> &sub_buffer_order() const { return sub_buffer_order_; }
  void add_device(uint64_t id, cl_device_id device);
  Object &get(uint64_t id, ObjectKind kind);
  template <typename Handle>
  Handle handle(uint64_t id, ObjectKind kind) {
    return static_cast<Handle>(get(id, kind).handle);
  }
  bool contains(uint64_t id) const { return objects_.count(id) != 0; }
  // Whether add() would take id: a client's id not in use.
  bool can_add(uint64_t id) const;
  // Device memory: a buffer or image of bytes is charged to the session until released; fails with
  // CL_MEM_OBJECT_ALLOCATION_FAILURE past the limit (0: no limit).
  void set_memory_limit(uint64_t limit) { memory_limit_ = limit; }
  void charge(uint64_t bytes);
  void attach_bytes(uint64_t id, uint64_t bytes);
  // The client's id for a context this session created, or 0.
  uint64_t context_id(cl_context context) const;
  void release(uint64_t id);
  // Takes over a reference to a command's event that failed, held until the table goes. PoCL 3.1
  // frees a command failed by one of the events it waited for while the others still list it as
  // waiting: when one of them completes later, it walks into the freed event (SIGABRT in
  // clSetUserEventStatus, seen under tests/stress with a daemon killed). The failed command's
  // event must outlive its wait list, which fedcld does not know: it stays until the session ends.
  void keep_failed_event(cl_event event) { failed_events_.push_back(event); }
  // Drops a reference to the event of a command that ended with status; one that failed in the
  // backend is kept instead (keep_failed_event).
  void release_ended_event(cl_event event, cl_int status) {
    if (status < 0) keep_failed_event(event);
    else clReleaseEvent(event);
  }
  void release_all();
  // Forgets every handle without releasing it: the process ends next, and with it what the backend
  // holds for them (a GPU driver frees a process's contexts at its exit at once, where releasing
  // them one by one can take minutes).
  void abandon_all();
  size_t size() const { return objects_.size(); }
  uint64_t memory_used() const { return memory_used_; }
  // Where the totals are shown as they change (a session worker's board, for `fedcl status`).
  void publish_to(std::atomic<uint64_t> *memory, std::atomic<uint64_t> *objects) {
    shown_memory_ = memory;
    shown_objects_ = objects;
    publish();
  }

 private:
  void publish() {
    if (shown_memory_) shown_memory_->store(memory_used_, std::memory_order_relaxed);
    if (shown_objects_) shown_objects_->store(objects_.size(), std::memory_order_relaxed);
  }

  // The backend's release of the object; a sub-buffer's in the order sub_buffer_order.h keeps.
  void release_object(Object &object);

  std::unordered_map<uint64_t, Object> objects_;
  std::shared_ptr<SubBufferOrder> sub_buffer_order_;
  std::vector<cl_event> failed_events_;  // keep_failed_event
  uint64_t memory_limit_ = 0;
  uint64_t memory_used_ = 0;
  std::atomic<uint64_t> *shown_memory_ = nullptr, *shown_objects_ = nullptr;
};

const char *object_kind_name(ObjectKind kind);

}  // namespace fedcld
