#include "collective.h"

#include <memory>

#include "coherence.h"
#include "command.h"
#include "runtime.h"

namespace fedcl {

namespace {

using Combine = wire::Request::Combine;

// Where a step's side lives on its daemon: the memory object and the byte offset in it.
struct DaemonPlace {
  uint64_t mem;
  size_t offset;
};

class CollectiveRun {
 public:
  CollectiveRun(const Collective &collective, CollectivePlan plan)
      : c_(collective), plan_(std::move(plan)), context_(collective.members[0].queue->context),
        n_(collective.members.size()), starts_(n_), scratch_(n_, 0), sides_(plan_.steps.size()) {}

  ~CollectiveRun() {
    for (Sides &sides : sides_) {
      if (sides.from) release(sides.from);
      if (sides.to && sides.to != sides.from) release(sides.to);
    }
  }

  cl_int check_links() {
    for (const CollectiveStep &step : plan_.steps) {
      Connection *a = connection(step.from.participant), *b = connection(step.to.participant);
      if (a == b || Runtime::get().peer_linked(a, b)) continue;
      Runtime::get().notify(context_, "fedcl: a collective needs a peer link between daemons " + a->endpoint() + " and " +
                                          b->endpoint() + ", and they have none");
      return CL_INVALID_OPERATION;
    }
    return CL_SUCCESS;
  }

  // Each participant's opening marker, once every one of them is checked.
  cl_int start(cl_uint num_events, const cl_event *wait_list) {
    for (size_t p = 0; p < n_; p++) {
      starts_[p] = std::make_unique<Command>(c_.members[p].queue, c_.command_type);
      cl_int err = starts_[p]->begin(num_events, wait_list, nullptr, true);
      if (err != CL_SUCCESS) return err;
    }
    for (size_t p = 0; p < n_; p++) {
      const CollectiveMember &m = c_.members[p];
      size_t source = collective_source_bytes(c_.shape, p), destination = collective_destination_bytes(c_.shape, p);
      cl_int err = CL_SUCCESS;
      if (source) err = mem_prepare(m.source, *starts_[p], MemSpan::read(m.source_offset, source));
      // A destination the collective reads too (a broadcast's root, an in-place reduction) is current.
      bool read_too = (c_.shape.kind == CollectiveKind::broadcast && p == c_.shape.root) || aliased(p);
      if (err == CL_SUCCESS && destination)
        err = mem_prepare(m.destination, *starts_[p],
                          read_too ? MemSpan::read(m.destination_offset, destination)
                                   : MemSpan::written(m.destination_offset, destination));
      if (err != CL_SUCCESS) return err;
    }
    for (size_t p = 0; p < n_; p++) {
      RequestMessage marker;
      starts_[p]->fill(marker.root.initMarker());
      cl_int err = starts_[p]->send(marker);
      if (err != CL_SUCCESS) return err;
    }
    return CL_SUCCESS;
  }

  void queue_steps() {
    for (size_t p = 0; p < n_; p++)
      if (plan_.uses_scratch[p]) create_scratch(p);
    for (size_t i = 0; i < plan_.steps.size(); i++) {
      const CollectiveStep &step = plan_.steps[i];
      if (step.local()) queue_copy(i, step);
      else queue_transfer(i, step);
    }
  }

  // Each participant's closing marker; its event is the participant's.
  cl_int finish(cl_event *events) {
    cl_int first_error = CL_SUCCESS;
    for (size_t p = 0; p < n_; p++) {
      std::vector<cl_event> after{starts_[p]->event()};
      for (size_t i = 0; i < plan_.steps.size(); i++) {
        const CollectiveStep &step = plan_.steps[i];
        if (step.from.participant == p && sides_[i].from) after.push_back(sides_[i].from);
        if (step.to.participant == p && sides_[i].to && sides_[i].to != sides_[i].from) after.push_back(sides_[i].to);
      }
      const CollectiveMember &m = c_.members[p];
      Command end(m.queue, c_.command_type);
      cl_int err = end.begin(cl_uint(after.size()), after.data(), events ? &events[p] : nullptr, true);
      if (err == CL_SUCCESS) {
        RequestMessage marker;
        end.fill(marker.root.initMarker());
        err = end.send(marker);
      }
      // A broadcast's root only reads its buffer: its copies elsewhere stay current.
      bool written = !(c_.shape.kind == CollectiveKind::broadcast && p == c_.shape.root);
      size_t destination = collective_destination_bytes(c_.shape, p);
      if (err == CL_SUCCESS && destination && written)
        mem_written(m.destination, m.queue->connection, end.event(), MemSpan::written(m.destination_offset, destination));
      if (err != CL_SUCCESS && first_error == CL_SUCCESS) first_error = err;
    }
    for (size_t p = 0; p < n_; p++)
      if (scratch_[p]) post_release(connection(p), scratch_[p]);
    for (Connection *connection : involved()) connection->flush();
    return first_error;
  }

