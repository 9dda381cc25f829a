#include "coherence.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "image.h"
#include "runtime.h"
#include "same_node.h"

namespace fedcl {

namespace {
// The default of signal_data_max(), by measurement (design-decisions, "Small data travels with its event").
constexpr uint64_t kSignalDataMaxBytes = 131072;
}  // namespace

void fill_peer_ref(wire::PeerRef::Builder ref, Connection &connection) {
  auto hello = connection.hello();
  ref.setInstance(hello.getInstance());
  ref.setAddress(hello.getPeerAddress().size() ? hello.getPeerAddress() : kj::StringPtr(connection.endpoint().c_str()));
  ref.setSession(hello.getSessionToken());
  ref.setAddressTag(hello.getPeerAddressTag());
  // A daemon of the other's host dials it at its local socket (FEDCL_LOCAL=off: TCP between daemons too).
  if (local_mode() != LocalMode::off && hello.getLocalSocket().size()) {
    ref.setHost(hello.getHost());
    ref.setLocalSocket(hello.getLocalSocket());
    ref.setLocalSocketTag(hello.getLocalSocketTag());
  }
}

void set_wait_list(wire::Command::Builder command, const std::vector<uint64_t> &events) {
  auto wait = command.initWaitFor(events.size());
  for (size_t i = 0; i < events.size(); i++) wait.set(i, events[i]);
}

PeerTransferEvents queue_peer_transfer(cl_context context, cl_command_type type, const PeerTransferEnd &from,
                                       const PeerTransferEnd &to, uint64_t bytes, wire::Request::Combine combine,
                                       wire::Request::ElementType element) {
  PeerTransferEvents events{own_event(context, from.connection, type), own_event(context, to.connection, type)};
  queue_peer_transfer_of(events, from, to, bytes, combine, element);
  return events;
}

void queue_peer_transfer_of(const PeerTransferEvents &events, const PeerTransferEnd &from, const PeerTransferEnd &to,
                            uint64_t bytes, wire::Request::Combine combine, wire::Request::ElementType element) {
  if (from.connection != to.connection) {
    retain(events.arrived);
    std::lock_guard<std::mutex> lock(events.sent->mutex);
    events.sent->fails_too = events.arrived;
  }
  uint64_t transfer = new_object_id();
  // What both requests say of their end: its command, the buffer range and the transfer.
  auto fill_end = [&](auto request, const PeerTransferEnd &end, _cl_event *event) {
    auto command = request.getCommand();
    command.setQueue(end.queue);
    command.setEvent(event->id);
    set_wait_list(command, end.wait_for);
    set_peer_range(request, end.mem, end.offset, bytes, transfer);
  };

  RequestMessage receive;
  auto r = receive.root.initReceiveFromPeer();
  fill_end(r, to, events.arrived);
  r.setSender(from.connection->hello().getInstance());
  r.setCombine(combine);
  r.setElementType(element);
  to.connection->queue(receive);

  RequestMessage send;
  auto s = send.root.initSendToPeer();
  fill_end(s, from, events.sent);
  fill_peer_ref(s.initPeer(), *to.connection);
  from.connection->queue(send);
}

void fill_signal_data(wire::Request::SignalData::Builder data, const PeerTransferEnd &end, const _cl_event *event,
                      uint64_t signal_event, uint64_t size) {
  auto command = data.initCommand();
  command.setQueue(end.queue);
  command.setEvent(event->id);
  std::vector<uint64_t> after = end.wait_for;
  after.push_back(signal_event);
  set_wait_list(command, after);
  data.setMemObject(end.mem);
  data.setOffset(end.offset);
  data.setSize(size);
}

namespace {

cl_int status_of(cl_event event) {
  std::lock_guard<std::mutex> lock(event->mutex);
  return event->status;
}

bool pending(cl_event event) { return status_of(event) > CL_COMPLETE; }

// Everything below is called with root->mutex held.

// Creates mem (a buffer, sub-buffer or image) on connection's daemon; see mem_create_first.
cl_int mem_create(cl_mem mem, Connection *connection, const HostRegion *contents = nullptr,
                  bool backend_decides = false) {
  RequestMessage request;
  if (mem->is_image()) {
    auto create = request.root.initCreateImage();
    image_fill_create(create, mem);
    create.setInitialContents(contents != nullptr);
  } else if (mem->parent) {
    auto create = request.root.initCreateSubBuffer();
    create.setId(mem->id);
    create.setParent(mem->parent->id);
    create.setFlags(backend_flags(mem));
    create.setOrigin(mem->origin);
    create.setSize(mem->size);
  } else {
    auto create = request.root.initCreateBuffer();
    create.setId(mem->id);
    create.setContext(mem->context->id);
    create.setFlags(backend_flags(mem));
    create.setSize(mem->size);
    create.setInitialContents(contents != nullptr);
  }
  std::vector<uint8_t> staging;
  const void *payload = nullptr;
  size_t bytes = 0;
  if (contents) {
    bytes = contents->packed_size();
    payload = contents->base;
    if (!contents->packed()) {
      staging.resize(bytes);
      contents->pack(staging.data());
      payload = staging.data();
    }
  }
  if (!backend_decides) return connection->post(request, payload, bytes);
  return connection->call(request, payload, bytes)->status;
}

// What a transfer of the whole of root moves.
size_t whole_bytes(cl_mem root) {
  if (!root->is_image()) return root->size;
  auto region = image_full_region(root);
  return root->element_size * region[0] * region[1] * region[2];
}

// The bytes of root that span (of mem, a part of root) covers, as [begin, end). An image, or
// anything over an image or wrapping a buffer as an image, is whole: images move whole.
struct RootRange {
  size_t begin, end;
  bool overwrites;
};
RootRange root_range(cl_mem root, cl_mem mem, const MemSpan &span) {
  if (root->is_image() || mem->is_image()) {
    bool whole = span.overwrites && whole_bytes(mem) == whole_bytes(root);
    return {0, root->validity.size(), whole};
  }
  size_t offset = std::min(span.offset, mem->size);
  size_t size = std::min(span.size, mem->size - offset);
  return {mem->origin + offset, mem->origin + offset + size, span.overwrites};
}

// The events after which connection's copy of root's bytes [begin, end) is current: the commands
// that may have written them there and have not completed, and the copy on its way there, if any.
std::vector<_cl_event *> pending_writes(cl_mem root, Connection *connection, size_t begin, size_t end) {
  std::vector<_cl_event *> events;
  auto writers = root->writers.find(connection->index());
  if (writers != root->writers.end())
    for (const _cl_mem::Writer &writer : writers->second)
      if (writer.begin < end && begin < writer.end && pending(writer.event)) events.push_back(writer.event);
  auto it = root->arrivals.find(connection->index());
  if (it != root->arrivals.end() && pending(it->second)) events.push_back(it->second);
  return events;
}

std::vector<uint64_t> current_after(cl_mem root, Connection *connection, size_t begin, size_t end) {
  std::vector<uint64_t> ids;
  for (_cl_event *event : pending_writes(root, connection, begin, end)) ids.push_back(event->id);
  return ids;
}

// Creates mem (of root) on here's daemon where it is not yet. A creation that fails there fails the
// command that follows it on the same daemon. Under root's lock.
void place(cl_mem root, cl_mem mem, Connection *here) {
  if (!(root->present & bit(here))) {
    mem_create(root, here);
    root->present |= bit(here);
  }
  if (mem != root && !(mem->present & bit(here))) {
    mem_create(mem, here);
    mem->present |= bit(here);
  }
}

// Adds the last transfer of root at connection's daemon to events, while it runs: transfers of one
// object there keep their order; transfers of different objects do not wait for each other.
void after_transfer_tail(cl_mem root, Connection *connection, std::vector<uint64_t> *events) {
  auto it = root->transfer_tails.find(connection->index());
  if (it != root->transfer_tails.end() && pending(it->second)) events->push_back(it->second->id);
}

void set_transfer_tail(cl_mem root, Connection *connection, cl_event event) {
  retain(event);
  cl_event &tail = root->transfer_tails[connection->index()];
  if (tail) release(tail);
  tail = event;
}

// Has source send root's bytes [offset, offset + bytes) to target over their peer link, after
// what is current on source and the transfers of root already queued on either side; returns the
// receive's event there. Both requests are queued (root's lock is held): the caller flushes target,
// then source, once the lock is released.
_cl_event *migrate_direct(cl_mem root, ContextPart &source, ContextPart &target, size_t offset, size_t bytes) {
  cl_context context = root->context;
  PeerTransferEnd from{source.connection, context->transfer_queue(source),
                       current_after(root, source.connection, offset, offset + bytes), root->id, offset};
  after_transfer_tail(root, source.connection, &from.wait_for);
  PeerTransferEnd to{target.connection, context->transfer_queue(target), {}, root->id, offset};
  after_transfer_tail(root, target.connection, &to.wait_for);
  PeerTransferEvents events = queue_peer_transfer(context, CL_COMMAND_MIGRATE_MEM_OBJECTS, from, to, bytes);
  set_transfer_tail(root, target.connection, events.arrived);
  set_transfer_tail(root, source.connection, events.sent);
  release(events.sent);  // the event mirror holds it until the daemon reports
  return events.arrived;
}

// The most bytes that travel with an event's signal rather than as a transfer of their own
// (FEDCL_SIGNAL_DATA_MAX overrides it; 0: none do). design-decisions, "Small data travels with its
// event", says how it was chosen.
size_t signal_data_max() {
  static const size_t max = [] {
    uint64_t bytes = kSignalDataMaxBytes;
    if (const char *text = std::getenv("FEDCL_SIGNAL_DATA_MAX")) bytes = std::strtoull(text, nullptr, 10);
    return size_t(std::min<uint64_t>(bytes, wire::SIGNAL_DATA_MAX_BYTES));
  }();
  return max;
}

// Has root's bytes [offset, offset + bytes) ride to target with the signal of an event command
// waits for from source's daemon (Command::carry), where they are few: one message instead of a
// transfer's requests, chunks and the signal. They are read there after that event and whatever may
// still write them there: the command waits for both anyway. Returns the landing's event at target
// (the caller's reference), or null.
_cl_event *carry_with_signal(cl_mem root, ContextPart &source, ContextPart &target, size_t offset, size_t bytes,
                             Command &command) {
  if (root->is_image() || bytes == 0 || bytes > signal_data_max()) return nullptr;
  _cl_event *carrier = command.carrier_from(source.connection);
  if (!carrier) return nullptr;
  cl_context context = root->context;
  CarriedRange range{{source.connection, context->transfer_queue(source), {}, root->id, offset},
                     {target.connection, context->transfer_queue(target), {}, root->id, offset},
                     bytes,
                     {own_event(context, source.connection, CL_COMMAND_MIGRATE_MEM_OBJECTS),
                      own_event(context, target.connection, CL_COMMAND_MIGRATE_MEM_OBJECTS)}};
  // The requests that name these events leave with the command (fill): their daemons must still
  // know them then, though the writers may be let go of and set_transfer_tail lets go of the tails.
  auto after = [&](_cl_event *event, PeerTransferEnd &end) {
    command.keep(event);
    end.wait_for.push_back(event->id);
  };
  for (_cl_event *writer : pending_writes(root, source.connection, offset, offset + bytes)) after(writer, range.from);
  for (PeerTransferEnd *end : {&range.from, &range.to}) {
    auto tail = root->transfer_tails.find(end->connection->index());
    if (tail != root->transfer_tails.end() && pending(tail->second)) after(tail->second, *end);
  }
  set_transfer_tail(root, target.connection, range.events.arrived);
  set_transfer_tail(root, source.connection, range.events.sent);
  command.carry(carrier, range);
  release(range.events.sent);  // the event mirror holds it until the daemon reports
  return range.events.arrived;
}

// The request that reads (write false) or writes root's bytes [offset, offset + bytes) (an image:
// all of it), and the bytes that travel with it.
std::pair<wire::Command::Builder, size_t> range_transfer(wire::Request::Builder request, cl_mem root, size_t offset,
                                                          size_t bytes, bool write) {
  if (root->is_image()) return image_whole_transfer(request, root, write);
  return {buffer_transfer(root, offset, write)(request, HostRegion::contiguous(nullptr, bytes).whole()), bytes};
}

// Brings root's bytes [offset, offset + bytes) from source to target through this process: the
// fallback for daemons without a peer link. Called and returns with root's lock held (lock), but
// releases it for the two round trips, marking root `copying` meanwhile. Blocks until the copy
// has landed.
cl_int migrate_through_client(cl_mem root, std::unique_lock<std::mutex> &lock, ContextPart &source,
                              ContextPart &target, size_t offset, size_t bytes) {
  cl_context context = root->context;
  std::vector<uint64_t> after = current_after(root, source.connection, offset, offset + bytes), before;
  after_transfer_tail(root, source.connection, &after);
  after_transfer_tail(root, target.connection, &before);
  root->copying = true;
  lock.unlock();

  RequestMessage read;
  auto [r, staged] = range_transfer(read.root, root, offset, bytes, false);
  std::vector<uint8_t> staging(staged);
  r.setQueue(context->transfer_queue(source));
  set_wait_list(r, after);
  auto pending_read = source.connection->send_call(read, nullptr, 0, staging.data(), staging.size());
  cl_int err = source.connection->wait(*pending_read);
  if (err == CL_SUCCESS) {
    // The command about to use the buffer runs on another queue: let the copy land first, and make
    // sure it did.
    RequestMessage write;
    _cl_event *landed = own_event(context, target.connection, CL_COMMAND_MIGRATE_MEM_OBJECTS);
    auto command = range_transfer(write.root, root, offset, bytes, true).first;
    command.setQueue(context->transfer_queue(target));
    command.setEvent(landed->id);
    set_wait_list(command, before);
    err = target.connection->post(write, staging.data(), staging.size());
    if (err == CL_SUCCESS) {
      target.connection->flush();
      cl_int status = wait_complete(landed);
      if (status < 0) err = status;
    } else {
      Runtime::get().complete_tracked(landed, err);
    }
    release(landed);
  }

  lock.lock();
  root->copying = false;
  root->copied.notify_all();
  return err;
}

cl_int lost(cl_mem root, ConnectionMask valid) {
  std::string where;
  for (const auto &part : root->context->parts)
    if (valid & bit(part.connection)) where += (where.empty() ? "" : ", ") + part.connection->endpoint();
  std::string message = "fedcl: " + std::string(root->is_image() ? "image " : "buffer ") + std::to_string(root->id) +
                        " (" + std::to_string(root->size) + " bytes) is lost: its only current copy was on daemon " +
                        where + ", which is gone; commands that need its contents fail";
  std::fprintf(stderr, "%s\n", message.c_str());
  Runtime::get().notify(root->context, message);
  return CL_MEM_OBJECT_ALLOCATION_FAILURE;
}

// A command wrote on top of a copy that failed to arrive: what it built on is gone.
cl_int never_arrived(cl_mem root, Connection *here, cl_int status) {
  std::string message = "fedcl: " + std::string(root->is_image() ? "image " : "buffer ") + std::to_string(root->id) +
                        " (" + std::to_string(root->size) + " bytes) is lost: its contents never reached daemon " +
                        here->endpoint() + " (the copy failed with " + std::to_string(status) +
                        "), and what was written there since is built on nothing";
  std::fprintf(stderr, "%s\n", message.c_str());
  Runtime::get().notify(root->context, message);
  return CL_MEM_OBJECT_ALLOCATION_FAILURE;
}

}  // namespace

cl_int mem_create_first(cl_mem mem, Connection *connection, const HostRegion *contents, bool backend_decides) {
  cl_int err = mem_create(mem, connection, contents, backend_decides);
  if (err != CL_SUCCESS) return err;
  mem->present = bit(connection);
  mem->validity.reset(whole_bytes(mem), (contents || mem->context->parts.size() == 1) ? bit(connection) : 0);
  return CL_SUCCESS;
}

cl_int mem_create_with_parent(cl_mem mem, bool backend_decides) {
  cl_mem parent = mem->parent;
  std::lock_guard<std::mutex> lock(parent->mutex);
  for (auto &part : mem->context->parts) {
    if (!(parent->present & bit(part.connection))) continue;
    cl_int err = mem_create(mem, part.connection, nullptr, backend_decides);
    if (err != CL_SUCCESS) return err;
    mem->present |= bit(part.connection);
  }
  return CL_SUCCESS;
}

namespace {

// Where the bytes of one stale stretch come from.
struct Copy {
  size_t begin, end;
  ContextPart *source;
};

// A live daemon of holders to copy from, one with a peer link to here if any; null if none lives.
ContextPart *copy_source(cl_context context, ConnectionMask holders, Connection *here) {
  ContextPart *source = nullptr;
  for (auto &part : context->parts) {
    if (!(holders & bit(part.connection)) || !part.connection->alive()) continue;
    if (Runtime::get().peer_linked(part.connection, here)) return &part;
    if (!source) source = &part;
  }
  return source;
}

// The last copy sent to here, if any. One still on its way stays (the command waits for it, or
// for a later copy, which lands after it). A failed one leaves here stale wherever another daemon
// is current, and fails a command that needs what here alone holds (it may have been written on
// top of the missing bytes) unless the command replaces it.
cl_int check_arrival(cl_mem root, Connection *here, const RootRange &range) {
  auto it = root->arrivals.find(here->index());
  if (it == root->arrivals.end()) return CL_SUCCESS;
  cl_int arrival = status_of(it->second);
  if (arrival > CL_COMPLETE) return CL_SUCCESS;
  ConnectionMask bit_here = bit(here);
  if (arrival < 0 && !range.overwrites)
    for (const auto &segment : root->validity.segments(range.begin, range.end))
      if (segment.holders == bit_here) return never_arrived(root, here, arrival);
  if (arrival < 0) root->validity.drop_where_shared(bit_here);
  release(it->second);
  root->arrivals.erase(it);
  return CL_SUCCESS;
}

// The stretches of range that here lacks and another daemon holds, with their sources; adjacent
// stretches from one source are one copy. Fails when only a daemon that is gone holds one.
cl_int plan_copies(cl_mem root, Connection *here, const RootRange &range, std::vector<Copy> *copies) {
  ConnectionMask bit_here = bit(here);
  for (const auto &segment : root->validity.segments(range.begin, range.end)) {
    if (segment.holders & bit_here || segment.holders == 0) continue;  // current, or never written
    ContextPart *source = copy_source(root->context, segment.holders, here);
    if (!source) return lost(root, segment.holders);
    if (!copies->empty() && copies->back().end == segment.begin && copies->back().source == source)
      copies->back().end = segment.end;
    else
      copies->push_back({segment.begin, segment.end, source});
  }
  return CL_SUCCESS;
}

// mem_prepare's work, under root's lock (lock; the copy through this process releases it while
// it waits). Connections with queued requests go in *to_flush.
cl_int mem_make_current(cl_mem root, cl_mem mem, Connection *here, Command &command, const RootRange &range,
                        std::unique_lock<std::mutex> &lock, std::vector<Connection *> *to_flush) {
  place(root, mem, here);
  cl_int err = check_arrival(root, here, range);
  std::vector<Copy> copies;
  if (err == CL_SUCCESS && !range.overwrites) err = plan_copies(root, here, range, &copies);
  if (err != CL_SUCCESS) return err;
  ContextPart *target = root->context->part(here);
  bool raced = false;
  for (const Copy &copy : copies) {
    if (!target) break;
    if (Runtime::get().peer_linked(copy.source->connection, here)) {
      size_t bytes = copy.end - copy.begin;
      _cl_event *arrived = carry_with_signal(root, *copy.source, *target, copy.begin, bytes, command);
      bool carried = arrived != nullptr;  // then the command's fill sends and flushes it
      if (!carried) arrived = migrate_direct(root, *copy.source, *target, copy.begin, bytes);
      // Receives at one daemon keep their order (transfer tails): the last one stands for all,
      // and fails if an earlier one did.
      _cl_event *&slot = root->arrivals[here->index()];
      if (slot) release(slot);
      slot = arrived;  // takes over the reference
      if (carried) continue;
      // The receives first, then the senders: each receive is there before its first bytes.
      if (to_flush->empty()) to_flush->push_back(here);
      to_flush->push_back(copy.source->connection);
      continue;
    }
    uint64_t writes = root->writes;
    err = migrate_through_client(root, lock, *copy.source, *target, copy.begin, copy.end - copy.begin);
    if (err != CL_SUCCESS) return err;
    // A write elsewhere that nothing ordered with this command came meanwhile: its copy is the
    // current one, and this command uses what it found (the application's race, not ours).
    raced = root->writes != writes;
    if (raced) break;
  }
  // The command waits for the last copy to here (sent now or earlier) while it is on its way.
  auto arriving = root->arrivals.find(here->index());
  if (arriving != root->arrivals.end() && pending(arriving->second)) command.wait_also(arriving->second);
  if (!raced) root->validity.add(range.begin, range.end, bit(here));
  return CL_SUCCESS;
}

}  // namespace

cl_int mem_prepare(cl_mem mem, Command &command, const MemSpan &span) {
  Connection *here = command.connection();
  cl_mem root = mem->parent ? mem->parent : mem;
  std::vector<Connection *> to_flush;  // after the lock is released: never a socket under it
  cl_int err = CL_SUCCESS;
  {
    std::unique_lock<std::mutex> lock(root->mutex);
    if (root->context->parts.size() < 2) {  // one daemon: always current
      place(root, mem, here);
      return CL_SUCCESS;
    }
    root->copied.wait(lock, [&] { return !root->copying; });
    err = mem_make_current(root, mem, here, command, root_range(root, mem, span), lock, &to_flush);
  }
  for (Connection *connection : to_flush) connection->flush();
  return err;
}

void mem_place(cl_mem mem, Connection *connection) {
  cl_mem root = mem->parent ? mem->parent : mem;
  std::lock_guard<std::mutex> lock(root->mutex);
  place(root, mem, connection);
}

cl_int mem_migrate(cl_command_queue queue, cl_uint num_mems, const cl_mem *mems, cl_mem_migration_flags flags,
                   cl_uint num_events, const cl_event *wait_list, cl_event *event) {
  Command command(queue, CL_COMMAND_MIGRATE_MEM_OBJECTS);
  cl_int err = command.begin(num_events, wait_list, event);
  for (cl_uint i = 0; i < num_mems && err == CL_SUCCESS && !(flags & CL_MIGRATE_MEM_OBJECT_HOST); i++)
    err = mem_prepare(mems[i], command, MemSpan::whole(flags & CL_MIGRATE_MEM_OBJECT_CONTENT_UNDEFINED));
  if (err != CL_SUCCESS) return err;
  RequestMessage request;
  command.fill(request.root.initMarker());
  return command.send(request);
}

void mem_written(cl_mem mem, Connection *connection, cl_event event, const MemSpan &span) {
  cl_mem root = mem->parent ? mem->parent : mem;
  if (root->context->parts.size() < 2) return;  // one daemon: always current
  std::lock_guard<std::mutex> lock(root->mutex);
  root->writes++;
  RootRange range = root_range(root, mem, span);
  root->validity.assign(range.begin, range.end, bit(connection));
  // Copies on their way elsewhere stay: they may bring other bytes. The one the writer built on
  // still decides whether its result is worth anything (check_arrival).
  std::vector<_cl_mem::Writer> &writers = root->writers[connection->index()];
  // A writer goes once it completed, or once this one, after it on its in-order queue, covers its
  // bytes: waiting for this one waits for it. Unwatched events (Command::leave_unwatched) never
  // complete here, so this is what bounds their number.
  auto kept = [&](const _cl_mem::Writer &w) {
    bool covered = event && event->queue && w.event->queue == event->queue && event->queue->in_order() &&
                   range.begin <= w.begin && w.end <= range.end;
    return !covered && pending(w.event);
  };
  // partition, not remove_if: what remove_if leaves behind is unspecified, and each one is released
  // (nor stable_partition, which allocates: the order of writers does not matter).
  auto done = std::partition(writers.begin(), writers.end(), kept);
  for (auto it = done; it != writers.end(); ++it) release(it->event);
  writers.erase(done, writers.end());
  if (event) {
    retain(event);
    writers.push_back({event, range.begin, range.end});
  }
}

}  // namespace fedcl
