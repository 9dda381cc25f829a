// The daemon against peer links that misbehave: a wrong key, the wrong daemon, a session that is not
// there, messages before the handshake, a peer that falls silent. Each must end that one link and
// leave the daemon serving. A link is for one session of the daemon (a client's, opened here first).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <chrono>
#include <fstream>
#include <stdexcept>
#include <thread>
#include <utility>

#include "auth.h"
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

// The dialling side's session at its end, as the peer hellos below name it.
constexpr uint64_t kFromSession = 0x5e55;

bool send_peer_hello(RawSession &raw, uint64_t instance, uint64_t expect, uint64_t session, const fedcl::Nonce &nonce) {
  capnp::MallocMessageBuilder message;
  auto hello = message.initRoot<wire::PeerMessage>().initHello();
  hello.setProtocolVersion(wire::PROTOCOL_VERSION);
  hello.setInstance(instance);
  hello.setExpect(expect);
  hello.setNonce(fedcl::as_data(nonce));
  hello.setSession(session);
  hello.setFromSession(kFromSession);
  return send_peer(raw, message);
}

// What the proofs sign: the two daemons and the two sessions (bridge-daemon/peer_handshake.cpp).
std::string peer_identity(uint64_t dialling, uint64_t answering, uint64_t session) {
  char text[96];
  std::snprintf(text, sizeof text, "%016llx>%016llx:%016llx>%016llx", (unsigned long long)dialling,
                (unsigned long long)answering, (unsigned long long)kFromSession, (unsigned long long)session);
  return text;
}

// A dialling daemon's side of the peer handshake, by hand: hello, and on a daemon with a key
// (keyed), the proof its challenge asks for, under key (empty when key is empty). *daemon_proof
// gets what the daemon must then prove.
bool peer_handshake(RawSession &raw, const std::string &key, uint64_t instance, uint64_t expect, uint64_t session,
                    fedcl::Proof *daemon_proof = nullptr, bool keyed = true) {
  fedcl::Nonce nonce = fedcl::fresh_nonce();
  if (!send_peer_hello(raw, instance, expect, session, nonce)) return false;
  if (!keyed) return true;
  ReceivedFrame frame;
  if (!raw.read_frame(&frame)) return false;
  auto challenge = frame.reader->getRoot<wire::PeerMessage>();
  if (challenge.which() != wire::PeerMessage::CHALLENGE) return false;
  std::string identity = peer_identity(instance, expect, session);
  auto their_nonce = challenge.getChallenge().getNonce();
  capnp::MallocMessageBuilder message;
  auto proof = message.initRoot<wire::PeerMessage>().initProof();
  if (!key.empty())
    proof.setProof(fedcl::as_data(fedcl::auth_proof(key, fedcl::AuthRole::dialling_peer, their_nonce, fedcl::as_data(nonce), identity, {})));
  if (daemon_proof) *daemon_proof = fedcl::auth_proof(key, fedcl::AuthRole::answering_peer, their_nonce, fedcl::as_data(nonce), identity, {});
  return send_peer(raw, message);
}

// A client's session on the daemon, for a peer link to name: the daemon's instance and the
// session's token, as the Hello reply gives them. The session lasts as long as this.
struct ServedSession {
  std::unique_ptr<RawSession> client;
  uint64_t instance = 0, token = 0;
};

ServedSession open_session(int port, const std::string &key = "") {
  ServedSession served{std::make_unique<RawSession>(port)};
  ReceivedFrame frame;
  if (!served.client->handshake("", key, &frame)) return served;
  auto reply = frame.reader->getRoot<wire::Reply>();
  if (reply.which() != wire::Reply::HELLO) return served;
  served.instance = reply.getHello().getInstance();
  served.token = reply.getHello().getSessionToken();
  return served;
}

