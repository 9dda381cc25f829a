// The daemon against clients that misbehave: a wrong version, garbage, a client that vanishes.
// Each of these must end that one session and leave the daemon serving everyone else.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <thread>

#include "cl_harness.h"
#include "raw_session.h"

using namespace fedcl_test;

TEST(Protocol, WrongVersionIsRefusedNamingBothVersions) {
  DaemonProcess daemon;
  RawSession raw(daemon.port());
  const uint32_t theirs = fedcl::wire::PROTOCOL_VERSION + 41;
  ASSERT_TRUE(raw.send_hello(theirs, 5));
  ReceivedFrame frame;
  ASSERT_TRUE(raw.read_frame(&frame)) << "no answer to a Hello of another version";
  ASSERT_EQ(uint16_t(fedcl::wire::FrameKind::REPLY), frame.header.kind);
  auto reply = frame.reader->getRoot<fedcl::wire::Reply>();
  EXPECT_EQ(5u, reply.getSeq());
  EXPECT_NE(CL_SUCCESS, reply.getStatus());
  std::string message = reply.getMessage();
  EXPECT_NE(std::string::npos, message.find(std::to_string(theirs))) << message;
  EXPECT_NE(std::string::npos, message.find(std::to_string(fedcl::wire::PROTOCOL_VERSION))) << message;
  EXPECT_NE(std::string::npos, message.find("version")) << message;
  EXPECT_TRUE(raw.wait_closed()) << "the refused session stayed open";
  EXPECT_TRUE(daemon.alive());
}

TEST(Protocol, RightVersionIsGreetedWithDevices) {
  DaemonProcess daemon({"--name", "raw-node"});
  RawSession raw(daemon.port());
  ASSERT_TRUE(raw.send_hello(fedcl::wire::PROTOCOL_VERSION, 9));
  ReceivedFrame frame;
  ASSERT_TRUE(raw.read_frame(&frame));
  auto reply = frame.reader->getRoot<fedcl::wire::Reply>();
  EXPECT_EQ(9u, reply.getSeq());
  EXPECT_EQ(CL_SUCCESS, reply.getStatus());
  ASSERT_EQ(fedcl::wire::Reply::HELLO, reply.which());
  EXPECT_EQ("raw-node", std::string(reply.getHello().getNode().cStr()));
  ASSERT_GE(reply.getHello().getPlatforms().size(), 1u);
  EXPECT_GE(reply.getHello().getPlatforms()[0].getDevices().size(), 1u);
}

TEST(Protocol, GarbageClosesOnlyThatSession) {
  Cluster cluster(1);
  int port = cluster.daemons[0]->port();
  expect_runtime_session_works(cluster, 512);

  // Bytes that are no frame at all.
  RawSession garbage(port);
  const char noise[] = "GET / HTTP/1.1\r\nHost: fedcl\r\n\r\n";
  ASSERT_TRUE(garbage.send_bytes(noise, sizeof noise));
  EXPECT_TRUE(garbage.wait_closed());

  // A valid header around a message that is not Cap'n Proto.
  RawSession corrupt(port);
  ASSERT_TRUE(corrupt.send_hello(fedcl::wire::PROTOCOL_VERSION));
  ReceivedFrame greeting;
  ASSERT_TRUE(corrupt.read_frame(&greeting));
  fedcl::FrameHeader header{};
  header.message_words = 4;
  header.kind = uint16_t(fedcl::wire::FrameKind::REQUEST);
  uint8_t frame[sizeof header + 32];
  std::memcpy(frame, &header, sizeof header);
  std::memset(frame + sizeof header, 0xff, 32);
  ASSERT_TRUE(corrupt.send_bytes(frame, sizeof frame));
  EXPECT_TRUE(corrupt.wait_closed());

  // A header announcing an impossible size.
  RawSession huge(port);
  header.message_words = 0xffffffffu;
  ASSERT_TRUE(huge.send_bytes(&header, sizeof header));
  EXPECT_TRUE(huge.wait_closed());

  // A request before Hello.
  RawSession rude(port);
  capnp::MallocMessageBuilder message;
  message.initRoot<fedcl::wire::Request>().setFlush(1);
  ASSERT_TRUE(rude.send_request(message));
  EXPECT_TRUE(rude.wait_closed());

  ASSERT_TRUE(cluster.daemons[0]->alive());
  expect_runtime_session_works(cluster, 2048);  // the runtime's session was never disturbed
}

