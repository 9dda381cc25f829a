// A client that speaks the wire protocol by hand, for tests that send what libfedcl never would.
#pragma once

#include <capnp/message.h>
#include <capnp/serialize.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "frame.h"

namespace fedcl_test {

struct ReceivedFrame {
  fedcl::FrameHeader header{};
  kj::Array<capnp::word> words;
  std::unique_ptr<capnp::FlatArrayMessageReader> reader;
  std::vector<uint8_t> payload;  // header.payload_bytes bytes, without the padding
};

class RawSession {
 public:
  // Connects to 127.0.0.1:port (from source, a loopback address such as 127.0.0.2, when given:
  // another client address as the daemon sees it); every later read gives up after timeout_ms.
  explicit RawSession(int port, int timeout_ms = 10000, const std::string &source = "");
  // Connects to a daemon's local socket (a Unix socket path) instead; the handshake's proof is bound
  // to the two processes, as libfedcl's is.
  explicit RawSession(const std::string &local_socket, int timeout_ms = 10000);
  ~RawSession();
  RawSession(const RawSession &) = delete;
  RawSession &operator=(const RawSession &) = delete;

  // False if the daemon has closed the connection.
  bool send_bytes(const void *bytes, size_t size);
  bool send_request(capnp::MessageBuilder &message);
  // The same with descriptor passed beside the frame's first byte (a local session's shared memory).
  bool send_request(capnp::MessageBuilder &message, int descriptor);
  bool send_hello(uint32_t protocol_version, uint64_t seq = 1);
  // The client's handshake by hand (protocol/auth.h): Hello as user, and when the daemon challenges,
  // a proof under key (an empty proof when key is empty). *last gets the daemon's last answer: the
  // HelloReply, or a refusal. False if no answer came.
  // dialled: the host the Hello says the client dialled (the socket goes to 127.0.0.1 all the same).
  bool handshake(const std::string &user, const std::string &key, ReceivedFrame *last,
                 const std::string &dialled = "127.0.0.1");

  // Reads one whole frame. False on EOF, timeout or a truncated frame.
  bool read_frame(ReceivedFrame *frame);
  // Whether something from the daemon (or its close) waits to be read now.
  bool readable() const;
  // True once the daemon closed the connection: every byte up to EOF is read and dropped.
  // False if the connection is still open when the timeout ends.
  bool wait_closed();
  // Bytes read from the daemon so far (the session's stream, for a Resume by hand).
  uint64_t received() const { return received_; }

 private:
  bool read_exact(void *dst, size_t size);
  void limit_reads(int timeout_ms);
  int fd_ = -1;
  std::string binding_;  // AuthBinding.channel: "" over TCP
  uint64_t received_ = 0;
};

}  // namespace fedcl_test