// Reads the daemon's answer to a peer hello.
bool read_welcome(RawSession &raw, cl_int *status, std::string *message, uint64_t *instance = nullptr,
                  const fedcl::Proof *expected_proof = nullptr) {
  ReceivedFrame frame;
  if (!raw.read_frame(&frame) || frame.header.kind != uint16_t(wire::FrameKind::PEER)) return false;
  auto peer = frame.reader->getRoot<wire::PeerMessage>();
  if (peer.which() != wire::PeerMessage::WELCOME) return false;
  *status = peer.getWelcome().getStatus();
  *message = peer.getWelcome().getMessage();
  if (instance) *instance = peer.getWelcome().getInstance();
  if (expected_proof) {
    EXPECT_TRUE(fedcl::auth_proof_matches(*expected_proof, peer.getWelcome().getProof()))
        << "the daemon did not prove it holds the cluster key";
  }
  return true;
}

// Asks the daemon of served's session whether it can link to the session `session` of instance at
// address (Request.peerConnect, as the runtime asks before an MPI transfer goes direct): the
// reply's status and message.
std::pair<cl_int, std::string> peer_connect(ServedSession &served, uint64_t instance, const std::string &address) {
  capnp::MallocMessageBuilder message;
  auto request = message.initRoot<wire::Request>();
  request.setSeq(7);
  auto ref = request.initPeerConnect();
  ref.setInstance(instance);
  ref.setAddress(address);
  ref.setSession(0x5e55);
  if (!served.client->send_request(message)) return {CL_SUCCESS, "the session is gone"};
  for (;;) {
    ReceivedFrame frame;
    if (!served.client->read_frame(&frame)) return {CL_SUCCESS, "no reply"};
    if (frame.header.kind != uint16_t(wire::FrameKind::REPLY)) continue;  // heartbeats
    auto reply = frame.reader->getRoot<wire::Reply>();
    if (reply.getSeq() == 7) return {reply.getStatus(), reply.getMessage()};
  }
}

// A listening socket on a free loopback port that accepts nothing by itself.
struct Listening {
  Listening() {
    fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (fd < 0 || bind(fd, reinterpret_cast<sockaddr *>(&addr), sizeof addr) != 0 || listen(fd, 8) != 0 ||
        getsockname(fd, reinterpret_cast<sockaddr *>(&addr), &len) != 0)
      throw std::runtime_error("cannot listen on loopback");
    port = ntohs(addr.sin_port);
  }
  ~Listening() { close(fd); }
  // Whether a connection came within timeout (it is closed at once).
  bool dialled(std::chrono::milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    do {
      int connection = accept(fd, nullptr, nullptr);
      if (connection >= 0) {
        close(connection);
        return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    } while (std::chrono::steady_clock::now() < deadline);
    return false;
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(port); }
  int fd = -1;
  int port = 0;
};

}  // namespace

TEST(PeerProtocol, AHandshakeWithTheRightKeyIsWelcomedAndKeptAlive) {
  std::string key_file = ::testing::TempDir() + "fedcl_peer_key";
  std::ofstream(key_file) << "cluster-secret-0123\n";
  DaemonProcess daemon({"--key-file", key_file, "--peer-timeout", "2"});
  ServedSession served = open_session(daemon.port(), "cluster-secret-0123");
  uint64_t instance = served.instance;
  ASSERT_NE(0u, instance);
  RawSession raw(daemon.port(), 5000);
  fedcl::Proof daemon_proof;
  ASSERT_TRUE(peer_handshake(raw, "cluster-secret-0123", 0x1234, instance, served.token, &daemon_proof));
  cl_int status = -1;
  std::string message;
  uint64_t answered = 0;
  ASSERT_TRUE(read_welcome(raw, &status, &message, &answered, &daemon_proof));
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
  EXPECT_TRUE(daemon.alive());
}

