// What every enqueued command shares: the wait list, the event, and the buffers' coherence.
#pragma once

#include "handles.h"
#include "mem_span.h"

namespace fedcl {

// One end of a transfer between two daemons over their peer link: the daemon, the queue and wait
// list of its command there, and where in which buffer the bytes are read or written.
struct PeerTransferEnd {
  Connection *connection;
  uint64_t queue;
  std::vector<uint64_t> wait_for;
  uint64_t mem;
  uint64_t offset;
};

// The commands of one such transfer, each with an event of fedcl's own (own_event).
struct PeerTransferEvents {
  _cl_event *sent, *arrived;
};

// A range of a buffer that travels with the signal of an event a command waits for (SignalPeer.data,
// coherence.h): read at `from` after the event, written at `to` behind its stand-in.
struct CarriedRange {
  PeerTransferEnd from, to;  // wait lists besides the event's own
  uint64_t size;
  PeerTransferEvents events;  // the read there and the write here
};

// A command being enqueued on queue. begin() checks the wait list and creates the event; the
// caller fills in its own request, then send()s it.
class Command {
 public:
  Command(cl_command_queue queue, cl_command_type type) : queue_(queue), type_(type) {}
  ~Command();

  // Checks and translates the wait list; creates the event when the application asks for one
  // (or when internal is set). Returns CL_SUCCESS or the error the specification names.
  cl_int begin(cl_uint num_events, const cl_event *wait_list, cl_event *event_out, bool internal = false);
  // The start of a command whose bytes travel outside its request (streamed reads, file commands):
  // begun with its own event, a blocking one refused behind a failed wait list, span of mem made ready
  // on the queue's daemon.
  cl_int begin_streamed(bool blocking, cl_mem mem, const MemSpan &span, cl_uint num_events, const cl_event *wait_list,
                        cl_event *event_out);
  // The command's event is left unwatched: the daemon keeps it for later wait lists and reports it
  // only when asked. The application's event then completes at its queue's clFinish, unless it is
  // waited for or asked about first (event_reports.h); not on a profiling queue (the times come
  // with a report). An internal event on an in-order queue (the buffers a kernel of a multi-daemon
  // context wrote) never completes in this process: coherence.cpp drops it once a later writer on
  // its queue covers it. For commands that do not block; not under FEDCL_SYNC.
  void leave_unwatched();
  // Fills the wire Command with the queue, the event and the wait list. The stand-ins of the wait
  // list's events of other daemons (and the ranges they carry) are queued first, and their daemons
  // flushed.
  void fill(wire::Command::Builder command);
  // For mem_prepare: the first event of the wait list that source's daemon will signal to this
  // command's, whose signal may still carry a range (carry); null if there is none.
  _cl_event *carrier_from(Connection *source) const;
  // range rides with carrier's signal: one message from its daemon brings the event and the bytes.
  // Where the signal cannot take it (another command made carrier's stand-in here first), fill sends
  // it as a transfer of its own instead, with the same events. Holds both events until then.
  void carry(_cl_event *carrier, const CarriedRange &range);
  // Posts request (with its payload) and hands the event to the application.
  cl_int send(RequestMessage &request, const void *payload = nullptr, uint64_t payload_bytes = 0);
  // For commands that await a reply: registers the reply, then sends. landed: see PendingReply.
  std::shared_ptr<PendingReply> send_call(RequestMessage &request, void *read_dest, uint64_t read_size,
                                          std::function<void()> landed = nullptr);

  _cl_event *event() const { return event_; }
  cl_command_queue queue() const { return queue_; }
  Connection *connection() const { return queue_->connection; }
  // One more event (of the queue's daemon) to wait for: a copy of a buffer on its way there. The
  // command holds it until it is sent: the daemon must still know it then.
  void wait_also(_cl_event *event);
  // Holds event until the command is sent, for a request fill sends that names it (a carried range's
  // wait list).
  void keep(_cl_event *event);
  // Waits for the command's event; for blocking commands.
  cl_int wait();

 private:
  // Adds event to the wait list: as itself on the queue's daemon, else as a stand-in there (fill).
  void wait_for(_cl_event *event);
  // fill's: the stand-ins of the events of other daemons.
  void cross();

  // An event of another daemon (or a user event, or a file save's) of the wait list, held, with the
  // range its signal carries, if any.
  struct Crossing {
    _cl_event *event = nullptr;
    bool carries = false;
    CarriedRange range;
  };

  cl_command_queue queue_;
  cl_command_type type_;
  std::vector<uint64_t> wait_ids_;
  std::vector<_cl_event *> held_;  // wait_also's events
  std::vector<Crossing> crossings_;
  bool crossed_ = false;
  _cl_event *event_ = nullptr;
  cl_event *event_out_ = nullptr;
  bool unwatched_ = false;
};

// Validates a wait list without enqueueing anything (clWaitForEvents and friends).
cl_int check_wait_list(cl_context context, cl_uint num_events, const cl_event *wait_list);

// Whether an event of a (valid) wait list has already failed: a blocking call then returns
// CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST instead of waiting for a command that cannot run.
bool wait_list_failed(cl_uint num_events, const cl_event *wait_list);

// The flags a memory object is created with on a daemon. Host pointers stay in this process (initial
// contents travel as payload; objects made from another inherit them there), and host-access flags
// are enforced here alone, so that fedcl may read and write any object itself: the region a write
// map shows, copies between daemons.
cl_mem_flags backend_flags(cl_mem mem);

// Sets the status of event_id, a user event or a stand-in, on connection's daemon: queued
// (Connection::queue), so that it may be called under an event's lock; the caller flushes after.
void queue_event_status(Connection *connection, uint64_t event_id, cl_int status);

// Creates a new event object for a command of queue (or a user event when queue is null).
_cl_event *event_create(cl_context context, cl_command_queue queue, cl_command_type type, cl_int status);

// An event of fedcl's own, tracked, for a command it sends to connection's daemon on a queue of its
// own there (fedcl's transfer queue): copies between daemons, the steps of a collective.
_cl_event *own_event(cl_context context, Connection *connection, cl_command_type type);

}  // namespace fedcl
