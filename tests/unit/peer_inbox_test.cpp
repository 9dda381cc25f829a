// What a session holds for peer daemons before the client's request that expects it.
#include "peer_inbox.h"

#include <gtest/gtest.h>

using fedcld::PeerChunk;
using fedcld::PeerInbox;
using fedcld::PeerReceive;

namespace {
PeerChunk chunk(uint64_t offset, uint64_t size) {
  return PeerChunk{offset, size, std::shared_ptr<uint8_t[]>(new uint8_t[size])};
}
}  // namespace

TEST(PeerInbox, EarlyChunksGoToTheReceiveOfTheirSender) {
  PeerInbox inbox;
  ASSERT_TRUE(inbox.hold(7, 100, chunk(0, 16)));
  ASSERT_TRUE(inbox.hold(7, 100, chunk(16, 16)));
  PeerInbox::Early early = inbox.take_early(7, 100);
  ASSERT_EQ(2u, early.chunks.size());
  EXPECT_EQ(16u, early.chunks[1].offset);
  EXPECT_EQ(CL_SUCCESS, early.status);
  // Taken once: a second receive of the same transfer finds nothing.
  EXPECT_TRUE(inbox.take_early(7, 100).chunks.empty());
}

TEST(PeerInbox, ChunksFromAnotherDaemonWaitForTheReceiveToNameIt) {
  PeerInbox inbox;
  ASSERT_TRUE(inbox.hold(7, 100, chunk(0, 16)));
  inbox.hold_failure(7, 300, CL_OUT_OF_RESOURCES, "another sender failed");
  // An MPI receive starts as the client's own (sender 0), then learns its sender (TransferFrom):
  // neither the client's receive nor one from a third daemon takes daemon 100's bytes.
  EXPECT_TRUE(inbox.take_early(7, 0).chunks.empty());
  PeerInbox::Early third = inbox.take_early(7, 200);
  EXPECT_TRUE(third.chunks.empty());
  EXPECT_EQ(CL_SUCCESS, third.status) << "a failure of daemon 300 is not the receive's from 200";
  PeerInbox::Early named = inbox.take_early(7, 100);
  ASSERT_EQ(1u, named.chunks.size());
  EXPECT_EQ(CL_SUCCESS, named.status);
  // ...and, taken, their bytes no longer count against the bound.
  EXPECT_TRUE(inbox.hold(8, 100, chunk(0, (uint64_t(1) << 30) - 15)));
}

TEST(PeerInbox, HeldBytesAreBounded) {
  PeerInbox inbox;
  EXPECT_TRUE(inbox.hold(1, 100, chunk(0, uint64_t(1) << 29)));
  EXPECT_TRUE(inbox.hold(2, 100, chunk(0, uint64_t(1) << 29)));
  EXPECT_FALSE(inbox.hold(3, 100, chunk(0, 1)));
  inbox.take_early(1, 100);
  EXPECT_TRUE(inbox.hold(3, 100, chunk(0, 1)));
}

TEST(PeerInbox, AnEarlyFailureReachesTheReceive) {
  PeerInbox inbox;
  inbox.hold_failure(9, 100, CL_OUT_OF_RESOURCES, "the sender ran out");
  PeerInbox::Early early = inbox.take_early(9, 100);
  EXPECT_EQ(CL_OUT_OF_RESOURCES, early.status);
  EXPECT_EQ("the sender ran out", early.message);
}

// A stand-in for a receive: the inbox only keeps and hands back the pointer.
std::shared_ptr<PeerReceive> receive_tag(int &tag) {
  return std::shared_ptr<PeerReceive>(std::shared_ptr<void>(), reinterpret_cast<PeerReceive *>(&tag));
}

TEST(PeerInbox, ReceivesAreFoundByTransferSenderAndEvent) {
  PeerInbox inbox;
  int a = 0, b = 0;
  inbox.add_receive(5, 100, 77, receive_tag(a));
  inbox.add_receive(6, 200, 78, receive_tag(b));
  EXPECT_EQ(1u, inbox.receives_from(100).size());
  EXPECT_TRUE(inbox.receives_from(300).empty());
  EXPECT_EQ(receive_tag(a), inbox.receive(5, 100));
  EXPECT_EQ(nullptr, inbox.receive(5, 200)) << "bytes from another sender than the one named";
  EXPECT_EQ(receive_tag(b), inbox.receive_with_event(78));
  EXPECT_EQ(nullptr, inbox.receive_with_event(79));
  inbox.remove_receive(6);
  EXPECT_EQ(nullptr, inbox.receive_with_event(78));
}

TEST(PeerInbox, AnEarlySignalIsTakenOnce) {
  PeerInbox inbox;
  inbox.hold_signal(42, {CL_COMPLETE, nullptr, 0});
  PeerInbox::Signal signal;
  signal.status = 1;
  ASSERT_TRUE(inbox.take_signal(42, &signal));
  EXPECT_EQ(CL_COMPLETE, signal.status);
  EXPECT_EQ(0u, signal.size);
  EXPECT_FALSE(inbox.take_signal(42, &signal));
}

// A signal that came before its stand-in keeps the bytes it carried for it (SignalPeer.data); no
// stand-in means no landing for a signal's payload.
TEST(PeerInbox, AnEarlySignalKeepsItsBytes) {
  PeerInbox inbox;
  std::shared_ptr<uint8_t[]> bytes(new uint8_t[8]{1, 2, 3, 4, 5, 6, 7, 8});
  inbox.hold_signal(43, {CL_COMPLETE, bytes, 8});
  PeerInbox::Signal signal;
  ASSERT_TRUE(inbox.take_signal(43, &signal));
  EXPECT_EQ(bytes, signal.bytes);
  EXPECT_EQ(8u, signal.size);
  uint64_t size = 0;
  EXPECT_EQ(nullptr, inbox.landing(43, 7, &size));
}
