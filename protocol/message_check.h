// Whether a message from the other end is well-formed all through, as its schema reads it. capnp
// checks a pointer only when a reader follows it, and throws there (kj::Exception): in whichever
// thread reads the field, however much later, and a thread of an application that does not catch
// it ends the process. A message checked here once can then be read anywhere: every pointer of
// every field its schema knows lies inside the message and is of the kind the field expects.
#pragma once

#include <capnp/dynamic.h>

#include <string>

namespace fedcl {

// "" or what is wrong with message, in capnp's words. Walks every field set (the union's active one),
// so it costs a pass over the message: for messages kept and read in many places (the HelloReply).
std::string message_check(capnp::DynamicStruct::Reader message);

template <typename Reader>
std::string message_check(Reader message) {
  return message_check(capnp::DynamicStruct::Reader(capnp::toDynamic(message)));
}

}  // namespace fedcl
