// Buffers across daemons: which daemons hold a current copy of each memory object, and bringing a
// stale copy up to date before a command uses it.
//
// The daemons move a copy themselves: the one that has it sends it over their peer link
// (SendToPeer), the other receives it (ReceiveFromPeer) as a command of fedcl's transfer queue there,
// and the command that needs it waits for the receive's event. Nothing here blocks or waits for a
// reply, and no byte passes through this process. Where two daemons have no peer link (or
// FEDCL_PEER_LINKS=0) the copy travels through this process instead, a blocking round trip.
#pragma once

#include "command.h"

namespace fedcl {

// Before command (begun on its queue) uses mem: makes sure that the queue's daemon has the object
// and that its copy is current or on its way (the command then waits for it). overwrites_all: the
// command replaces every byte, so a stale copy needs no update. Returns
// CL_MEM_OBJECT_ALLOCATION_FAILURE (and tells the context's notify callback) when the only current
// copy was on a daemon that is gone.
cl_int mem_prepare(cl_mem mem, Command &command, bool overwrites_all);

// After a command that may have written mem was sent: its daemon alone is current now.
void mem_written(cl_mem mem, Connection *connection, cl_event event);

// The identity of a daemon session as its peers address it.
void fill_peer_ref(wire::PeerRef::Builder ref, Connection &connection);

}  // namespace fedcl
