// fedcld's main process against strangers: connections that have not proved themselves (yet). Idle
// connections past the open-file limit, a flood from one address, refusals by the hundred, names
// chosen to forge log lines, handshakes that never finish. Each must leave honest clients served and
// the log readable (docs/design-decisions.md, "Processes" and "Authentication").
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "auth.h"
#include "cl_harness.h"
#include "raw_session.h"

using namespace fedcl_test;
namespace wire = fedcl::wire;

namespace {

// This test process may hold as many connections as its hard limit allows.
void raise_own_open_files() {
  rlimit files{};
  getrlimit(RLIMIT_NOFILE, &files);
  files.rlim_cur = files.rlim_max;
  setrlimit(RLIMIT_NOFILE, &files);
}

// A connection to 127.0.0.1:port (from source when given) that says nothing; -1 if it could not.
int idle_connection(int port, const char *source = nullptr) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (source) {
    sockaddr_in from{};
    from.sin_family = AF_INET;
    inet_pton(AF_INET, source, &from.sin_addr);
    if (bind(fd, reinterpret_cast<sockaddr *>(&from), sizeof from) != 0) return close(fd), -1;
  }
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(uint16_t(port));
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr *>(&to), sizeof to) != 0) return close(fd), -1;
  return fd;
}

// The same to a daemon's local socket (docs/design-decisions.md, "Same node").
int idle_local_connection(const std::string &path) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un to{};
  to.sun_family = AF_UNIX;
  std::snprintf(to.sun_path, sizeof to.sun_path, "%s", path.c_str());
  if (fd >= 0 && connect(fd, reinterpret_cast<sockaddr *>(&to), sizeof to) != 0) return close(fd), -1;
  return fd;
}

