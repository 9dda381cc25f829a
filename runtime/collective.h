// Collective commands (include/CL/cl_fedcl_transfer.h): one command over buffers of several devices
// of a context, carried out by their daemons over their peer links. The plan (collective_plan.h)
// says what moves; here each step becomes commands on fedcl's transfer queue of the daemons: a
// copy inside one daemon, or a SendToPeer and a ReceiveFromPeer (combining, for reductions), each
// waiting for the steps it depends on. Nothing passes through this process.
//
// Each participant's part begins with a marker on its queue (after the wait list and, on an
// in-order queue, the commands before it; its source made current and its destination present on
// its daemon) and ends with a marker there that waits for its steps: that one's event is the
// participant's event, and its destination is current on its daemon from then on.
#pragma once

#include <vector>

#include "collective_plan.h"
#include "handles.h"

namespace fedcl {

struct CollectiveMember {
  cl_command_queue queue;
  cl_mem source = nullptr;  // null where the participant has no source range
  size_t source_offset = 0;
  cl_mem destination = nullptr;
  size_t destination_offset = 0;
};

// How a reduction combines elements, and their type: the schema's enums, under the names icd/ uses.
using CollectiveCombine = wire::Request::Combine;
using CollectiveElement = wire::Request::ElementType;

struct Collective {
  CollectiveShape shape;
  CollectiveCombine op = CollectiveCombine::NONE;
  CollectiveElement element_type = CollectiveElement::INT32;
  cl_command_type command_type;
  std::vector<CollectiveMember> members;  // one per participant, in the application's order
};

// Enqueues a checked collective: events (if not null) gets one event per participant. Returns
// CL_INVALID_OPERATION (and tells the context's notify callback) where two daemons that must
// exchange bytes have no peer link.
cl_int enqueue_collective(const Collective &collective, cl_uint num_events, const cl_event *wait_list,
                          cl_event *events);

}  // namespace fedcl
