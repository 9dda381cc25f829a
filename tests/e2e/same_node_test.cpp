// The same node (docs/design-decisions.md, "Same node"): a program on its daemon's host reaches it
// over the daemon's local socket and moves its bulk bytes through shared memory its session owns;
// FEDCL_LOCAL keeps it to TCP or insists; the kernel names the client (SO_PEERCRED); the proofs are
// bound to the two processes, so a relay on the local socket gets nothing; a hostile client's shared
// memory is refused with a clear error. Each TEST runs in its own process: FEDCL_LOCAL is set freely.
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <fstream>
#include <numeric>
#include <regex>
#include <thread>

#include "cl_harness.h"
#include "daemon_status.h"
#include "frame.h"
#include "raw_session.h"
#include "shared_region.h"

using namespace fedcl_test;
namespace wire = fedcl::wire;

namespace {

const char kKey[] = "the-same-node-tests-key-0123";

bool has_text(const std::string &text, const std::string &part) { return text.find(part) != std::string::npos; }

// The session of this process in `fedcl status --json`, once the daemon published what matches
// (the workers publish every second).
std::string own_session_status(const std::string &wanted) {
  std::string out;
  for (int attempt = 0; attempt < 40; attempt++) {
    out = status_json();
    if (std::regex_search(out, std::regex(wanted))) break;
    usleep(100000);
  }
  return out;
}

// Writes size bytes of a pattern, doubles them with a kernel and reads them back: the bulk path
// both ways and a command between.
void expect_round_trip(cl_device_id device, size_t size) {
  cl_int err;
  cl_context context = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &err);
  ASSERT_CL_OK(err);
  cl_command_queue queue = create_queue(context, device);
  size_t n = size / sizeof(cl_int);
  std::vector<cl_int> data(n), back(n);
  std::iota(data.begin(), data.end(), 1);
  cl_mem buffer = create_buffer(context, CL_MEM_READ_WRITE, size);
  ASSERT_CL_OK(clEnqueueWriteBuffer(queue, buffer, CL_TRUE, 0, size, data.data(), 0, nullptr, nullptr));
  cl_program program = build_program(context, "kernel void twice(global int *x) { x[get_global_id(0)] *= 2; }");
  cl_kernel kernel = create_kernel(program, "twice");
  set_arg(kernel, 0, buffer);
  ASSERT_CL_OK(clEnqueueNDRangeKernel(queue, kernel, 1, nullptr, &n, nullptr, 0, nullptr, nullptr));
  ASSERT_CL_OK(clEnqueueReadBuffer(queue, buffer, CL_TRUE, 0, size, back.data(), 0, nullptr, nullptr));
  size_t wrong = 0;
  for (size_t i = 0; i < n; i++) wrong += back[i] != 2 * data[i];
  EXPECT_EQ(0u, wrong);
  clReleaseKernel(kernel);
  clReleaseProgram(program);
  clReleaseMemObject(buffer);
  clReleaseCommandQueue(queue);
  clReleaseContext(context);
}

std::string key_file() {
  std::string path = ::testing::TempDir() + "fedcl-same-node-key-" + std::to_string(getpid());
  std::ofstream(path) << kKey << "\n";
  chmod(path.c_str(), 0600);
  return path;
}

// A Unix socket that listens at a path of the test's own.
struct LocalListener {
  std::string path = ::testing::TempDir() + "fedcl-same-node-" + std::to_string(getpid()) + ".sock";
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  LocalListener() {
    unlink(path.c_str());
    sockaddr_un at{};
    at.sun_family = AF_UNIX;
    std::snprintf(at.sun_path, sizeof at.sun_path, "%s", path.c_str());
    if (bind(fd, reinterpret_cast<sockaddr *>(&at), sizeof at) != 0 || listen(fd, 4) != 0)
      throw std::runtime_error("cannot listen at " + path);
  }
  ~LocalListener() {
    close(fd);
    unlink(path.c_str());
  }
};

// A process between a client and a daemon's local socket that passes the bytes on both ways: what a
// local attacker would put in the path to ride on the client's proof.
struct LocalRelay {
  LocalListener listener;
  std::string daemon_socket;
  std::atomic<bool> stopping{false};
  std::atomic<uint64_t> passed{0};
  std::thread thread;

