// libFuzzer target: the client's side of the handshake (runtime/connection.h: Connection::open, its
// Hello, the challenge and the proofs, then the frames that follow, and the Resume a dropped session
// sends), against a daemon that says whatever the input says. The session fuzzer plays the client
// against real daemons; this is the other direction: what the driver, loaded into every OpenCL
// program, makes of a hostile daemon, or of anything between it and a daemon when TLS is off.
//
// Each input's first byte says whether the client has a key (odd: it must answer a challenge and
// have the daemon prove the key); the rest is what the fake daemon sends on the client's
// connection, paced as a daemon answers (answer()), then its end of stream. A reply the client
// takes for a HelloReply with a resume token makes it dial again and send Resume when the stream
// ends: every later connection is answered with a well-formed refusal, so that the client gives up
// at once (after a failure that is not a refusal it would wait 100 ms and dial again, for as long
// as the input's resume window).
//
// Checked beyond not crashing or leaking: the client's open and its threads end within a bound.
#include <arpa/inet.h>
#include <capnp/message.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "connection.h"
#include "frame.h"

namespace {

namespace wire = fedcl::wire;

constexpr int kHandshakeMs = 5000;
constexpr auto kEndLimit = std::chrono::seconds(10);

int g_listener = -1;
int g_port = 0;

[[noreturn]] void fail(const char *what) {
  std::fprintf(stderr, "handshake_fuzzer: %s\n", what);
  std::abort();
}

// What the runtime would do with a session's notices: nothing here.
struct Ignore final : fedcl::ConnectionListener {
  void on_notice(fedcl::Connection &, wire::Notice::Reader) override {}
  void on_read_done(fedcl::Connection &, wire::Completion::Reader) override {}
  void on_lost(fedcl::Connection &, const std::string &) override {}
  void on_transfer_chunk(fedcl::Connection &, uint64_t, uint64_t, std::unique_ptr<uint8_t[]>, uint64_t) override {}
  uint8_t *landing_for(uint64_t, uint64_t, uint64_t) override { return nullptr; }
};

// A daemon's refusal of a Resume.
std::vector<uint8_t> refusal() {
  capnp::MallocMessageBuilder message;
  auto reply = message.initRoot<wire::Reply>();
  reply.setStatus(CL_INVALID_PLATFORM);
  reply.setMessage("the fuzz target's daemon resumes nothing");
  std::vector<uint8_t> frame;
  fedcl::frame_append(frame, wire::FrameKind::REPLY, message, 0);
  return frame;
}

// Where the input's first two replies end (the daemon's answers to Hello and to the proof), by
// the frames' headers alone; past a header that is not valid nothing more is told apart.
std::vector<size_t> reply_ends(const uint8_t *input, size_t size) {
  std::vector<size_t> ends;
  size_t at = 0;
  while (ends.size() < 2 && at + sizeof(fedcl::FrameHeader) <= size) {
    fedcl::FrameHeader header;
    std::memcpy(&header, input + at, sizeof header);
    if (!fedcl::frame_check(header).empty()) break;
    uint64_t length = sizeof header + uint64_t(header.message_words) * sizeof(capnp::word) + header.payload_bytes +
                      fedcl::frame_padding(header.payload_bytes);
    if (length > size - at) break;
    at += size_t(length);
    if (header.kind == uint16_t(wire::FrameKind::REPLY)) ends.push_back(at);
  }
  return ends;
}

// Counts the whole frames a client sent (its requests) from the bytes it sends, in pieces.
struct RequestCount {
  size_t frames = 0;
  uint8_t header[sizeof(fedcl::FrameHeader)];
  size_t have = 0;
  uint64_t skip = 0;
  void take(const uint8_t *bytes, size_t size) {
    while (size > 0) {
      if (skip > 0) {
        size_t n = size_t(std::min<uint64_t>(skip, size));
        skip -= n, bytes += n, size -= n;
        if (skip == 0) frames++;
        continue;
      }
      header[have++] = *bytes++, size--;
      if (have < sizeof header) continue;
      have = 0;
      fedcl::FrameHeader frame;
      std::memcpy(&frame, header, sizeof frame);
      skip = uint64_t(frame.message_words) * sizeof(capnp::word) + frame.payload_bytes + fedcl::frame_padding(frame.payload_bytes);
      if (skip == 0) frames++;
    }
  }
};

// Sends all of bytes; false once the client closed its end.
bool send_all(int fd, const uint8_t *bytes, size_t size) {
  while (size > 0) {
    ssize_t sent = send(fd, bytes, size, MSG_NOSIGNAL);
    if (sent <= 0) return false;
    bytes += sent;
    size -= size_t(sent);
  }
  return true;
}

// What the fake daemon sends on the client's first connection: the input, in parts as a daemon
// answers. The bytes up to and including the first reply go once the client's Hello is there, up
// to the second reply once its proof is (a reply before its request would race with the client's
// bookkeeping of what it sent: an answer to a request never sent ends the connection), the rest once
// the client's open() has returned (opened readable). Any part goes once the client closed its end.
// Then the end of the daemon's stream, and what the client sends is read until it closes, so that
// closing sends no reset that could cut off bytes the client has not read yet. Until stop is readable.
void answer(int fd, const uint8_t *input, size_t size, int opened, int stop) {
  std::vector<size_t> ends = reply_ends(input, size);
  ends.push_back(size);
  RequestCount requests;
  bool closed = false, open_returned = false;
  size_t sent = 0;
  for (size_t part = 0; part < ends.size() || !closed;) {
    if (part < ends.size() && (requests.frames > part || open_returned || closed)) {
      if (!closed && !send_all(fd, input + sent, ends[part] - sent)) closed = true;
      sent = ends[part++];
      if (part == ends.size()) shutdown(fd, SHUT_WR);
      continue;
    }
    pollfd ready[3] = {{fd, POLLIN, 0}, {opened, POLLIN, 0}, {stop, POLLIN, 0}};
    if (poll(ready, 3, -1) < 0 || ready[2].revents) return;
    if (ready[1].revents) open_returned = true;
    if (ready[0].revents) {
      uint8_t bytes[4096];
      ssize_t got = recv(fd, bytes, sizeof bytes, 0);
      if (got <= 0) closed = true;
      else requests.take(bytes, size_t(got));
    }
  }
}

// The fake daemon: the first connection gets the input (answer), every later one the refusal of a
// Resume, then the end of the stream, and is read until the client closes it. Until stop is readable.
void serve(const uint8_t *input, size_t size, int opened, int stop) {
  static const std::vector<uint8_t> refused = refusal();
  for (bool first = true;; first = false) {
    pollfd ready[2] = {{g_listener, POLLIN, 0}, {stop, POLLIN, 0}};
    if (poll(ready, 2, -1) < 0 || ready[1].revents) return;
    int fd = accept4(g_listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    if (first) {
      answer(fd, input, size, opened, stop);
    } else {
      send_all(fd, refused.data(), refused.size());
      shutdown(fd, SHUT_WR);
      uint8_t sink[4096];
      for (;;) {
        pollfd drain[2] = {{fd, POLLIN, 0}, {stop, POLLIN, 0}};
        if (poll(drain, 2, -1) < 0 || drain[1].revents || recv(fd, sink, sizeof sink, 0) <= 0) break;
      }
    }
    close(fd);
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  // Kernel printf output in the input's notices goes to the client's stdout.
  if (!std::freopen("/dev/null", "w", stdout)) fail("cannot silence stdout");
  g_listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  if (g_listener < 0 || bind(g_listener, reinterpret_cast<sockaddr *>(&address), sizeof address) != 0 ||
      listen(g_listener, 8) != 0 || getsockname(g_listener, reinterpret_cast<sockaddr *>(&address), &length) != 0)
    fail("cannot listen on loopback");
  g_port = ntohs(address.sin_port);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0) return 0;
  fedcl::Credentials credentials;
  if (data[0] & 1) {
    credentials.user = "alice";
    credentials.key = fedcl::Secret("fuzz-key");
  }
  int opened[2], stop[2];
  if (pipe2(opened, O_CLOEXEC) != 0 || pipe2(stop, O_CLOEXEC) != 0) fail("pipe");
  std::thread daemon(serve, data + 1, size - 1, opened[0], stop[0]);
  {
    Ignore ignore;
    fedcl::Connection connection(0, "127.0.0.1:" + std::to_string(g_port), 0, &ignore);
    connection.open(kHandshakeMs, credentials);
    if (write(opened[1], "", 1) != 1) fail("cannot tell the fake daemon");
    // The daemon's stream ends: the client's receiver finds that (after a Resume refused, if it
    // resumes) and gives the connection up.
    auto until = std::chrono::steady_clock::now() + kEndLimit;
    while (connection.alive()) {
      if (std::chrono::steady_clock::now() > until) fail("the client did not give up a connection whose daemon ended it");
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
  if (write(stop[1], "", 1) != 1) fail("cannot stop the fake daemon");
  daemon.join();
  for (int fd : {opened[0], opened[1], stop[0], stop[1]}) close(fd);
  return 0;
}
