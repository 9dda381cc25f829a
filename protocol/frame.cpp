#include "frame.h"

#include <algorithm>

#include <capnp/serialize.h>
#include <cstring>

namespace fedcl {

namespace {
// Writes capnp's stream encoding straight into a byte vector, without an intermediate flat array.
class VectorSink final : public kj::OutputStream {
 public:
  explicit VectorSink(std::vector<uint8_t> &out) : out_(out) {}
  void write(const void *buffer, size_t size) override {
    auto *bytes = static_cast<const uint8_t *>(buffer);
    out_.insert(out_.end(), bytes, bytes + size);
  }

 private:
  std::vector<uint8_t> &out_;
};
}  // namespace

void frame_append(std::vector<uint8_t> &out, wire::FrameKind kind, capnp::MessageBuilder &message,
                  uint64_t payload_bytes) {
  FrameHeader header{};
  header.message_words = static_cast<uint32_t>(capnp::computeSerializedSizeInWords(message));
  header.kind = static_cast<uint16_t>(kind);
  header.payload_bytes = payload_bytes;
  size_t start = out.size();
  size_t needed = start + sizeof header + header.message_words * sizeof(capnp::word);
  // Geometric growth: a batch of many small frames must not copy itself once per frame.
  if (needed > out.capacity()) out.reserve(std::max(needed, 2 * out.capacity()));
  out.resize(start + sizeof header);
  std::memcpy(out.data() + start, &header, sizeof header);
  VectorSink sink(out);
  capnp::writeMessage(sink, message);
}

std::string frame_check(const FrameHeader &header) {
  if (header.message_words == 0 || header.message_words > kMaxMessageWords)
    return "message length " + std::to_string(header.message_words) + " words is out of range";
  if (header.kind > static_cast<uint16_t>(wire::FrameKind::WORKER))
    return "unknown frame kind " + std::to_string(header.kind);
  if (header.flags != 0) return "unknown frame flags " + std::to_string(header.flags);
  if (header.payload_bytes > kMaxPayloadBytes)
    return "payload of " + std::to_string(header.payload_bytes) + " bytes is too large";
  return {};
}

}  // namespace fedcl
