#include "send_queue.h"

#include <cstring>
#include <utility>

#include "frame.h"

namespace fedcl {

namespace {
const uint8_t kZeroPadding[8] = {};
}  // namespace

std::vector<uint8_t> &SendQueue::copy_segment() {
  if (segments_.empty() || segments_.back().borrowed) {
    segments_.emplace_back();
    segments_.back().copied = std::move(spare_);
    spare_.clear();
  }
  return segments_.back().copied;
}

void SendQueue::append_frame(wire::FrameKind kind, capnp::MessageBuilder &message, uint64_t payload_bytes, int descriptor) {
  if (descriptor >= 0) {
    segments_.emplace_back();  // its first byte is the frame's
    segments_.back().descriptor = descriptor;
  }
  auto &out = copy_segment();
  size_t before = out.size();
  frame_append(out, kind, message, payload_bytes);
  appended_ += out.size() - before;
}

uint64_t SendQueue::append_copy(const void *payload, uint64_t size) {
  auto &out = copy_segment();
  auto *bytes = static_cast<const uint8_t *>(payload);
  out.insert(out.end(), bytes, bytes + size);
  out.insert(out.end(), kZeroPadding, kZeroPadding + frame_padding(size));
  appended_ += size + frame_padding(size);
  return appended_;
}

uint64_t SendQueue::append_borrowed(const void *payload, uint64_t size, bool referenced) {
  Segment segment;
  segment.borrowed = payload;
  segment.borrowed_bytes = size;
  segment.referenced = referenced;
  segments_.push_back(std::move(segment));
  appended_ += size;
  uint64_t padding = frame_padding(size);
  if (padding) {
    auto &out = copy_segment();
    out.insert(out.end(), kZeroPadding, kZeroPadding + padding);
    appended_ += padding;
  }
  return appended_;
}

SendQueue::Batch SendQueue::take() {
  Batch batch;
  batch.segments.swap(segments_);
  segments_.swap(spare_segments_);  // an earlier batch's list, empty: appending allocates no list
  batch.end = taken_ = appended_;
  return batch;
}

void SendQueue::recycle(Batch &&batch) {
  for (auto &segment : batch.segments) {
    if (segment.borrowed || spare_.capacity() > 0) continue;
    spare_ = std::move(segment.copied);
    spare_.clear();
  }
  batch.segments.clear();
  if (spare_segments_.capacity() == 0) spare_segments_.swap(batch.segments);
}

}  // namespace fedcl