// A payload is checked against its request before fedcld takes memory for it. A write whose frame
// declares more bytes than the write, a payload with a request that takes none and a transfer chunk
// larger than any chunk each end that session at once, with the reason in the log. Before, the
// worker set the declared memory aside (up to the wire's 1 TiB) and waited for the bytes, and the
// request was looked at only once they had come. (A payload larger than the session may hold is
// read past and its request fails: Isolation.ASessionsLimitsAreItsWorkersOwn.)
TEST(Protocol, APayloadIsCheckedAgainstItsRequestBeforeItIsTaken) {
  StderrCapture capture;
  DaemonProcess daemon;
  struct Case {
    uint64_t payload;
    void (*fill)(fedcl::wire::Request::Builder request);
    std::string logged;
  };
  const Case cases[] = {
      {uint64_t(8) << 30, [](fedcl::wire::Request::Builder r) { r.initWriteBuffer().setSize(16); },
       "a payload of 8589934592 bytes with a request for 16"},
      {4096, [](fedcl::wire::Request::Builder r) { r.setFlush(1); }, "a payload with a request that takes none"},
      {16u << 20, [](fedcl::wire::Request::Builder r) { r.initTransferData().setTransfer(1); },
       "a payload of 16777216 bytes with a request for 4194304 at most"},
  };
  for (const Case &c : cases) {
    RawSession raw(daemon.port(), 5000);
    ASSERT_TRUE(raw.send_hello(fedcl::wire::PROTOCOL_VERSION));
    ReceivedFrame greeting;
    ASSERT_TRUE(raw.read_frame(&greeting));
    capnp::MallocMessageBuilder message;
    auto request = message.initRoot<fedcl::wire::Request>();
    request.setSeq(2);
    c.fill(request);
    std::vector<uint8_t> bytes;
    fedcl::frame_append(bytes, fedcl::wire::FrameKind::REQUEST, message, c.payload);
    ASSERT_TRUE(raw.send_bytes(bytes.data(), bytes.size()));
    EXPECT_TRUE(raw.wait_closed()) << "still waiting for the payload: " << c.logged;
  }
  ASSERT_TRUE(daemon.alive());
  daemon.stop();
  std::string log = capture.text();
  for (const Case &c : cases) EXPECT_NE(std::string::npos, log.find("refused a payload: " + c.logged)) << log;
}

// No libfedcl sends IL (no fedcl device reports an IL version), but fedcld forwards it to the backend
// off the session's loop: a module the backend refuses fails its request with the backend's error,
// and the session goes on.
TEST(Protocol, AnILProgramTheBackendRefusesFailsItsRequestAlone) {
  DaemonProcess daemon;
  RawSession raw(daemon.port());
  ASSERT_TRUE(raw.send_hello(fedcl::wire::PROTOCOL_VERSION, 1));
  ReceivedFrame frame;
  ASSERT_TRUE(raw.read_frame(&frame));
  auto send = [&](auto fill) {
    capnp::MallocMessageBuilder message;
    fill(message.initRoot<fedcl::wire::Request>());
    return raw.send_request(message);
  };
  // The reply to seq; notices before it are passed over.
  auto reply_to = [&](uint64_t seq, ReceivedFrame *received) {
    while (raw.read_frame(received))
      if (received->header.kind == uint16_t(fedcl::wire::FrameKind::REPLY) &&
          received->reader->getRoot<fedcl::wire::Reply>().getSeq() == seq)
        return true;
    return false;
  };
  const uint64_t context = fedcl::wire::FIRST_CLIENT_ID + 1, program = fedcl::wire::FIRST_CLIENT_ID + 2;
  ASSERT_TRUE(send([&](fedcl::wire::Request::Builder r) {
    auto c = r.initCreateContext();
    c.setId(context);
    c.initDevices(1).set(0, 1);
  }));
  const uint32_t not_spirv[] = {0xdeadbeef, 0, 0, 0, 0};
  ASSERT_TRUE(send([&](fedcl::wire::Request::Builder r) {
    r.setSeq(2);
    auto il = r.initCreateProgramWithIL();
    il.setId(program);
    il.setContext(context);
    il.setIl(kj::arrayPtr(reinterpret_cast<const kj::byte *>(not_spirv), sizeof not_spirv));
  }));
  ASSERT_TRUE(reply_to(2, &frame));
  auto refused = frame.reader->getRoot<fedcl::wire::Reply>();
  EXPECT_NE(CL_SUCCESS, refused.getStatus());
  EXPECT_NE(std::string::npos, std::string(refused.getMessage().cStr()).find("clCreateProgramWithIL"))
      << refused.getMessage().cStr();
  // The session serves on: its context answers a query.
  ASSERT_TRUE(send([&](fedcl::wire::Request::Builder r) {
    r.setSeq(3);
    auto info = r.initGetInfo();
    info.setKind(fedcl::wire::InfoKind::CONTEXT);
    info.setObject(context);
    info.setParam(CL_CONTEXT_NUM_DEVICES);
  }));
  ASSERT_TRUE(reply_to(3, &frame));
  auto answered = frame.reader->getRoot<fedcl::wire::Reply>();
  EXPECT_EQ(CL_SUCCESS, answered.getStatus());
  cl_uint devices = 0;
  ASSERT_EQ(sizeof devices, answered.getInfo().size());
  std::memcpy(&devices, answered.getInfo().begin(), sizeof devices);
  EXPECT_EQ(1u, devices);
  EXPECT_TRUE(daemon.alive());
}

TEST(Protocol, ClientThatDiesMidSessionLeavesTheDaemonServing) {
  DaemonProcess daemon;
  set_hosts(daemon.endpoint());
  // The parent has made no OpenCL call yet, so the child starts with no runtime threads to lose.
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) _exit(launch_and_abandon(1 << 20, 20, false));
  int status = 0;
  ASSERT_EQ(child, waitpid(child, &status, 0));
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the child failed before exiting: " << status;
  ASSERT_TRUE(daemon.alive());

  cl_int err;
  std::vector<cl_device_id> devices = fedcl_devices(fedcl_platform(), &err);
  ASSERT_CL_OK(err);
  cl_context context = clCreateContext(nullptr, 1, devices.data(), nullptr, nullptr, &err);
  ASSERT_CL_OK(err);
  expect_vector_add(context, create_queue(context, devices[0]), 10000);
  EXPECT_TRUE(daemon.alive());
}