// A user's key is not the daemons' key: a user who holds it (any user, with a shared --key-file)
// cannot pose as a daemon on a peer link and inject data into another user's session.
TEST(PeerProtocol, AUsersKeyDoesNotOpenAPeerLink) {
  std::string users_key = ::testing::TempDir() + "fedcl_peer_users_key";
  std::string daemons_key = ::testing::TempDir() + "fedcl_peer_daemons_key";
  std::ofstream(users_key) << "the-users-shared-key\n";
  std::ofstream(daemons_key) << "the-daemons-own-key-9\n";
  DaemonProcess daemon({"--key-file", users_key, "--peer-key-file", daemons_key});
  ServedSession served = open_session(daemon.port(), "the-users-shared-key");
  ASSERT_NE(0u, served.instance) << "a client with the users' key gets a session";
  {
    RawSession raw(daemon.port());
    ASSERT_TRUE(peer_handshake(raw, "the-users-shared-key", 0x1234, served.instance, served.token));
    cl_int status = CL_SUCCESS;
    std::string message;
    ASSERT_TRUE(read_welcome(raw, &status, &message));
    EXPECT_NE(CL_SUCCESS, status);
    EXPECT_NE(std::string::npos, message.find("daemons' key")) << message;
    EXPECT_TRUE(raw.wait_closed());
  }
  RawSession raw(daemon.port());
  fedcl::Proof daemon_proof;
  ASSERT_TRUE(peer_handshake(raw, "the-daemons-own-key-9", 0x1234, served.instance, served.token, &daemon_proof));
  cl_int status = -1;
  std::string message;
  ASSERT_TRUE(read_welcome(raw, &status, &message, nullptr, &daemon_proof));
  EXPECT_EQ(CL_SUCCESS, status) << message;
}

TEST(PeerProtocol, AWrongKeyOrTheWrongDaemonIsRefused) {
  std::string key_file = ::testing::TempDir() + "fedcl_peer_key2";
  std::ofstream(key_file) << "cluster-secret-0123\n";
  DaemonProcess daemon({"--key-file", key_file});
  ServedSession served = open_session(daemon.port(), "cluster-secret-0123");
  uint64_t instance = served.instance;
  ASSERT_NE(0u, instance);
  for (std::string key : {"a-guess-0123456789", ""}) {  // a wrong key, and none
    RawSession raw(daemon.port());
    ASSERT_TRUE(peer_handshake(raw, key, 0x1234, instance, served.token));
    cl_int status = CL_SUCCESS;
    std::string message;
    ASSERT_TRUE(read_welcome(raw, &status, &message));
    EXPECT_NE(CL_SUCCESS, status);
    EXPECT_NE(std::string::npos, message.find("key")) << message;
    EXPECT_TRUE(raw.wait_closed());
  }
  {  // The key itself, as older daemons sent it, is refused even when right.
    RawSession raw(daemon.port());
    capnp::MallocMessageBuilder hello;
    auto fields = hello.initRoot<wire::PeerMessage>().initHello();
    fields.setProtocolVersion(wire::PROTOCOL_VERSION);
    fields.setKey("cluster-secret-0123");
    fields.setInstance(0x1234);
    fields.setExpect(instance);
    fields.setSession(served.token);
    ASSERT_TRUE(send_peer(raw, hello));
    cl_int status = CL_SUCCESS;
    std::string message;
    ASSERT_TRUE(read_welcome(raw, &status, &message));
    EXPECT_NE(CL_SUCCESS, status);
    EXPECT_NE(std::string::npos, message.find("in the clear")) << message;
  }
  // The wrong daemon, or a session that is not there (a link for one that ended, or a guess): told
  // so once the peer proved the key, not before (PeerProtocol.AHelloLearnsNothingBeforeItsProofHolds).
  struct Case {
    uint64_t expect, session;
    const char *told;
  };
  for (const Case &c : {Case{instance + 1, served.token, "not the daemon"}, Case{instance, served.token + 1, "not (or no longer) served here"}}) {
    RawSession raw(daemon.port());
    ASSERT_TRUE(peer_handshake(raw, "cluster-secret-0123", 0x1234, c.expect, c.session));
    cl_int status = CL_SUCCESS;
    std::string message;
    ASSERT_TRUE(read_welcome(raw, &status, &message));
    EXPECT_NE(CL_SUCCESS, status);
    EXPECT_NE(std::string::npos, message.find(c.told)) << message;
    EXPECT_TRUE(raw.wait_closed());
  }
  EXPECT_TRUE(daemon.alive());
}

