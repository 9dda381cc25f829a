// A local session's shared memory in its worker (protocol/shared_region.h; docs/design-decisions.md,
// "Same node"): the memfd the client passes once (Request.sharedMemory), and the payloads in it. A
// request's payload in a slot (Request.sharedPayload) is the frame's payload as if it had come after
// the frame, and its slot is freed once the last reference to it goes (the backend copied it); a
// read asked to land in a slot (Request.sharedReply) is read straight there, and its reply says so
// (Reply.sharedPayload) instead of carrying the bytes.
//
// A peer link over a local socket: each side passes the other a memfd of its own (PeerMessage.
// sharedMemory: the dialling side once the link is up, the answering side in answer), and puts the
// chunks it sends in its slots while one is free
// (PeerData.shared), on the link's socket otherwise; the receiver frees a slot once the chunk's
// bytes are in place.
#pragma once

#include <memory>
#include <string>

#include "exec.h"

namespace fedcld {

void exec_shared_memory(Call &call, wire::SharedMemory::Reader request);

// Makes frame's payload the slot request names, checked against the session's shared memory and
// what the request may carry: "" or why the session must close (the client broke the protocol).
std::string take_shared_payload(Session &session, wire::Request::Reader request, Frame &frame);

// Where a read of size bytes lands: the slot the request named for its reply, if it holds them;
// else null.
std::shared_ptr<uint8_t[]> shared_reply_memory(Call &call, uint64_t size);

// A local peer link that just came up: makes this side's memory for what it sends and passes it.
void share_link_memory(Session &link);
// The other side's memory (PeerMessage.sharedMemory, its descriptor beside it): "" or why not.
std::string adopt_link_memory(Session &link, wire::SharedMemory::Reader request);
// Copies a chunk's bytes into a free slot of the link's own memory: the slot, or -1 if the link has
// none or none is free (the bytes then go on the socket).
long put_in_link_slot(Session &link, const uint8_t *bytes, uint64_t size);
// Makes a data frame's payload the slot it names in the other side's memory: "" or why the link
// must close.
std::string take_link_payload(Session &link, wire::PeerData::Reader data, Frame &frame);

}  // namespace fedcld