  explicit LocalRelay(std::string daemon) : daemon_socket(std::move(daemon)) { thread = std::thread([this] { serve(); }); }
  ~LocalRelay() {
    stopping = true;
    thread.join();
  }

  void serve() {
    pollfd wait{listener.fd, POLLIN, 0};
    while (!stopping && poll(&wait, 1, 50) <= 0) {}
    if (stopping) return;
    int client = accept(listener.fd, nullptr, nullptr);
    int daemon = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un at{};
    at.sun_family = AF_UNIX;
    std::snprintf(at.sun_path, sizeof at.sun_path, "%s", daemon_socket.c_str());
    if (connect(daemon, reinterpret_cast<sockaddr *>(&at), sizeof at) == 0) {
      pollfd ends[2] = {{client, POLLIN, 0}, {daemon, POLLIN, 0}};
      char bytes[65536];
      while (!stopping) {
        if (poll(ends, 2, 50) <= 0) continue;
        int from = ends[0].revents ? client : daemon, to = from == client ? daemon : client;
        ssize_t got = read(from, bytes, sizeof bytes);
        if (got <= 0 || write(to, bytes, size_t(got)) != got) break;
        passed += uint64_t(got);
      }
    }
    close(client);
    close(daemon);
  }
};

}  // namespace

TEST(SameNode, AProgramOnItsDaemonsHostTakesTheLocalSocketAndSharedMemory) {
  setenv("FEDCL_LOCAL", "auto", 1);
  Cluster cluster(1);
  expect_round_trip(cluster.devices[0], 16 * MiB);
  // The kernel names the client's process (SO_PEERCRED); its bulk bytes went through shared memory
  // and count as its traffic.
  std::string address = "local uid " + std::to_string(getuid()) + " pid " + std::to_string(getpid());
  std::string out = own_session_status("\"address\": \"" + address +
                                       "\", \"transport\": \"local\\+shm\".*\"bytes_received\": [0-9]{8,}, \"bytes_sent\": [0-9]{8}");
  EXPECT_TRUE(has_text(out, "\"address\": \"" + address + "\", \"transport\": \"local+shm\"")) << out;
  std::smatch received;
  ASSERT_TRUE(std::regex_search(out, received, std::regex("\"bytes_received\": ([0-9]+), \"bytes_sent\": ([0-9]+)"))) << out;
  EXPECT_GE(std::stoull(received[1]), 16 * MiB) << out;
  EXPECT_GE(std::stoull(received[2]), 16 * MiB) << out;
}

TEST(SameNode, FedclLocalOffKeepsToTcp) {
  setenv("FEDCL_LOCAL", "off", 1);
  Cluster cluster(1);
  expect_round_trip(cluster.devices[0], 4 * MiB);
  std::string out = own_session_status("\"transport\": \"tcp\"");
  EXPECT_TRUE(std::regex_search(out, std::regex("\"address\": \"127\\.0\\.0\\.1:[0-9]+\", \"transport\": \"tcp\""))) << out;
}

// A hosts entry may name a daemon by its local socket; the proof then names "localhost", one of
// every daemon's names.
TEST(SameNode, AnEntryNamingTheLocalSocketReachesTheDaemonWithItsKey) {
  setenv("FEDCL_LOCAL", "auto", 1);
  std::string key = key_file();
  DaemonProcess daemon({"--key-file", key});
  setenv("FEDCL_KEY", kKey, 1);
  set_hosts(daemon.local_endpoint());
  std::vector<cl_device_id> devices = fedcl_devices(fedcl_platform());
  ASSERT_EQ(1u, devices.size());
  expect_round_trip(devices[0], 8 * MiB);
  std::string out = own_session_status("\"transport\": \"local\\+shm\"");
  EXPECT_TRUE(has_text(out, "\"transport\": \"local+shm\"")) << out;
  unlink(key.c_str());
}

