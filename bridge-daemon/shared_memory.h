// A local session's shared memory in its worker (protocol/shared_region.h; docs/design-decisions.md,
// "Same node"): the memfd the client passes once (Request.sharedMemory), and the payloads in it. A
// request's payload in a slot (Request.sharedPayload) is the frame's payload as if it had come after
// the frame, and its slot is freed once the last reference to it goes (the backend copied it); a
// read asked to land in a slot (Request.sharedReply) is read straight there, and its reply says so
// (Reply.sharedPayload) instead of carrying the bytes.
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

}  // namespace fedcld