// The tenants' finding: a PeerHello without any proof learnt the daemon's instance (in every
// welcome) and whether a session token is served here, before any challenge.
TEST(PeerProtocol, AHelloLearnsNothingBeforeItsProofHolds) {
  std::string key_file = ::testing::TempDir() + "fedcl_peer_key3";
  std::ofstream(key_file) << "cluster-secret-0123\n";
  DaemonProcess daemon({"--key-file", key_file});
  ServedSession served = open_session(daemon.port(), "cluster-secret-0123");
  ASSERT_NE(0u, served.instance);
  // A stranger names the wrong instance, a served token and one that is not: each gets a challenge
  // alike, and a wrong proof a refusal that names no instance and says nothing of either.
  for (uint64_t expect : {served.instance + 1, served.instance}) {
    for (uint64_t token : {served.token, served.token + 1}) {
      RawSession raw(daemon.port());
      fedcl::Nonce nonce = fedcl::fresh_nonce();
      ASSERT_TRUE(send_peer_hello(raw, 0x1234, expect, token, nonce));
      ReceivedFrame frame;
      ASSERT_TRUE(raw.read_frame(&frame));
      auto first = frame.reader->getRoot<wire::PeerMessage>();
      ASSERT_EQ(wire::PeerMessage::CHALLENGE, first.which())
          << "answered before a proof: " << (first.which() == wire::PeerMessage::WELCOME ? first.getWelcome().getMessage().cStr() : "");
      capnp::MallocMessageBuilder message;
      message.initRoot<wire::PeerMessage>().initProof().setProof(fedcl::as_data(fedcl::auth_proof(
          "a-guess-0123456789", fedcl::AuthRole::dialling_peer, first.getChallenge().getNonce(), fedcl::as_data(nonce),
          peer_identity(0x1234, expect, token), {})));
      ASSERT_TRUE(send_peer(raw, message));
      cl_int status = CL_SUCCESS;
      std::string text;
      uint64_t told_instance = 1;
      ASSERT_TRUE(read_welcome(raw, &status, &text, &told_instance));
      EXPECT_NE(CL_SUCCESS, status);
      EXPECT_EQ(0u, told_instance) << "a refused peer learnt the daemon's instance";
      EXPECT_EQ("wrong or missing key: the peer's proof does not match the daemons' key", text);
    }
  }
  EXPECT_TRUE(daemon.alive());
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
    ServedSession served = open_session(port);
    RawSession raw(port);
    ASSERT_TRUE(peer_handshake(raw, "", 0x77, served.instance, served.token, nullptr, false));
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
  ASSERT_TRUE(cluster.daemons[0]->alive());
  expect_runtime_session_works(cluster, 1024);
}

// A signal carries at most wire::SIGNAL_DATA_MAX_BYTES (SignalPeer.data): one announcing more closes
// its link before a byte of it is taken, and one carrying bytes for a stand-in that expects none (or
// for no session) is dropped; the daemon goes on serving.
TEST(PeerProtocol, SignalsCarryingTooMuchCloseOnlyThatLink) {
  Cluster cluster(1);
  int port = cluster.daemons[0]->port();
  ServedSession served = open_session(port);
  auto link = [&](std::unique_ptr<RawSession> *raw) {
    *raw = std::make_unique<RawSession>(port);
    ASSERT_TRUE(peer_handshake(**raw, "", 0x77, served.instance, served.token, nullptr, false));
    cl_int status = -1;
    std::string text;
    ASSERT_TRUE(read_welcome(**raw, &status, &text));
    ASSERT_EQ(CL_SUCCESS, status) << text;
  };
  auto signal_frame = [&](uint64_t payload_bytes) {
    capnp::MallocMessageBuilder message;
    auto s = message.initRoot<wire::PeerMessage>().initSignal();
    s.setSession(served.token);
    s.setEvent(0x100000001);
    s.setStatus(CL_COMPLETE);
    std::vector<uint8_t> bytes;
    fedcl::frame_append(bytes, wire::FrameKind::PEER, message, payload_bytes);
    return bytes;
  };
  {
    std::unique_ptr<RawSession> raw;
    link(&raw);
    std::vector<uint8_t> small = signal_frame(64);
    small.resize(small.size() + 64, 0xab);
    ASSERT_TRUE(raw->send_bytes(small.data(), small.size()));
    // Still open: the daemon's heartbeat on the idle link comes (within a second or so).
    ReceivedFrame frame;
    ASSERT_TRUE(raw->read_frame(&frame)) << "a signal carrying bytes nothing expects closed the link";
    EXPECT_EQ(wire::PeerMessage::HEARTBEAT, frame.reader->getRoot<wire::PeerMessage>().which());
    std::vector<uint8_t> huge = signal_frame(wire::SIGNAL_DATA_MAX_BYTES + 8);
    ASSERT_TRUE(raw->send_bytes(huge.data(), huge.size()));
    EXPECT_TRUE(raw->wait_closed());
  }
  ASSERT_TRUE(cluster.daemons[0]->alive());
  expect_runtime_session_works(cluster, 1024);
}