// The attack the binding stops: a process of the host that relays between the client and the
// daemon's local socket passes the client's proof on. The proof names the two processes as the
// client sees them (itself and the relay), the daemon sees the relay and itself: refused. (With the
// proofs bound to nothing on a local connection, the relay carried the client's session through.)
TEST(SameNode, ARelayOnTheLocalSocketGetsNoSession) {
  setenv("FEDCL_LOCAL", "auto", 1);
  std::string key = key_file();
  DaemonProcess daemon({"--key-file", key});
  LocalRelay relay(daemon.local_socket());
  setenv("FEDCL_KEY", kKey, 1);
  set_hosts("unix:" + relay.listener.path);
  StderrCapture capture;
  cl_int status = CL_SUCCESS;
  std::vector<cl_device_id> devices = fedcl_devices(fedcl_platform(), &status);
  std::string text = capture.text();
  EXPECT_TRUE(devices.empty()) << "the relay got the client a session";
  EXPECT_TRUE(has_text(text, "fedcld refused the session: wrong key for the cluster key")) << text;
  EXPECT_GT(relay.passed.load(), 0u) << "the relay was in the path";
  unlink(key.c_str());
}

// A daemon that names a local socket another process listens on (what a TCP peer that is not the
// daemon could say): the driver goes there only if the daemon's process listens there.
TEST(SameNode, ARedirectToAnotherProcesssSocketIsRefused) {
  setenv("FEDCL_LOCAL", "on", 1);
  LocalListener elsewhere;
  int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in at{};
  at.sin_family = AF_INET;
  at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t size = sizeof at;
  ASSERT_EQ(0, bind(listener, reinterpret_cast<sockaddr *>(&at), sizeof at));
  ASSERT_EQ(0, listen(listener, 4));
  ASSERT_EQ(0, getsockname(listener, reinterpret_cast<sockaddr *>(&at), &size));
  // A daemon by hand: the Hello is answered with another process's socket (pid 1's claim).
  std::thread fake([&] {
    int client = accept(listener, nullptr, nullptr);
    std::vector<uint8_t> in(4096);
    if (read(client, in.data(), in.size()) > 0) {
      capnp::MallocMessageBuilder message;
      auto reply = message.initRoot<wire::Reply>();
      reply.setSeq(1);
      auto local = reply.initLocal();
      local.setSocket(elsewhere.path);
      local.setPid(1);
      std::vector<uint8_t> out;
      fedcl::frame_append(out, wire::FrameKind::REPLY, message, 0);
      (void)!write(client, out.data(), out.size());
    }
    close(client);
  });
  set_hosts("127.0.0.1:" + std::to_string(ntohs(at.sin_port)));
  StderrCapture capture;
  std::vector<cl_device_id> devices = fedcl_devices(fedcl_platform());
  std::string text = capture.text();
  fake.join();
  close(listener);
  EXPECT_TRUE(devices.empty());
  EXPECT_TRUE(has_text(text, "the local socket " + elsewhere.path + " is process " + std::to_string(getpid()) +
                                 "'s, not the daemon's (1)")) << text;
}

TEST(SameNode, FedclLocalOnSkipsADaemonOfThisHostWithoutALocalSocket) {
  setenv("FEDCL_LOCAL", "on", 1);
  DaemonProcess daemon({"--local-socket", "no"});
  set_hosts(daemon.endpoint());
  StderrCapture capture;
  std::vector<cl_device_id> devices = fedcl_devices(fedcl_platform());
  std::string text = capture.text();
  EXPECT_TRUE(devices.empty());
  EXPECT_TRUE(has_text(text, "FEDCL_LOCAL=on: the daemon runs on this host but offers no local socket")) << text;
}

