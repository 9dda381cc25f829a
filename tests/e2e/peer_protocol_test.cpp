// The daemon against peer links that misbehave: a wrong key, the wrong daemon, messages before the
// handshake, a peer that falls silent. Each must end that one link and leave the daemon serving.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>

#include "cl_harness.h"
#include "raw_session.h"

using namespace fedcl_test;
namespace wire = fedcl::wire;

namespace {

bool send_peer(RawSession &raw, capnp::MessageBuilder &message) {
  std::vector<uint8_t> bytes;
  fedcl::frame_append(bytes, wire::FrameKind::PEER, message, 0);
  return raw.send_bytes(bytes.data(), bytes.size());
}

bool send_peer_hello(RawSession &raw, const std::string &key, uint64_t instance, uint64_t expect) {
  capnp::MallocMessageBuilder message;
  auto hello = message.initRoot<wire::PeerMessage>().initHello();
  hello.setProtocolVersion(wire::PROTOCOL_VERSION);
  hello.setKey(key);
  hello.setInstance(instance);
  hello.setExpect(expect);
  return send_peer(raw, message);
}

// The daemon's instance, as a client's Hello reply gives it.
uint64_t daemon_instance(int port, const std::string &key = "") {
  RawSession client(port);
  capnp::MallocMessageBuilder message;
  auto hello = message.initRoot<wire::Request>();
  hello.setSeq(1);
  hello.initHello().setProtocolVersion(wire::PROTOCOL_VERSION);
  hello.getHello().setKey(key);
  if (!client.send_request(message)) return 0;
  ReceivedFrame frame;
  if (!client.read_frame(&frame)) return 0;
  auto reply = frame.reader->getRoot<wire::Reply>();
  return reply.which() == wire::Reply::HELLO ? reply.getHello().getInstance() : 0;
}

// Reads the daemon's answer to a peer hello.
bool read_welcome(RawSession &raw, cl_int *status, std::string *message, uint64_t *instance = nullptr) {
  ReceivedFrame frame;
  if (!raw.read_frame(&frame) || frame.header.kind != uint16_t(wire::FrameKind::PEER)) return false;
  auto peer = frame.reader->getRoot<wire::PeerMessage>();
  if (peer.which() != wire::PeerMessage::WELCOME) return false;
  *status = peer.getWelcome().getStatus();
  *message = peer.getWelcome().getMessage();
  if (instance) *instance = peer.getWelcome().getInstance();
  return true;
}

bool process_alive(pid_t pid) { return waitpid(pid, nullptr, WNOHANG) == 0; }

}  // namespace

TEST(PeerProtocol, AHandshakeWithTheRightKeyIsWelcomedAndKeptAlive) {
  std::string key_file = ::testing::TempDir() + "fedcl_peer_key";
  std::ofstream(key_file) << "cluster-secret\n";
  DaemonProcess daemon({"--key-file", key_file, "--peer-timeout", "2"});
  uint64_t instance = daemon_instance(daemon.port(), "cluster-secret");
  ASSERT_NE(0u, instance);
  RawSession raw(daemon.port(), 5000);
  ASSERT_TRUE(send_peer_hello(raw, "cluster-secret", 0x1234, instance));
  cl_int status = -1;
  std::string message;
  uint64_t answered = 0;
  ASSERT_TRUE(read_welcome(raw, &status, &message, &answered));
  EXPECT_EQ(CL_SUCCESS, status) << message;
  EXPECT_EQ(instance, answered);
  // An idle link carries a heartbeat every second.
  ReceivedFrame frame;
  ASSERT_TRUE(raw.read_frame(&frame)) << "no heartbeat on an idle link";
  EXPECT_EQ(wire::PeerMessage::HEARTBEAT, frame.reader->getRoot<wire::PeerMessage>().which());
  // A peer that never answers is dropped once the peer timeout has passed.
  auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(raw.wait_closed()) << "a silent peer link stayed open";
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_TRUE(process_alive(daemon.pid()));
}

TEST(PeerProtocol, AWrongKeyOrTheWrongDaemonIsRefused) {
  std::string key_file = ::testing::TempDir() + "fedcl_peer_key2";
  std::ofstream(key_file) << "cluster-secret\n";
  DaemonProcess daemon({"--key-file", key_file});
  uint64_t instance = daemon_instance(daemon.port(), "cluster-secret");
  ASSERT_NE(0u, instance);
  {
    RawSession raw(daemon.port());
    ASSERT_TRUE(send_peer_hello(raw, "guess", 0x1234, instance));
    cl_int status = CL_SUCCESS;
    std::string message;
    ASSERT_TRUE(read_welcome(raw, &status, &message));
    EXPECT_NE(CL_SUCCESS, status);
    EXPECT_NE(std::string::npos, message.find("key")) << message;
    EXPECT_TRUE(raw.wait_closed());
  }
  {
    RawSession raw(daemon.port());
    ASSERT_TRUE(send_peer_hello(raw, "cluster-secret", 0x1234, instance + 1));
    cl_int status = CL_SUCCESS;
    std::string message;
    ASSERT_TRUE(read_welcome(raw, &status, &message));
    EXPECT_NE(CL_SUCCESS, status);
    EXPECT_NE(std::string::npos, message.find("not the daemon")) << message;
    EXPECT_TRUE(raw.wait_closed());
  }
  EXPECT_TRUE(process_alive(daemon.pid()));
}

TEST(PeerProtocol, MessagesOutOfPlaceCloseOnlyThatConnection) {
  Cluster cluster(1);
  int port = cluster.daemons[0]->port();
  expect_runtime_session_works(cluster, 1024);

  // Data before the handshake.
  {
    RawSession raw(port);
    capnp::MallocMessageBuilder message;
    auto data = message.initRoot<wire::PeerMessage>().initData();
    data.setSession(1);
    data.setTransfer(1);
    ASSERT_TRUE(send_peer(raw, message));
    EXPECT_TRUE(raw.wait_closed());
  }
  // A peer message on a client session.
  {
    RawSession raw(port);
    ASSERT_TRUE(raw.send_hello(wire::PROTOCOL_VERSION));
    ReceivedFrame greeting;
    ASSERT_TRUE(raw.read_frame(&greeting));
    capnp::MallocMessageBuilder message;
    message.initRoot<wire::PeerMessage>().setHeartbeat();
    ASSERT_TRUE(send_peer(raw, message));
    EXPECT_TRUE(raw.wait_closed());
  }
  // A request on a peer link, and bytes for a session that does not exist.
  {
    uint64_t instance = daemon_instance(port);
    RawSession raw(port);
    ASSERT_TRUE(send_peer_hello(raw, "", 0x77, instance));
    cl_int status = -1;
    std::string text;
    ASSERT_TRUE(read_welcome(raw, &status, &text));
    ASSERT_EQ(CL_SUCCESS, status) << text;
    capnp::MallocMessageBuilder signal;
    auto s = signal.initRoot<wire::PeerMessage>().initSignal();
    s.setSession(0xdead);
    s.setEvent(0x100000001);
    ASSERT_TRUE(send_peer(raw, signal));
    capnp::MallocMessageBuilder request;
    request.initRoot<wire::Request>().setFlush(1);
    ASSERT_TRUE(raw.send_request(request));
    EXPECT_TRUE(raw.wait_closed());
  }
  ASSERT_TRUE(process_alive(cluster.daemons[0]->pid()));
  expect_runtime_session_works(cluster, 1024);
}