// How many of fds the daemon has closed (EOF or reset), waiting up to timeout for at least want.
size_t closed_by_daemon(const std::vector<int> &fds, size_t want, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  size_t closed = 0;
  for (;;) {
    std::vector<pollfd> polls;
    for (int fd : fds) polls.push_back({fd, POLLIN, 0});
    poll(polls.data(), polls.size(), 0);
    closed = 0;
    for (const pollfd &p : polls) closed += (p.revents & (POLLIN | POLLHUP | POLLERR)) != 0;
    if (closed >= want || std::chrono::steady_clock::now() >= deadline) return closed;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

void close_all(std::vector<int> &fds) {
  for (int fd : fds) close(fd);
  fds.clear();
}

// An honest client's handshake on a daemon without keys: the HelloReply must come.
void expect_greeted(int port, const std::string &source = "") {
  RawSession raw(port, 10000, source);
  ReceivedFrame frame;
  ASSERT_TRUE(raw.handshake("", "", &frame)) << "no answer to an honest Hello";
  auto reply = frame.reader->getRoot<wire::Reply>();
  EXPECT_EQ(CL_SUCCESS, reply.getStatus()) << reply.getMessage().cStr();
  EXPECT_EQ(wire::Reply::HELLO, reply.which());
}

std::string write_key(const std::string &name, const std::string &key) {
  std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << key << "\n";
  return path;
}

}  // namespace

// The tenants' finding: nothing capped strangers' connections and fedcld kept the soft limit of
// 1024 open files, so 1,100 idle connections made every honest clinfo fail with "lost daemon". Here
// the daemon may open 256 files in all, and 400 idle connections come first.
TEST(Strangers, IdleConnectionsPastTheOpenFileLimitLeaveRoomForHonestClients) {
  raise_own_open_files();
  setenv("FEDCL_TEST_DAEMON_NOFILE", "256:256", 1);
  StderrCapture capture;
  DaemonProcess daemon({"--max-sessions", "8"});
  unsetenv("FEDCL_TEST_DAEMON_NOFILE");
  std::vector<int> idle;
  for (int i = 0; i < 400; i++) {
    int fd = idle_connection(daemon.port());
    ASSERT_GE(fd, 0) << "connection " << i;
    idle.push_back(fd);
  }
  for (int client = 0; client < 4; client++) expect_greeted(daemon.port());
  // And the real runtime, as clinfo would use it.
  set_hosts(daemon.endpoint());
  cl_int err = CL_SUCCESS;
  std::vector<cl_device_id> devices = fedcl_devices(fedcl_platform(), &err);
  ASSERT_CL_OK(err);
  ASSERT_FALSE(devices.empty());
  cl_context context = clCreateContext(nullptr, 1, &devices[0], nullptr, nullptr, &err);
  ASSERT_CL_OK(err);
  cl_command_queue queue = create_queue(context, devices[0]);
  expect_vector_add(context, queue, 1024);
  clReleaseCommandQueue(queue);
  clReleaseContext(context);
  size_t closed = closed_by_daemon(idle, 400 - 111, std::chrono::seconds(5));
  std::printf("idle connections closed by the daemon to make room: %zu of 400\n", closed);
  close_all(idle);
  EXPECT_TRUE(daemon.alive());
  daemon.stop();
  EXPECT_NE(std::string::npos, capture.text().find("closed to make room for a newer handshake"));
}

// A flood from one address closes that address's oldest handshakes, not another address's.
TEST(Strangers, AFloodFromOneAddressDoesNotPushOutAnotherAddresssHandshake) {
  raise_own_open_files();
  std::string key = write_key("fedcl_strangers_key", "stranger-test-key");
  DaemonProcess daemon({"--key-file", key, "--max-handshakes", "100", "--max-handshakes-per-address", "20"});
  // A client from 127.0.0.2 is mid-handshake: challenged, its proof not sent yet.
  RawSession other(daemon.port(), 10000, "127.0.0.2");
  fedcl::Nonce nonce = fedcl::fresh_nonce();
  capnp::MallocMessageBuilder hello;
  auto request = hello.initRoot<wire::Request>();
  request.setSeq(1);
  request.initHello().setProtocolVersion(wire::PROTOCOL_VERSION);
  request.getHello().setNonce(fedcl::as_data(nonce));
  request.getHello().setDaemon("127.0.0.1");
  ASSERT_TRUE(other.send_request(hello));
  ReceivedFrame frame;
  ASSERT_TRUE(other.read_frame(&frame));
  auto challenge = frame.reader->getRoot<wire::Reply>();
  ASSERT_EQ(wire::Reply::CHALLENGE, challenge.which());
  std::vector<int> flood;
  for (int i = 0; i < 200; i++) flood.push_back(idle_connection(daemon.port()));
  // The flood keeps 20: the rest were closed to make room, its own oldest first.
  EXPECT_GE(closed_by_daemon(flood, 180, std::chrono::seconds(5)), 180u);
  capnp::MallocMessageBuilder proof;
  auto answer = proof.initRoot<wire::Request>();
  answer.setSeq(2);
  answer.initAuthenticate().setProof(fedcl::as_data(fedcl::auth_proof(
      "stranger-test-key", fedcl::AuthRole::client, challenge.getChallenge().getNonce(), fedcl::as_data(nonce), "",
      fedcl::AuthBinding{{}, "127.0.0.1", {}})));
  ASSERT_TRUE(other.send_request(proof));
  ASSERT_TRUE(other.read_frame(&frame)) << "the handshake of 127.0.0.2 was closed by a flood from 127.0.0.1";
  EXPECT_EQ(wire::Reply::HELLO, frame.reader->getRoot<wire::Reply>().which());
  close_all(flood);
  // Past the total, the oldest of all go: ten addresses of 20 each leave 100 open.
  std::vector<int> wide;
  for (int source = 0; source < 10; source++)
    for (int i = 0; i < 20; i++) wide.push_back(idle_connection(daemon.port(), ("127.0.1." + std::to_string(source + 1)).c_str()));
  EXPECT_GE(closed_by_daemon(wide, 100, std::chrono::seconds(5)), 100u);
  RawSession fresh(daemon.port(), 10000, "127.0.0.3");
  ReceivedFrame last;
  ASSERT_TRUE(fresh.handshake("", "stranger-test-key", &last));
  EXPECT_EQ(wire::Reply::HELLO, last.reader->getRoot<wire::Reply>().which());
  close_all(wide);
  EXPECT_TRUE(daemon.alive());
}

// The finding: a warn and an info line per refusal (66 MB of log for 320,000 refused ClientHellos in
// a minute). Now one line per address and interval, and one more with the count of each kind.
TEST(Strangers, RefusalsFromOneAddressAreLoggedOncePerIntervalWithACount) {
  StderrCapture capture;
  DaemonProcess daemon;
  for (int i = 0; i < 150; i++) {
    RawSession raw(daemon.port());
    ASSERT_TRUE(raw.send_hello(1));
    ReceivedFrame frame;
    ASSERT_TRUE(raw.read_frame(&frame));
    EXPECT_NE(CL_SUCCESS, frame.reader->getRoot<wire::Reply>().getStatus());
  }
  for (int i = 0; i < 150; i++) {
    RawSession raw(daemon.port());
    const uint8_t garbage[16] = {0xff, 0xff, 0xff, 0xff, 9, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8};
    ASSERT_TRUE(raw.send_bytes(garbage, sizeof garbage));
    EXPECT_TRUE(raw.wait_closed());
  }
  expect_greeted(daemon.port());
  EXPECT_TRUE(daemon.alive());
  daemon.stop();
  std::string log = capture.text();
  size_t lines = count_occurrences(log, "(127.0.0.1:") + count_occurrences(log, "127.0.0.1: ");
  EXPECT_LE(lines, 4u) << log.substr(0, 4000);
  EXPECT_NE(std::string::npos, log.find("127.0.0.1: 299 more connections ended without a session")) << log.substr(0, 4000);
  EXPECT_NE(std::string::npos, log.find("150 malformed first frames, 149 other protocol versions")) << log.substr(0, 4000);
}

// The finding: the client's name and user went to the log as they came (a forged line and an
// escape sequence got through).
TEST(Strangers, AClientsNameAndUserAreLoggedEscaped) {
  StderrCapture capture;
  DaemonProcess daemon({"--log-level", "info"});
  {
    RawSession raw(daemon.port());
    capnp::MallocMessageBuilder message;
    auto request = message.initRoot<wire::Request>();
    request.setSeq(1);
    auto hello = request.initHello();
    hello.setProtocolVersion(wire::PROTOCOL_VERSION);
    hello.setClient("evil\nfedcld info: forged line\x1b[2J");
    hello.setUser("mallory\r\nfedcld warn: forged too");
    hello.setDaemon("127.0.0.1");
    ASSERT_TRUE(raw.send_request(message));
    ReceivedFrame frame;
    ASSERT_TRUE(raw.read_frame(&frame));
    EXPECT_EQ(wire::Reply::HELLO, frame.reader->getRoot<wire::Reply>().which());
  }
  daemon.stop();
  std::string log = capture.text();
  EXPECT_NE(std::string::npos, log.find("client 'evil\\x0afedcld info: forged line\\x1b[2J'")) << log;
  EXPECT_NE(std::string::npos, log.find("user 'mallory\\x0d\\x0afedcld warn: forged too'")) << log;
  EXPECT_EQ(std::string::npos, log.find("\nfedcld info: forged line")) << log;
  EXPECT_EQ(std::string::npos, log.find("\nfedcld warn: forged too")) << log;
  EXPECT_EQ(std::string::npos, log.find('\x1b')) << log;
}

// A stranger that says nothing is closed once its deadline passed: 5 s (it was 10 s).
TEST(Strangers, AConnectionThatSaysNothingIsClosedAfterFiveSeconds) {
  StderrCapture capture;
  DaemonProcess daemon({"--log-level", "info"});
  RawSession raw(daemon.port(), 15000);
  auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(raw.wait_closed());
  std::printf("closed after %.1f s\n", std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  daemon.stop();
  std::string log = capture.text();
  EXPECT_NE(std::string::npos, log.find("closed: no handshake within 5 s")) << log;
}

// Connections are file descriptors: fedcld takes all its hard limit allows.
TEST(Strangers, TheDaemonRaisesItsOpenFileLimitToTheHardLimit) {
  setenv("FEDCL_TEST_DAEMON_NOFILE", "256:4096", 1);
  DaemonProcess daemon;
  unsetenv("FEDCL_TEST_DAEMON_NOFILE");
  std::ifstream limits("/proc/" + std::to_string(daemon.pid()) + "/limits");
  std::string line, soft;
  while (std::getline(limits, line))
    if (line.rfind("Max open files", 0) == 0) std::istringstream(line.substr(14)) >> soft;
  EXPECT_EQ("4096", soft);
}

// The local socket's strangers are the main process's as TCP's are (caps, deadline, throttle, one
// log line per interval), and every connection of one user counts as one address, "local uid N",
// whatever its process: a flood there is capped per user and pushes out no TCP client's handshake.
TEST(Strangers, OnTheLocalSocketEachUserCountsAsOneAddress) {
  raise_own_open_files();
  StderrCapture capture;
  DaemonProcess daemon({"--max-handshakes", "100", "--max-handshakes-per-address", "20"});
  RawSession tcp(daemon.port());  // connected first: the oldest handshake of all
  std::vector<int> flood;
  for (int i = 0; i < 60; i++) {
    flood.push_back(idle_local_connection(daemon.local_socket()));
    ASSERT_GE(flood.back(), 0) << "connection " << i;
  }
  EXPECT_GE(closed_by_daemon(flood, 40, std::chrono::seconds(5)), 40u);
  ReceivedFrame frame;
  ASSERT_TRUE(tcp.handshake("", "", &frame)) << "a flood on the local socket pushed out a TCP client's handshake";
  EXPECT_EQ(wire::Reply::HELLO, frame.reader->getRoot<wire::Reply>().which());
  close_all(flood);
  daemon.stop();
  std::string log = capture.text();
  EXPECT_NE(std::string::npos, log.find("local uid " + std::to_string(geteuid()) + ": ")) << log.substr(0, 4000);
}
