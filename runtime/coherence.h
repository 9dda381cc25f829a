// Buffers across daemons: creating each memory object where it is needed, which daemons hold a
// current copy of which of its bytes (runtime/validity_map.h), and bringing the stale bytes a
// command uses up to date before it runs. Images move whole.
//
// The daemons move a copy themselves: the one that has it sends it over their peer link
// (SendToPeer), the other receives it (ReceiveFromPeer) as a command of fedcl's transfer queue there,
// and the command that needs it waits for the receive's event. Nothing here blocks or waits for a
// reply, and no byte passes through this process. Where two daemons have no peer link (or
// FEDCL_PEER_LINKS=0) the copy travels through this process instead, a blocking round trip.
#pragma once

#include "command.h"
#include "host_region.h"
#include "mem_span.h"

namespace fedcl {

// Creating a memory object on the daemons. backend_decides: where fedcl's checks and a backend may
// differ on a request the program can rely on (NVIDIA creates buffers past
// CL_DEVICE_MAX_MEM_ALLOC_SIZE and misaligned sub-buffers, PoCL refuses them as the specification
// says), the call waits for the backend's verdict. Each returns the first failure.
//
// A new buffer or image, on the first daemon that holds it (others get it when they need it):
// present there, and current if it has initial contents (which travel tightly packed) or its
// context has no other daemon.
cl_int mem_create_first(cl_mem mem, Connection *connection, const HostRegion *contents, bool backend_decides);
// A sub-buffer, or an image over a buffer or an image, on each daemon that holds its parent.
cl_int mem_create_with_parent(cl_mem mem, bool backend_decides);

// Before command (begun on its queue) uses span of mem: makes sure that the queue's daemon has the
// object and that its copy of the span is current or on its way (the command then waits for it).
// Only the stale stretches move, each from a daemon current there; a span the command overwrites
// moves not at all. Returns CL_MEM_OBJECT_ALLOCATION_FAILURE (and tells the context's notify
// callback) when the only current copy of a stretch was on a daemon that is gone.
cl_int mem_prepare(cl_mem mem, Command &command, const MemSpan &span);

// Makes sure connection's daemon holds mem, whatever its contents there: for a command recorded now
// whose memory objects are made current later (command buffers).
void mem_place(cl_mem mem, Connection *connection);

// clEnqueueMigrateMemObjects once its arguments are checked: to the queue's daemon, the objects'
// current contents (none, with CL_MIGRATE_MEM_OBJECT_CONTENT_UNDEFINED) arrive before the command
// completes; to the host, nothing moves.
cl_int mem_migrate(cl_command_queue queue, cl_uint num_mems, const cl_mem *mems, cl_mem_migration_flags flags,
                   cl_uint num_events, const cl_event *wait_list, cl_event *event);

// After a command that may have written span of mem was sent: its daemon alone is current there now.
void mem_written(cl_mem mem, Connection *connection, cl_event event, const MemSpan &span);

// The identity of a daemon session as its peers address it.
void fill_peer_ref(wire::PeerRef::Builder ref, Connection &connection);

// A command's wait list: the events of these ids.
void set_wait_list(wire::Command::Builder command, const std::vector<uint64_t> &events);

// What both requests of a peer transfer (SendToPeer, ReceiveFromPeer) say alike: the range of the
// memory object, and the transfer that pairs the send with its receive.
template <typename PeerRequest>
void set_peer_range(PeerRequest request, uint64_t mem, uint64_t offset, uint64_t size, uint64_t transfer) {
  request.setMemObject(mem);
  request.setOffset(offset);
  request.setSize(size);
  request.setTransfer(transfer);
}

// Queues a SendToPeer of bytes on from's daemon and the ReceiveFromPeer that takes them on to's
// (combining them into what is there unless combine is none); neither is flushed: flushing to's
// daemon first puts the receive there before the first bytes, which then land in place. A failed
// send fails the receive too. Migrations and the collectives' steps both move bytes this way.
PeerTransferEvents queue_peer_transfer(cl_context context, cl_command_type type, const PeerTransferEnd &from,
                                       const PeerTransferEnd &to, uint64_t bytes,
                                       wire::Request::Combine combine = wire::Request::Combine::NONE,
                                       wire::Request::ElementType element = wire::Request::ElementType::INT32);
// The same with events made already: a carried range whose signal could not take it (Command::carry).
void queue_peer_transfer_of(const PeerTransferEvents &events, const PeerTransferEnd &from, const PeerTransferEnd &to,
                            uint64_t bytes, wire::Request::Combine combine = wire::Request::Combine::NONE,
                            wire::Request::ElementType element = wire::Request::ElementType::INT32);

// A signal's data (SignalPeer.data, CreateUserEvent.data): end's command (its queue, event and wait
// list, after signal_event) and its range of size bytes.
void fill_signal_data(wire::Request::SignalData::Builder data, const PeerTransferEnd &end, const _cl_event *event,
                      uint64_t signal_event, uint64_t size);

}  // namespace fedcl
