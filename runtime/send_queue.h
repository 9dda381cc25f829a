// What one connection sends next (connection.h): request frames and their payloads, in the order
// threads appended them, as segments that the connection's writer hands to sendmsg. Appending never
// touches the socket, so any thread may append under its own locks. Small pieces are copied into
// the current segment; a large payload is borrowed from its caller, who must keep it unchanged
// until the writer has written it (Connection waits for that). Offsets count the bytes of the
// session's stream since its first byte, as ResendBuffer's do. Not thread-safe: the connection
// serialises use under its queue lock.
#pragma once

#include <capnp/message.h>

#include <cstdint>
#include <vector>

#include "fedcl.capnp.h"

namespace fedcl {

// sendmsg takes at most IOV_MAX (1024) pieces at once; writers send this many at a time.
constexpr size_t kPiecesPerSend = 256;

class SendQueue {
 public:
  struct Segment {
    std::vector<uint8_t> copied;      // copied bytes, or empty when borrowed
    const void *borrowed = nullptr;   // a caller's payload
    uint64_t borrowed_bytes = 0;
    bool referenced = false;          // a resumption resends it from the caller's memory (connection.h)
    int descriptor = -1;              // passed beside the segment's first byte (a local session's
                                      // shared memory, transport.h); the caller keeps it open

    const void *data() const { return borrowed ? borrowed : copied.data(); }
    uint64_t size() const { return borrowed ? borrowed_bytes : copied.size(); }
  };
  // What the writer takes at once: every segment appended so far, and the stream offset after them.
  struct Batch {
    std::vector<Segment> segments;
    uint64_t end = 0;
  };

  // Appends a frame's header and message; its payload (payload_bytes) must follow. A descriptor
  // (not -1) travels beside the frame's first byte.
  void append_frame(wire::FrameKind kind, capnp::MessageBuilder &message, uint64_t payload_bytes, int descriptor = -1);
  // Appends a payload and the frame's padding after it. Returns the stream offset after them.
  uint64_t append_copy(const void *payload, uint64_t size);
  uint64_t append_borrowed(const void *payload, uint64_t size, bool referenced);

  bool empty() const { return taken_ == appended_; }
  // Bytes appended and not taken yet.
  uint64_t waiting_bytes() const { return appended_ - taken_; }
  // The stream offset after the last byte appended.
  uint64_t end() const { return appended_; }

  // Takes everything appended so far.
  Batch take();
  // Hands a written batch back, so that its first copied segment's memory and its segment list
  // serve the next ones.
  void recycle(Batch &&batch);

 private:
  // The last segment, if it takes copies; else a new one.
  std::vector<uint8_t> &copy_segment();

  std::vector<Segment> segments_;
  std::vector<uint8_t> spare_;             // a written segment's memory, empty
  std::vector<Segment> spare_segments_;    // a written batch's segment list, empty
  uint64_t appended_ = 0, taken_ = 0;
};

}  // namespace fedcl