 private:
  struct Sides {
    _cl_event *from = nullptr, *to = nullptr;  // a copy's sides are one event; an in-place copy has none
  };

  Connection *connection(size_t p) const { return c_.members[p].queue->connection; }

  // The participant's source and destination are the same bytes (an in-place reduction), through
  // the same object or a sub-buffer and its parent.
  bool aliased(size_t p) const {
    const CollectiveMember &m = c_.members[p];
    auto root = [](cl_mem mem) { return mem->parent ? mem->parent : mem; };
    auto origin = [](cl_mem mem) { return mem->parent ? mem->origin : 0; };
    return m.source && m.destination && root(m.source) == root(m.destination) &&
           origin(m.source) + m.source_offset == origin(m.destination) + m.destination_offset;
  }

  std::vector<Connection *> involved() const {
    std::vector<Connection *> all;
    for (size_t p = 0; p < n_; p++)
      if (std::find(all.begin(), all.end(), connection(p)) == all.end()) all.push_back(connection(p));
    return all;
  }

  uint64_t transfer_queue(size_t p) { return context_->transfer_queue(*context_->part(connection(p))); }

  DaemonPlace place(const Place &at) const {
    const CollectiveMember &m = c_.members[at.participant];
    switch (at.region) {
      case Region::source: return {m.source->id, m.source_offset + at.offset};
      case Region::destination: return {m.destination->id, m.destination_offset + at.offset};
      case Region::scratch: break;
    }
    return {scratch_[at.participant], at.offset};
  }

  // fedcl's scratch buffer on the participant's daemon, for partial results that the application's
  // buffers must not hold. Released once the steps are queued: the daemon keeps it while they run.
  void create_scratch(size_t p) {
    scratch_[p] = new_object_id();
    RequestMessage request;
    auto create = request.root.initCreateBuffer();
    create.setId(scratch_[p]);
    create.setContext(context_->id);
    create.setFlags(CL_MEM_READ_WRITE);
    create.setSize(plan_.scratch_bytes);
    connection(p)->queue(request);
  }

  // What a side on participant p waits for: its opening marker and the earlier steps' sides.
  std::vector<uint64_t> wait_list(size_t p, std::initializer_list<const std::vector<StepSide> *> afters) const {
    std::vector<uint64_t> ids{starts_[p]->event()->id};
    for (const auto *after : afters)
      for (const StepSide &side : *after) {
        _cl_event *earlier = side.to ? sides_[side.step].to : sides_[side.step].from;
        if (earlier && std::find(ids.begin(), ids.end(), earlier->id) == ids.end()) ids.push_back(earlier->id);
      }
    return ids;
  }

  void queue_copy(size_t i, const CollectiveStep &step) {
    size_t p = step.from.participant;
    DaemonPlace from = place(step.from), to = place(step.to);
    bool in_place = step.from.region == Region::source && step.to.region == Region::destination && aliased(p) &&
                    step.from.offset == step.to.offset;
    if (in_place) return;  // nothing to copy
    _cl_event *event = own_event(context_, connection(p), c_.command_type);
    sides_[i] = {event, event};
    RequestMessage request;
    auto copy = request.root.initCopyBuffer();
    copy.getCommand().setQueue(transfer_queue(p));
    copy.getCommand().setEvent(event->id);
    set_wait_list(copy.getCommand(), wait_list(p, {&step.from_after, &step.to_after}));
    copy.setSrc(from.mem);
    copy.setDst(to.mem);
    copy.setSrcOffset(from.offset);
    copy.setDstOffset(to.offset);
    copy.setSize(step.bytes);
    connection(p)->queue(request);
  }

  void queue_transfer(size_t i, const CollectiveStep &step) {
    size_t a = step.from.participant, b = step.to.participant;
    DaemonPlace from = place(step.from), to = place(step.to);
    PeerTransferEnd sender{connection(a), transfer_queue(a), wait_list(a, {&step.from_after}), from.mem, from.offset};
    PeerTransferEnd receiver{connection(b), transfer_queue(b), wait_list(b, {&step.to_after}), to.mem, to.offset};
    PeerTransferEvents events = queue_peer_transfer(context_, c_.command_type, sender, receiver, step.bytes,
                                                    step.combine ? c_.op : Combine::NONE, c_.element_type);
    sides_[i] = {events.sent, events.arrived};
  }

  const Collective &c_;
  CollectivePlan plan_;
  cl_context context_;
  size_t n_;
  std::vector<std::unique_ptr<Command>> starts_;
  std::vector<uint64_t> scratch_;
  std::vector<Sides> sides_;
};

}  // namespace

cl_int enqueue_collective(const Collective &collective, cl_uint num_events, const cl_event *wait_list,
                          cl_event *events) {
  CollectiveRun run(collective, plan_collective(collective.shape));
  cl_int err = run.check_links();
  if (err == CL_SUCCESS) err = run.start(num_events, wait_list);
  if (err != CL_SUCCESS) return err;
  run.queue_steps();
  return run.finish(events);
}

}  // namespace fedcl