// The tenants' finding: a client named any address as a peer's, and the main process dialled it and
// reported how it went ("connection refused", a timeout): a port scanner inside the cluster. A daemon
// with a key dials only an address that a daemon holding that key advertised (its tag comes with the
// address, HelloReply.peerAddressTag).
TEST(PeerProtocol, ADaemonWithAKeyDialsOnlyAddressesADaemonAdvertised) {
  std::string key_file = ::testing::TempDir() + "fedcl_peer_key4";
  std::ofstream(key_file) << "cluster-secret-0123\n";
  DaemonProcess daemon({"--key-file", key_file});
  ServedSession served = open_session(daemon.port(), "cluster-secret-0123");
  ASSERT_NE(0u, served.instance);
  Listening target;
  auto [status, message] = peer_connect(served, 0x1234, target.address());
  EXPECT_NE(CL_SUCCESS, status);
  EXPECT_NE(std::string::npos, message.find("was not advertised by a fedcld that holds this one's key")) << message;
  EXPECT_FALSE(target.dialled(std::chrono::milliseconds(500))) << "the daemon dialled an address no daemon advertised";
  int closed = closed_port();
  std::tie(status, message) = peer_connect(served, 0x1234, "127.0.0.1:" + std::to_string(closed));
  EXPECT_NE(std::string::npos, message.find("was not advertised")) << message;
  EXPECT_EQ(std::string::npos, message.find("refused")) << message;
  // A key list alone holds no daemons' key: such a daemon dials no peer at all.
  std::string list = ::testing::TempDir() + "fedcl_peer_users";
  std::ofstream(list) << "alice alices-key-0123456\n";
  DaemonProcess listed({"--key-list", list});
  ServedSession alice{std::make_unique<RawSession>(listed.port())};
  ReceivedFrame frame;
  ASSERT_TRUE(alice.client->handshake("alice", "alices-key-0123456", &frame));
  ASSERT_EQ(wire::Reply::HELLO, frame.reader->getRoot<wire::Reply>().which());
  std::tie(status, message) = peer_connect(alice, 0x1234, target.address());
  EXPECT_NE(std::string::npos, message.find("dials none")) << message;
  EXPECT_FALSE(target.dialled(std::chrono::milliseconds(200)));
}

// A daemon without keys takes anyone and dials what it is asked, but what happened past the dial
// is not told: a closed port and a port where something else listens read the same.
TEST(PeerProtocol, ADaemonWithoutKeysTellsOnlyThatNoFedcldAnsweredThere) {
  DaemonProcess daemon({"--peer-timeout", "2"});
  ServedSession served = open_session(daemon.port());
  ASSERT_NE(0u, served.instance);
  Listening other;
  std::thread closer([&] { other.dialled(std::chrono::seconds(10)); });
  auto [open_status, open_message] = peer_connect(served, 0x1234, other.address());
  closer.join();
  int closed = closed_port();
  auto [closed_status, closed_message] = peer_connect(served, 0x1234, "127.0.0.1:" + std::to_string(closed));
  EXPECT_NE(CL_SUCCESS, open_status);
  EXPECT_NE(CL_SUCCESS, closed_status);
  EXPECT_EQ("no link to the peer daemon: could not reach a fedcld at '" + other.address() + "'", open_message);
  EXPECT_EQ("no link to the peer daemon: could not reach a fedcld at '127.0.0.1:" + std::to_string(closed) + "'", closed_message);
  EXPECT_TRUE(daemon.alive());
}
