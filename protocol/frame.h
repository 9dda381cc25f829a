// Frame header and message encoding shared by the client runtime and the bridge daemon.
// The layout is documented at the top of fedcl.capnp.
#pragma once

#include <capnp/message.h>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fedcl.capnp.h"

namespace fedcl {

struct FrameHeader {
  uint32_t message_words;
  uint16_t kind;
  uint16_t flags;
  uint64_t payload_bytes;
};
static_assert(sizeof(FrameHeader) == 16, "the frame header is 16 bytes on the wire");

// Limits that make a hostile or corrupt header fail early instead of allocating without bound.
constexpr uint32_t kMaxMessageWords = 1u << 22;             // 32 MiB of message
constexpr uint64_t kMaxPayloadBytes = uint64_t(1) << 40;    // 1 TiB of payload

inline uint64_t frame_padding(uint64_t payload_bytes) { return (8 - (payload_bytes & 7)) & 7; }

// Appends header + message to out. The payload, if any, is written by the caller after it
// (followed by frame_padding(payload_bytes) zero bytes).
void frame_append(std::vector<uint8_t> &out, wire::FrameKind kind, capnp::MessageBuilder &message,
                  uint64_t payload_bytes);

// Checks a received header; returns an empty string or the reason it is invalid.
std::string frame_check(const FrameHeader &header);

// A message builder whose first segment lives inside the object, so that building a small message
// allocates nothing.
class ScratchMessage {
 public:
  ScratchMessage() : builder_(kj::ArrayPtr<capnp::word>(scratch_, kScratchWords)) {}
  capnp::MallocMessageBuilder &builder() { return builder_; }

 private:
  static constexpr size_t kScratchWords = 256;
  capnp::word scratch_[kScratchWords] = {};
  capnp::MallocMessageBuilder builder_;
};

}  // namespace fedcl
