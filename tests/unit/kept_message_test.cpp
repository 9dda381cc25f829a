// protocol/message_check.h: a message kept for a session is read as often as the program likes,
// where a default reader throws once its reads pass Cap'n Proto's traversal limit.
#include "message_check.h"

#include <gtest/gtest.h>

#include "fedcl.capnp.h"

namespace {

kj::Array<capnp::word> hello_reply() {
  capnp::MallocMessageBuilder message;
  auto hello = message.initRoot<fedcl::wire::HelloReply>();
  hello.setInstance(42);
  hello.setNode("node");
  return capnp::messageToFlatArray(message);
}

// Reads the instance as a session does on every event that crosses daemons; false once it throws.
bool read_often(capnp::FlatArrayMessageReader &reader, int times) {
  try {
    uint64_t sum = 0;
    for (int i = 0; i < times; i++) sum += reader.getRoot<fedcl::wire::HelloReply>().getInstance();
    return sum == uint64_t(42) * times;
  } catch (const kj::Exception &) {
    return false;
  }
}

TEST(KeptMessage, ADefaultReaderGivesOutAfterItsTraversalLimit) {
  auto words = hello_reply();
  capnp::FlatArrayMessageReader reader(words.asPtr());
  EXPECT_FALSE(read_often(reader, 2'000'000));
}

TEST(KeptMessage, AKeptMessageIsReadForAsLongAsTheSessionLasts) {
  auto words = hello_reply();
  auto reader = fedcl::kept_message_reader(words.asPtr());
  EXPECT_TRUE(read_often(*reader, 2'000'000));
}

}  // namespace