// What a client passes as its shared memory is checked, and a refusal loses nothing: the session goes
// on, until a request names memory outside what was passed (the session closes, the daemon serves on).
TEST(SameNode, SharedMemoryThatIsNotASealedMemfdIsRefusedWithAReason) {
  setenv("FEDCL_LOCAL", "auto", 1);
  DaemonProcess daemon;
  RawSession raw(daemon.local_socket());
  ReceivedFrame last;
  ASSERT_TRUE(raw.handshake("", "", &last));
  ASSERT_EQ(wire::Reply::HELLO, last.reader->getRoot<wire::Reply>().which());
  const uint64_t slot_bytes = 1 << 20;
  const uint32_t slots = 2;
  const uint64_t bytes = fedcl::kSharedHeaderBytes + slot_bytes * slots;
  uint64_t seq = 10;
  // Passes descriptor (-1: none) as the session's shared memory; the daemon's answer.
  auto offer = [&](int descriptor) {
    capnp::MallocMessageBuilder message;
    auto request = message.initRoot<wire::Request>();
    request.setSeq(++seq);
    auto shared = request.initSharedMemory();
    shared.setBytes(bytes);
    shared.setSlotBytes(slot_bytes);
    shared.setSlots(slots);
    bool sent = descriptor >= 0 ? raw.send_request(message, descriptor) : raw.send_request(message);
    ReceivedFrame answer;
    if (!sent || !raw.read_frame(&answer)) return std::string("no answer");
    auto reply = answer.reader->getRoot<wire::Reply>();
    return std::to_string(reply.getStatus()) + " " + reply.getMessage().cStr();
  };
  EXPECT_EQ("-30 no shared memory came with the request (only a local session passes one)", offer(-1));
  int pipe_ends[2];
  ASSERT_EQ(0, pipe(pipe_ends));
  EXPECT_EQ("-30 the session's shared memory: the descriptor passed is not a memfd that takes seals", offer(pipe_ends[0]));
  int unsealed = memfd_create("unsealed", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  ASSERT_EQ(0, ftruncate(unsealed, off_t(bytes)));
  EXPECT_EQ("-30 the session's shared memory: the shared memory is not sealed against shrinking", offer(unsealed));
  int sealed = memfd_create("sealed", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  ASSERT_EQ(0, ftruncate(sealed, off_t(bytes / 2)));
  ASSERT_EQ(0, fcntl(sealed, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW));
  EXPECT_EQ("-30 the session's shared memory: the shared memory is " + std::to_string(bytes / 2) + " bytes, not " +
                std::to_string(bytes),
            offer(sealed));
  fedcl::SharedRegion region;
  ASSERT_EQ("", region.create(slot_bytes, slots));
  EXPECT_EQ("0 ", offer(region.fd()));
  // A write whose payload lies in a slot the memory does not have: the session ends.
  capnp::MallocMessageBuilder message;
  auto request = message.initRoot<wire::Request>();
  request.setSeq(++seq);
  auto write = request.initWriteBuffer();
  write.setBuffer(fedcl::wire::FIRST_CLIENT_ID);
  write.setSize(4096);
  auto span = request.initSharedPayload();
  span.setSlot(slots);
  span.setBytes(4096);
  ASSERT_TRUE(raw.send_request(message));
  EXPECT_TRUE(raw.wait_closed());
  for (int fd : {pipe_ends[0], pipe_ends[1], unsealed, sealed}) close(fd);
  set_hosts(daemon.endpoint());
  std::vector<cl_device_id> devices = fedcl_devices(fedcl_platform());
  ASSERT_EQ(1u, devices.size());
  expect_round_trip(devices[0], 1 * MiB);  // the daemon serves on
}

// Writes queued behind a user event the program sets later hold their slots until it does; the
// program must not wait for a slot that only its own later call frees: past a short wait the bytes
// go on the socket.
TEST(SameNode, WritesBehindAUserEventDoNotStallTheProgramWhenTheSlotsRunOut) {
  setenv("FEDCL_LOCAL", "auto", 1);
  Cluster cluster(1);
  cl_int err;
  cl_context context = clCreateContext(nullptr, 1, &cluster.devices[0], nullptr, nullptr, &err);
  ASSERT_CL_OK(err);
  cl_command_queue queue = create_queue(context, cluster.devices[0]);
  cl_event gate = clCreateUserEvent(context, &err);
  ASSERT_CL_OK(err);
  ASSERT_CL_OK(clEnqueueMarkerWithWaitList(queue, 1, &gate, nullptr));
  const size_t piece = 1 * MiB, pieces = 40;  // more than the session's slots
  cl_mem buffer = create_buffer(context, CL_MEM_READ_WRITE, piece * pieces);
  std::vector<std::vector<uint8_t>> data(pieces);
  for (size_t p = 0; p < pieces; p++) {
    data[p].assign(piece, uint8_t(p + 1));
    ASSERT_CL_OK(clEnqueueWriteBuffer(queue, buffer, CL_FALSE, p * piece, piece, data[p].data(), 0, nullptr, nullptr));
  }
  ASSERT_CL_OK(clSetUserEventStatus(gate, CL_COMPLETE));
  std::vector<uint8_t> back(piece * pieces);
  ASSERT_CL_OK(clEnqueueReadBuffer(queue, buffer, CL_TRUE, 0, back.size(), back.data(), 0, nullptr, nullptr));
  size_t wrong = 0;
  for (size_t i = 0; i < back.size(); i++) wrong += back[i] != uint8_t(i / piece + 1);
  EXPECT_EQ(0u, wrong);
  clReleaseEvent(gate);
  clReleaseMemObject(buffer);
  clReleaseCommandQueue(queue);
  clReleaseContext(context);
}

// Two daemons of one host link their sessions over the answering daemon's local socket, as the
// client named it (PeerRef.localSocket); with FEDCL_LOCAL=off over TCP, as between hosts.
TEST(SameNode, DaemonsOfOneHostLinkOverTheLocalSocket) {
  setenv("FEDCL_LOCAL", "auto", 1);
  Cluster cluster(2);
  MigratedBuffer moved(cluster, 8 * MiB);
  set_hosts(cluster.daemons[0]->endpoint());  // where the dialling session is
  std::string out = own_session_status("\"links\": \\[\\{\"peer\": \"127\\.0\\.0\\.1:[0-9]+\", \"up\": true, \"bytes_sent\": [0-9]{7,}");
  EXPECT_TRUE(std::regex_search(out, std::regex("\"links\": \\[\\{\"peer\": \"127\\.0\\.0\\.1:" +
                                                std::to_string(cluster.daemons[1]->port()) +
                                                "\", \"up\": true, \"bytes_sent\": [0-9]{7,}, \"bytes_received\": [0-9]+, "
                                                "\"transport\": \"local\\+shm\"\\}")))
      << out;
}

namespace {

// Two daemons (of daemon_args) whose sessions a migration of 8 MiB linked: the dialling session's
// link as `fedcl status` shows it must be up and of transport (a regex).
void expect_migration_link(const std::vector<std::string> &daemon_args, const std::string &transport) {
  Cluster cluster(2, daemon_args);
  MigratedBuffer moved(cluster, 8 * MiB);
  set_hosts(cluster.daemons[0]->endpoint());
  std::string link = "\"up\": true, \"bytes_sent\": [0-9]{7,}, \"bytes_received\": [0-9]+, \"transport\": \"" + transport + "\"\\}";
  std::string out = own_session_status(link);
  EXPECT_TRUE(std::regex_search(out, std::regex(link))) << out;
}

}  // namespace

TEST(SameNode, DaemonsLinkOverTcpWhenTheClientKeepsToTcp) {
  setenv("FEDCL_LOCAL", "off", 1);
  expect_migration_link({}, "tcp");
}

// The same with keys: each daemon's HelloReply tags its local socket under the daemons' key
// (localSocketTag), the client passes the tag on, and the dialling main process checks it.
TEST(SameNode, DaemonsWithAKeyLinkOverTheLocalSocketTheyAdvertised) {
  setenv("FEDCL_LOCAL", "auto", 1);
  std::string key = key_file();
  setenv("FEDCL_KEY", kKey, 1);
  expect_migration_link({"--key-file", key}, "local\\+shm");
  unlink(key.c_str());
}

// A client names the local socket another daemon of the host is to dial (PeerRef.localSocket): a
// daemon with a key dials only a socket whose daemon tagged it, as it dials only tagged addresses
// (PeerRef.addressTag; PeerProtocol.ADaemonWithAKeyDialsOnlyAddressesADaemonAdvertised). Here the
// client holds a real daemon's instance, address and address tag, and names a socket of its own:
// with the address's tag alone, the main process connected to any socket of the host it was given.
TEST(SameNode, ADaemonWithAKeyDialsOnlyALocalSocketADaemonAdvertised) {
  std::string key = key_file();
  DaemonProcess dialling({"--key-file", key}), other({"--key-file", key});
  auto served = [&](DaemonProcess &daemon, ReceivedFrame *frame) {
    auto raw = std::make_unique<RawSession>(daemon.port());
    EXPECT_TRUE(raw->handshake("", kKey, frame));
    return raw;
  };
  ReceivedFrame mine, theirs;
  auto client = served(dialling, &mine);
  auto held = served(other, &theirs);
  ASSERT_EQ(wire::Reply::HELLO, theirs.reader->getRoot<wire::Reply>().which());
  auto hello = theirs.reader->getRoot<wire::Reply>().getHello();
  EXPECT_EQ(other.local_socket(), std::string(hello.getLocalSocket().cStr()));
  ASSERT_GT(hello.getPeerAddressTag().size(), 0u);
  EXPECT_EQ(hello.getPeerAddressTag().size(), hello.getLocalSocketTag().size());
  LocalListener target;
  capnp::MallocMessageBuilder message;
  auto request = message.initRoot<wire::Request>();
  request.setSeq(7);
  auto ref = request.initPeerConnect();
  ref.setInstance(hello.getInstance());
  ref.setAddress(hello.getPeerAddress());
  ref.setSession(hello.getSessionToken());
  ref.setAddressTag(hello.getPeerAddressTag());
  ref.setHost(hello.getHost());
  ref.setLocalSocket(target.path);
  ref.setLocalSocketTag(hello.getLocalSocketTag());  // the tag of the other daemon's socket, not this one
  ASSERT_TRUE(client->send_request(message));
  std::string answer;
  for (ReceivedFrame got; answer.empty() && client->read_frame(&got);) {
    if (got.header.kind != uint16_t(wire::FrameKind::REPLY)) continue;  // heartbeats
    auto r = got.reader->getRoot<wire::Reply>();
    if (r.getSeq() == 7) answer = r.getMessage().cStr();
  }
  EXPECT_TRUE(has_text(answer, "the local socket '" + target.path + "' was not advertised by a fedcld that holds this one's key"))
      << answer;
  pollfd dialled{target.fd, POLLIN, 0};
  EXPECT_EQ(0, poll(&dialled, 1, 300)) << "the daemon dialled a socket no daemon advertised";
  unlink(key.c_str());
}

// Where the local socket is made (docs/design-decisions.md, "Same node"): a socket a killed daemon
// of this user left is replaced; another user's socket, a link or a file at the path is neither
// removed nor followed, and a folder every user may write to that is not sticky (unlike /tmp) is
// refused, since another user could replace the socket there. With a path given, fedcld stops.
TEST(SameNode, TheLocalSocketIsMadeOnlyWhereNoOtherUserCanReplaceIt) {
  std::string folder = ::testing::TempDir() + "fedcl-same-node-sockets-" + std::to_string(getpid());
  ASSERT_EQ(0, mkdir(folder.c_str(), 0755));
  std::string path = folder + "/fedcld.sock";
  auto leave_socket = [](const std::string &at) {  // bound, never listened on: what a killed daemon leaves
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::snprintf(address.sun_path, sizeof address.sun_path, "%s", at.c_str());
    bool made = bind(fd, reinterpret_cast<sockaddr *>(&address), sizeof address) == 0;
    close(fd);
    return made;
  };
  auto starts = [&](const std::string &at) {
    try {
      DaemonProcess daemon({"--local-socket", at});
      RawSession raw(at);  // throws when nothing listens there
      return true;
    } catch (const std::exception &) {
      return false;
    }
  };
  ASSERT_TRUE(leave_socket(path));
  EXPECT_TRUE(starts(path)) << "a stale socket of this user was not replaced";
  struct stat st {};
  if (geteuid() == 0) {  // another user's socket: only root can make one here
    ASSERT_TRUE(leave_socket(path) || lstat(path.c_str(), &st) == 0);
    ASSERT_EQ(0, lchown(path.c_str(), 65534, 65534));
    EXPECT_FALSE(starts(path)) << "another user's socket was replaced";
    ASSERT_EQ(0, lstat(path.c_str(), &st));
    EXPECT_EQ(65534u, st.st_uid);
  }
  unlink(path.c_str());
  std::string target = folder + "/target.sock";
  ASSERT_TRUE(leave_socket(target));
  ASSERT_EQ(0, symlink(target.c_str(), path.c_str()));
  EXPECT_FALSE(starts(path)) << "a link at the path was replaced or followed";
  ASSERT_EQ(0, lstat(path.c_str(), &st));
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  ASSERT_EQ(0, lstat(target.c_str(), &st));
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  unlink(path.c_str());
  unlink(target.c_str());
  ASSERT_EQ(0, chmod(folder.c_str(), 0777));
  EXPECT_FALSE(starts(path)) << "a socket was made in a folder every user may write to";
  EXPECT_NE(0, lstat(path.c_str(), &st));
  ASSERT_EQ(0, chmod(folder.c_str(), 01777));
  EXPECT_TRUE(starts(path)) << "a sticky folder like /tmp was refused";
  unlink(path.c_str());
  rmdir(folder.c_str());
}
