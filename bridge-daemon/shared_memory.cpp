#include "shared_memory.h"

#include <fcntl.h>

#include <cstring>

#include "transfer_chunks.h"

#include "log.h"
#include "session_host.h"

namespace fedcld {

namespace {

// The descriptor passed first beside the session's bytes (whatever it is: adopt() checks it), or
// -1. libuv hands over only stream handles: the memfd goes into a pipe handle that is never read or
// written, and leaves it duplicated.
int take_passed_descriptor(Session &session) {
  uv_stream_t *stream = session.stream();
  if (!session.local() || !stream) return -1;
  auto *pipe = reinterpret_cast<uv_pipe_t *>(stream);
  if (uv_pipe_pending_count(pipe) == 0) return -1;
  auto *holder = new uv_pipe_t;
  uv_pipe_init(stream->loop, holder, 0);
  int fd = -1;
  uv_os_fd_t passed = -1;
  if (uv_accept(stream, reinterpret_cast<uv_stream_t *>(holder)) == 0 &&
      uv_fileno(reinterpret_cast<uv_handle_t *>(holder), &passed) == 0)
    fd = fcntl(passed, F_DUPFD_CLOEXEC, 0);
  uv_close(reinterpret_cast<uv_handle_t *>(holder), [](uv_handle_t *handle) { delete reinterpret_cast<uv_pipe_t *>(handle); });
  return fd;
}

}  // namespace

void exec_shared_memory(Call &call, wire::SharedMemory::Reader request) {
  Session &session = call.session;
  if (session.shared_memory) fail(CL_INVALID_OPERATION, "the session has its shared memory already");
  int fd = take_passed_descriptor(session);
  if (fd < 0) fail(CL_INVALID_VALUE, "no shared memory came with the request (only a local session passes one)");
  auto region = std::make_shared<fedcl::SharedRegion>();
  std::string why = region->adopt(fd, request.getBytes(), request.getSlotBytes(), request.getSlots());
  if (!why.empty()) fail(CL_INVALID_VALUE, "the session's shared memory: " + why);
  session.shared_memory = std::move(region);
  session.host().publish();
  FEDCLD_LOG(debug, "session %llu: shared memory of %u slots of %llu bytes", (unsigned long long)session.number(),
             request.getSlots(), (unsigned long long)request.getSlotBytes());
}

namespace {

// The slot's bytes as a payload: the slot is the other side's again once the last reference goes.
std::shared_ptr<uint8_t[]> slot_payload(const std::shared_ptr<fedcl::SharedRegion> &region, uint32_t slot) {
  std::shared_ptr<fedcl::SharedRegion> held = region;
  return std::shared_ptr<uint8_t[]>(region->slot(slot), [held, slot](uint8_t *) { held->release(slot); });
}

// A link's memory: slots of a chunk's largest size (transfer_chunks.h), a few chunks' worth ahead of
// the receiver, taken only as they are first used.
constexpr uint64_t kLinkSlotBytes = fedcl::kMaxTransferChunkBytes;
constexpr uint32_t kLinkSlots = 8;

}  // namespace

std::string take_shared_payload(Session &session, wire::Request::Reader request, Frame &frame) {
  auto span = request.getSharedPayload();
  const auto &region = session.shared_memory;
  if (!region) return "a payload in shared memory, which the session has not passed";
  if (frame.header.payload_bytes != 0) return "a payload both after the frame and in shared memory";
  if (span.getSlot() >= region->slots() || span.getBytes() > region->slot_bytes())
    return "a payload in slot " + std::to_string(span.getSlot()) + " of " + std::to_string(span.getBytes()) +
           " bytes, outside the shared memory";
  std::string problem = request_payload_problem(request, span.getBytes());
  if (!problem.empty()) return problem;
  // The last reference goes when the backend has copied the bytes (a write's completion) or the
  // request failed.
  frame.payload = slot_payload(region, span.getSlot());
  frame.header.payload_bytes = span.getBytes();
  session.shared_received += span.getBytes();
  return {};
}

std::shared_ptr<uint8_t[]> shared_reply_memory(Call &call, uint64_t size) {
  const auto &region = call.session.shared_memory;
  if (!region || call.shared_reply_bytes == 0 || size != call.shared_reply_bytes) return nullptr;
  return std::shared_ptr<uint8_t[]>(region, region->slot(call.shared_reply_slot));
}

void share_link_memory(Session &link) {
  auto region = std::make_shared<fedcl::SharedRegion>();
  std::string why = region->create(kLinkSlotBytes, kLinkSlots);
  if (!why.empty()) {
    FEDCLD_LOG(warn, "peer link %llu (%s): its data goes on the socket: %s", (unsigned long long)link.number(),
               link.peer().c_str(), why.c_str());
    return;
  }
  capnp::MallocMessageBuilder builder;
  auto shared = builder.initRoot<wire::PeerMessage>().initSharedMemory();
  shared.setBytes(region->bytes());
  shared.setSlotBytes(region->slot_bytes());
  shared.setSlots(region->slots());
  if (link.send_peer_descriptor(builder, region->fd())) link.own_shared_memory = std::move(region);
}

std::string adopt_link_memory(Session &link, wire::SharedMemory::Reader request) {
  if (link.shared_memory) return "the peer passed its shared memory twice";
  int fd = take_passed_descriptor(link);
  if (fd < 0) return "no shared memory came with the peer's message";
  auto region = std::make_shared<fedcl::SharedRegion>();
  std::string why = region->adopt(fd, request.getBytes(), request.getSlotBytes(), request.getSlots());
  if (!why.empty()) return why;
  link.shared_memory = std::move(region);
  return {};
}

long put_in_link_slot(Session &link, const uint8_t *bytes, uint64_t size) {
  const auto &region = link.own_shared_memory;
  if (!region || size > region->slot_bytes()) return -1;
  long slot = region->try_take();
  if (slot < 0) return -1;
  std::memcpy(region->slot(uint32_t(slot)), bytes, size);
  link.shared_sent += size;
  return slot;
}

std::string take_link_payload(Session &link, wire::PeerData::Reader data, Frame &frame) {
  auto span = data.getShared();
  const auto &region = link.shared_memory;
  if (!region) return "a payload in shared memory the peer has not passed";
  if (frame.header.payload_bytes != 0) return "a payload both after the frame and in shared memory";
  if (span.getSlot() >= region->slots() || span.getBytes() > region->slot_bytes() ||
      span.getBytes() > fedcl::kMaxTransferChunkBytes)
    return "a payload outside the peer's shared memory";
  frame.payload = slot_payload(region, span.getSlot());
  frame.header.payload_bytes = span.getBytes();
  link.shared_received += span.getBytes();
  return {};
}

}  // namespace fedcld
