#include "command.h"

#include <algorithm>

#include "coherence.h"
#include "event_reports.h"
#include "runtime.h"

namespace fedcl {

_cl_event *event_create(cl_context context, cl_command_queue queue, cl_command_type type, cl_int status) {
  auto *event = new _cl_event();
  event->context = context;
  event->queue = queue;
  event->connection = queue ? queue->connection : nullptr;
  event->command_type = type;
  event->status = status;
  hold(context);
  if (queue) hold(queue);
  return event;
}

_cl_event *own_event(cl_context context, Connection *connection, cl_command_type type) {
  _cl_event *event = event_create(context, nullptr, type, CL_QUEUED);
  event->connection = connection;
  Runtime::get().track(event);
  return event;
}

cl_mem_flags backend_flags(cl_mem mem) {
  cl_mem_flags kept = ~cl_mem_flags(CL_MEM_USE_HOST_PTR | CL_MEM_COPY_HOST_PTR | CL_MEM_HOST_WRITE_ONLY |
                                    CL_MEM_HOST_READ_ONLY | CL_MEM_HOST_NO_ACCESS);
  if (mem->parent) kept &= ~cl_mem_flags(CL_MEM_ALLOC_HOST_PTR);
  return mem->flags & kept;
}

cl_int check_wait_list(cl_context context, cl_uint num_events, const cl_event *wait_list) {
  if ((num_events == 0) != (wait_list == nullptr)) return CL_INVALID_EVENT_WAIT_LIST;
  for (cl_uint i = 0; i < num_events; i++) {
    _cl_event *event = as<_cl_event>(wait_list[i]);
    if (!event) return CL_INVALID_EVENT_WAIT_LIST;
    if (context && event->context != context) return CL_INVALID_CONTEXT;
  }
  return CL_SUCCESS;
}

bool wait_list_failed(cl_uint num_events, const cl_event *wait_list) {
  for (cl_uint i = 0; i < num_events; i++) {
    std::lock_guard<std::mutex> lock(wait_list[i]->mutex);
    if (wait_list[i]->status < 0) return true;
  }
  return false;
}

cl_int Command::begin_streamed(bool blocking, cl_mem mem, const MemSpan &span, cl_uint num_events,
                               const cl_event *wait_list, cl_event *event_out) {
  cl_int err = begin(num_events, wait_list, event_out, true);
  if (err == CL_SUCCESS && blocking && wait_list_failed(num_events, wait_list))
    err = CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST;
  if (err == CL_SUCCESS) err = mem_prepare(mem, *this, span);
  return err;
}

Command::~Command() {
  // The command's own reference: a command that failed before it was sent leaves no event behind,
  // and one the application did not ask for lives on only while the runtime needs it.
  if (event_) release(event_);
  for (_cl_event *event : held_) release(event);
  for (Crossing &crossing : crossings_) {
    if (crossing.carries) {
      // Never sent (the command failed before its fill): its bytes will not come, and what counted
      // on them learns it from its events (check_arrival).
      if (!crossed_) {
        Runtime::get().complete_tracked(crossing.range.events.sent, CL_OUT_OF_RESOURCES);
        Runtime::get().complete_tracked(crossing.range.events.arrived, CL_OUT_OF_RESOURCES);
      }
      release(crossing.range.events.sent);
      release(crossing.range.events.arrived);
    }
    unhold(crossing.event);
  }
}

void Command::wait_also(_cl_event *event) {
  keep(event);
  wait_ids_.push_back(event->id);
}

void Command::keep(_cl_event *event) {
  retain(event);
  held_.push_back(event);
}

cl_int Command::begin(cl_uint num_events, const cl_event *wait_list, cl_event *event_out, bool internal) {
  cl_int err = check_wait_list(queue_->context, num_events, wait_list);
  if (err != CL_SUCCESS) return err;
  Connection *here = queue_->connection;
  if (!here->alive()) return CL_DEVICE_NOT_AVAILABLE;
  for (cl_uint i = 0; i < num_events; i++) wait_for(static_cast<_cl_event *>(wait_list[i]));
  // An in-order queue's commands that end in this process (file saves) come before this one too.
  if (queue_->in_order()) {
    for (_cl_event *local : queue_->pending_local()) {
      wait_for(local);
      unhold(local);
    }
  }
  if (event_out || internal || sync_mode()) event_ = event_create(queue_->context, queue_, type_, CL_QUEUED);
  event_out_ = event_out;
  return CL_SUCCESS;
}

void Command::wait_for(_cl_event *event) {
  if (event->connection == queue_->connection) {
    wait_ids_.push_back(event->id);
    return;
  }
  // An event of another daemon, or a user event: this daemon waits on a stand-in user event, made
  // when the command is filled in (cross), so that mem_prepare may have a range ride with its signal.
  // Held, not retained: a file save's event may have no application reference left.
  hold(event);
  crossings_.emplace_back();
  crossings_.back().event = event;
}

_cl_event *Command::carrier_from(Connection *source) const {
  for (const Crossing &crossing : crossings_)
    if (crossing.event->connection == source && !crossing.carries) return crossing.event;
  return nullptr;
}

void Command::carry(_cl_event *carrier, const CarriedRange &range) {
  for (Crossing &crossing : crossings_) {
    if (crossing.event != carrier) continue;
    crossing.carries = true;
    crossing.range = range;
    retain(range.events.sent);
    retain(range.events.arrived);
    return;
  }
}

void Command::cross() {
  if (crossed_) return;
  crossed_ = true;
  Connection *here = queue_->connection;
  std::vector<Connection *> to_flush;  // after the events' locks are released
  auto flush_later = [&](Connection *connection) {
    if (connection && std::find(to_flush.begin(), to_flush.end(), connection) == to_flush.end())
      to_flush.push_back(connection);
  };
  for (Crossing &crossing : crossings_) {
    _cl_event *event = crossing.event;
    // The other daemon sets the stand-in over their peer link the moment its event completes; where
    // there is no link (and for user events, which live here) the runtime sets it when the real one
    // completes, and it relays a failure in any case: its daemon reports it. Recorded and queued
    // under the event's lock (so that its completion cannot slip between); sent after it.
    if (queue_completion_ask(event)) flush_later(event->connection);
    bool rode = false;
    {
      std::lock_guard<std::mutex> lock(event->mutex);
      // An event over already needs no stand-in, unless a range rides with its signal: its daemon
      // then signals at once, with the bytes.
      bool over = event->status == CL_COMPLETE;
      if (!over || crossing.carries) {
        // The command it waits for starts now, not at the flush timer, whether its daemon signals
        // this one over their link or this process relays the completion.
        flush_later(event->connection);
        if (!(event->proxies & bit(here))) {
          event->proxies |= bit(here);
          bool signalled = event->connection && Runtime::get().peer_linked(event->connection, here);
          rode = signalled && crossing.carries;
          RequestMessage request;
          auto create = request.root.initCreateUserEvent();
          create.setId(event->id);
          create.setContext(queue_->context->id);
          if (signalled) create.setSignalledBy(event->connection->hello().getInstance());
          if (rode) fill_signal_data(create.initData(), crossing.range.to, crossing.range.events.arrived, event->id,
                                     crossing.range.size);
          here->queue(request);  // leaves with this command
          if (signalled) {
            event->signalled |= bit(here);
            RequestMessage signal;
            auto peer = signal.root.initSignalPeer();
            peer.setEvent(event->id);
            fill_peer_ref(peer.initPeer(), *here);
            if (rode) fill_signal_data(peer.initData(), crossing.range.from, crossing.range.events.sent, event->id,
                                       crossing.range.size);
            event->connection->queue(signal);
          }
          if (event->status < 0) queue_event_status(here, event->id, event->status);
        }
        if (!over) wait_ids_.push_back(event->id);
      }
    }
    if (crossing.carries && !rode) {
      // The stand-in was another command's (or there is no peer link): the range goes as a transfer
      // of its own, after the event, with the events mem_prepare counted on.
      CarriedRange &range = crossing.range;
      range.from.wait_for.push_back(event->id);
      queue_peer_transfer_of(range.events, range.from, range.to, range.size);
      flush_later(range.to.connection);  // the receive first: the bytes then land in place
      flush_later(range.from.connection);
    }
  }
  for (Connection *connection : to_flush) connection->flush();
}

void queue_event_status(Connection *connection, uint64_t event_id, cl_int status) {
  RequestMessage request;
  auto set = request.root.initSetUserEventStatus();
  set.setEvent(event_id);
  set.setStatus(status);
  connection->queue(request);
}

void Command::leave_unwatched() {
  if (!event_ || sync_mode()) return;
  unwatched_ = event_out_ ? !(queue_->properties & CL_QUEUE_PROFILING_ENABLE) : queue_->in_order();
}

void Command::fill(wire::Command::Builder command) {
  cross();
  command.setQueue(queue_->id);
  command.setEvent(event_ ? event_->id : 0);
  command.setUnwatched(unwatched_);
  if (!wait_ids_.empty()) {
    auto list = command.initWaitFor(wait_ids_.size());
    for (size_t i = 0; i < wait_ids_.size(); i++) list.set(i, wait_ids_[i]);
  }
}

cl_int Command::send(RequestMessage &request, const void *payload, uint64_t payload_bytes) {
  // Tracked before the request leaves, so that its completion cannot arrive first. The
  // application's unwatched event too: the daemon reports it when asked, or when the command fails
  // to enqueue there.
  bool tracked = event_ && (!unwatched_ || event_out_);
  if (tracked) Runtime::get().track(event_);
  cl_int err = queue_->connection->post(request, payload, payload_bytes);
  // A failure the call returns (a lost daemon; any failure in FEDCL_SYNC mode) comes in no notice.
  if (err != CL_SUCCESS && tracked) Runtime::get().complete_tracked(event_, err < 0 ? err : CL_OUT_OF_RESOURCES);
  if (err != CL_SUCCESS && !sync_mode()) return err;
  if (event_out_) {
    retain(event_);  // the application's reference
    if (unwatched_) note_unreported(event_);
    *event_out_ = event_;
  }
  return err;
}

std::shared_ptr<PendingReply> Command::send_call(RequestMessage &request, void *read_dest, uint64_t read_size,
                                                 std::function<void()> landed) {
  if (event_) Runtime::get().track(event_);
  auto pending = queue_->connection->send_call(request, nullptr, 0, read_dest, read_size, std::move(landed));
  if (event_out_) {
    retain(event_);  // the application's reference
    *event_out_ = event_;
  }
  return pending;
}

cl_int Command::wait() {
  if (!event_) return CL_SUCCESS;
  return wait_complete(event_) < 0 ? CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST : CL_SUCCESS;
}

}  // namespace fedcl
