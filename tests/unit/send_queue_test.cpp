#include "send_queue.h"

#include <gtest/gtest.h>

#include <string>

#include "frame.h"

using fedcl::SendQueue;

namespace {

std::string stream_of(const SendQueue::Batch &batch) {
  std::string out;
  for (const auto &segment : batch.segments) out.append(static_cast<const char *>(segment.data()), segment.size());
  return out;
}

// A request frame as the wire has it: header and message.
std::string frame_bytes(uint64_t seq, uint64_t payload_bytes) {
  fedcl::ScratchMessage message;
  message.builder().initRoot<fedcl::wire::Request>().setSeq(seq);
  std::vector<uint8_t> out;
  fedcl::frame_append(out, fedcl::wire::FrameKind::REQUEST, message.builder(), payload_bytes);
  return std::string(out.begin(), out.end());
}

void append_request(SendQueue &queue, uint64_t seq, uint64_t payload_bytes) {
  fedcl::ScratchMessage message;
  message.builder().initRoot<fedcl::wire::Request>().setSeq(seq);
  queue.append_frame(fedcl::wire::FrameKind::REQUEST, message.builder(), payload_bytes);
}

}  // namespace

TEST(SendQueue, SmallRequestsAndCopiedPayloadsShareOneSegmentInOrder) {
  SendQueue queue;
  append_request(queue, 1, 0);
  append_request(queue, 2, 3);
  uint64_t end = queue.append_copy("abc", 3);
  append_request(queue, 3, 0);
  std::string expected = frame_bytes(1, 0) + frame_bytes(2, 3) + std::string("abc\0\0\0\0\0", 8) + frame_bytes(3, 0);
  EXPECT_EQ(frame_bytes(1, 0).size() + frame_bytes(2, 3).size() + 8, end);
  EXPECT_EQ(expected.size(), queue.waiting_bytes());
  auto batch = queue.take();
  ASSERT_EQ(1u, batch.segments.size());
  EXPECT_EQ(expected, stream_of(batch));
  EXPECT_EQ(expected.size(), batch.end);
  EXPECT_TRUE(queue.empty());
}

TEST(SendQueue, ALargePayloadIsBorrowedWithItsPaddingCopiedAfterIt) {
  SendQueue queue;
  std::string payload(13, 'p');
  append_request(queue, 1, payload.size());
  uint64_t end = queue.append_borrowed(payload.data(), payload.size(), true);
  append_request(queue, 2, 0);
  auto batch = queue.take();
  ASSERT_EQ(3u, batch.segments.size());
  EXPECT_EQ(payload.data(), batch.segments[1].data());  // not copied
  EXPECT_TRUE(batch.segments[1].referenced);
  EXPECT_FALSE(batch.segments[0].referenced);
  EXPECT_EQ(frame_bytes(1, 13) + payload + std::string(3, '\0') + frame_bytes(2, 0), stream_of(batch));
  EXPECT_EQ(frame_bytes(1, 13).size() + 16, end);
}

TEST(SendQueue, OffsetsRunOnAcrossBatchesAndRecycledMemoryStartsEmpty) {
  SendQueue queue;
  append_request(queue, 1, 0);
  auto first = queue.take();
  uint64_t one = frame_bytes(1, 0).size();
  EXPECT_EQ(one, first.end);
  EXPECT_EQ(0u, queue.waiting_bytes());
  const void *memory = first.segments[0].data();
  const void *list = first.segments.data();
  queue.recycle(std::move(first));
  append_request(queue, 2, 0);
  EXPECT_EQ(2 * one, queue.end());
  auto second = queue.take();
  EXPECT_EQ(2 * one, second.end);
  EXPECT_EQ(frame_bytes(2, 0), stream_of(second));  // nothing of the first batch is left in it
  EXPECT_EQ(memory, second.segments[0].data());     // its memory served again
  queue.recycle(std::move(second));
  append_request(queue, 3, 0);
  auto third = queue.take();
  EXPECT_EQ(list, third.segments.data());  // and the first batch's segment list, once the queue's own is taken
  EXPECT_EQ(frame_bytes(3, 0), stream_of(third));
}
