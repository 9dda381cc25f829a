// Whether a message from the other end is well-formed all through, as its schema reads it. capnp
// checks a pointer only when a reader follows it, and throws there (kj::Exception): in whichever
// thread reads the field, however much later, and a thread of an application that does not catch
// it ends the process. A message checked here once can then be read anywhere: every pointer of
// every field its schema knows lies inside the message and is of the kind the field expects.
#pragma once

#include <capnp/dynamic.h>
#include <capnp/serialize.h>

#include <memory>
#include <string>

namespace fedcl {

// "" or what is wrong with message, in capnp's words. Walks every field set (the union's active one),
// so it costs a pass over the message: for messages kept and read in many places (the HelloReply).
std::string message_check(capnp::DynamicStruct::Reader message);

template <typename Reader>
std::string message_check(Reader message) {
  return message_check(capnp::DynamicStruct::Reader(capnp::toDynamic(message)));
}

// A reader for a message kept and read for as long as a session lasts (the HelloReply), once
// message_check has passed it. A default reader counts every word read over its whole life against
// Cap'n Proto's traversal limit (8 Mi words) and throws past it: a connection's HelloReply, read on
// every event that crosses daemons, threw after about half a million reads. The limit guards a
// single pass over untrusted bytes, which message_check has made; this reader has none.
std::unique_ptr<capnp::FlatArrayMessageReader> kept_message_reader(kj::ArrayPtr<const capnp::word> words);

}  // namespace fedcl
