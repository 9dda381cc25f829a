// Frame header validation: what a receiver accepts before it allocates anything.
#include <gtest/gtest.h>

#include <capnp/serialize.h>

#include <cstring>

#include "frame.h"

using fedcl::FrameHeader;
using fedcl::frame_check;

namespace {
FrameHeader valid() {
  FrameHeader header{};
  header.message_words = 4;
  header.kind = static_cast<uint16_t>(fedcl::wire::FrameKind::REQUEST);
  return header;
}
}  // namespace

TEST(FrameCheck, AcceptsEveryKnownKind) {
  for (auto kind : {fedcl::wire::FrameKind::REQUEST, fedcl::wire::FrameKind::REPLY, fedcl::wire::FrameKind::NOTICE}) {
    FrameHeader header = valid();
    header.kind = static_cast<uint16_t>(kind);
    EXPECT_EQ("", frame_check(header)) << "kind " << header.kind;
  }
}

TEST(FrameCheck, MessageLengthBounds) {
  FrameHeader header = valid();
  header.message_words = 0;
  EXPECT_NE("", frame_check(header));
  header.message_words = 1;
  EXPECT_EQ("", frame_check(header));
  header.message_words = fedcl::kMaxMessageWords;
  EXPECT_EQ("", frame_check(header));
  header.message_words = fedcl::kMaxMessageWords + 1;
  EXPECT_NE("", frame_check(header));
  header.message_words = UINT32_MAX;
  EXPECT_NE("", frame_check(header));
}

TEST(FrameCheck, PayloadBounds) {
  FrameHeader header = valid();
  header.payload_bytes = fedcl::kMaxPayloadBytes;
  EXPECT_EQ("", frame_check(header));
  header.payload_bytes = fedcl::kMaxPayloadBytes + 1;
  EXPECT_NE("", frame_check(header));
  header.payload_bytes = UINT64_MAX;
  EXPECT_NE("", frame_check(header));
}

TEST(FrameCheck, RejectsUnknownKindAndFlags) {
  FrameHeader header = valid();
  header.kind = static_cast<uint16_t>(fedcl::wire::FrameKind::WORKER) + 1;
  EXPECT_NE(std::string::npos, frame_check(header).find("kind")) << frame_check(header);
  header = valid();
  header.flags = 1;
  EXPECT_NE(std::string::npos, frame_check(header).find("flags")) << frame_check(header);
}

TEST(FrameAppend, WritesAHeaderThatDescribesTheMessage) {
  capnp::MallocMessageBuilder message;
  auto request = message.initRoot<fedcl::wire::Request>();
  request.setSeq(42);
  request.setFlush(7);
  std::vector<uint8_t> bytes;
  fedcl::frame_append(bytes, fedcl::wire::FrameKind::REQUEST, message, 24);
  ASSERT_GE(bytes.size(), sizeof(FrameHeader));
  FrameHeader header;
  std::memcpy(&header, bytes.data(), sizeof header);
  EXPECT_EQ("", frame_check(header));
  EXPECT_EQ(24u, header.payload_bytes);
  EXPECT_EQ(static_cast<uint16_t>(fedcl::wire::FrameKind::REQUEST), header.kind);
  ASSERT_EQ(sizeof header + header.message_words * sizeof(capnp::word), bytes.size());
  auto words = kj::heapArray<capnp::word>(header.message_words);
  std::memcpy(words.begin(), bytes.data() + sizeof header, bytes.size() - sizeof header);
  capnp::FlatArrayMessageReader reader(words.asPtr());
  auto decoded = reader.getRoot<fedcl::wire::Request>();
  EXPECT_EQ(42u, decoded.getSeq());
  ASSERT_EQ(fedcl::wire::Request::FLUSH, decoded.which());
  EXPECT_EQ(7u, decoded.getFlush());
}

TEST(FramePadding, RoundsPayloadToWords) {
  EXPECT_EQ(0u, fedcl::frame_padding(0));
  EXPECT_EQ(7u, fedcl::frame_padding(1));
  EXPECT_EQ(1u, fedcl::frame_padding(7));
  EXPECT_EQ(0u, fedcl::frame_padding(8));
  EXPECT_EQ(3u, fedcl::frame_padding(13));
}
