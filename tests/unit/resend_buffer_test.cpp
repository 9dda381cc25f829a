#include "resend_buffer.h"

#include <gtest/gtest.h>

#include <string>

using fedcl::ResendBuffer;

namespace {

std::string bytes_from(const ResendBuffer &buffer, uint64_t from) {
  std::vector<iovec> pieces;
  if (!buffer.pieces_from(from, &pieces)) return "<refused>";
  std::string out;
  for (const iovec &piece : pieces) out.append(static_cast<const char *>(piece.iov_base), piece.iov_len);
  return out;
}

}  // namespace

TEST(ResendBuffer, ResendsFromAnyOffsetAcrossCopiedAndSharedPieces) {
  ResendBuffer buffer;
  buffer.append_copy("abc", 3);
  auto bulk = std::make_shared<std::string>("DEFGH");
  buffer.append_shared(bulk, bulk->data(), bulk->size());
  buffer.append_copy("ij", 2);
  EXPECT_EQ(10u, buffer.sent());
  EXPECT_EQ("abcDEFGHij", bytes_from(buffer, 0));
  EXPECT_EQ("cDEFGHij", bytes_from(buffer, 2));
  EXPECT_EQ("FGHij", bytes_from(buffer, 5));  // a cut inside the shared piece
  EXPECT_EQ("", bytes_from(buffer, 10));
  EXPECT_EQ("<refused>", bytes_from(buffer, 11));
}

TEST(ResendBuffer, AcknowledgedBytesAreDroppedAndNoLongerResendable) {
  ResendBuffer buffer;
  auto bulk = std::make_shared<std::string>(1000, 'x');
  std::weak_ptr<std::string> watch = bulk;
  buffer.append_copy("head", 4);
  buffer.append_shared(bulk, bulk->data(), bulk->size());
  bulk.reset();
  buffer.append_copy("tail", 4);
  buffer.acknowledge(500);
  EXPECT_EQ(508u, buffer.held());
  EXPECT_FALSE(watch.expired());  // still needed from 500 on
  EXPECT_EQ("<refused>", bytes_from(buffer, 3));
  EXPECT_EQ(std::string(504, 'x') + "tail", bytes_from(buffer, 500));
  buffer.acknowledge(1004);
  EXPECT_TRUE(watch.expired());  // the shared piece was let go
  EXPECT_EQ("tail", bytes_from(buffer, 1004));
  buffer.acknowledge(2000);  // more than was sent: everything
  EXPECT_EQ(0u, buffer.held());
  EXPECT_EQ("", bytes_from(buffer, 1008));
}

TEST(ResendBuffer, ManySmallCopiesStayInOrderAcrossRuns) {
  ResendBuffer buffer;
  std::string expected;
  for (int i = 0; i < 20000; i++) {
    std::string piece = std::to_string(i) + ",";
    buffer.append_copy(piece.data(), piece.size());
    expected += piece;
  }
  EXPECT_EQ(expected, bytes_from(buffer, 0));
  EXPECT_EQ(expected.substr(70000), bytes_from(buffer, 70000));
}
