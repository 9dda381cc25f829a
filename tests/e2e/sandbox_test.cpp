// A session worker is a boundary (docs/design-decisions.md, "Workers are a boundary"): a kernel on a
// CPU device is native code in the worker, so this test runs a hostile session's code there (a
// preloaded shim, support/hostile_backend.c) and checks that it reaches neither the keys, nor the
// main process, nor another worker, nor the network, nor a cache another session loads. The kernel
// that reads its worker's memory is in worker_memory_test.cpp.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <sstream>

#include "cl_harness.h"
#include "sandbox_keys.h"

using namespace fedcl_test;

namespace {

// A TCP port on loopback that listens (and accepts nothing): what a hostile worker would dial.
struct Listening {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  int port = 0;
  Listening() {
    sockaddr_in at{};
    at.sin_family = AF_INET;
    at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t size = sizeof at;
    if (bind(fd, reinterpret_cast<sockaddr *>(&at), sizeof at) == 0 && listen(fd, 4) == 0 &&
        getsockname(fd, reinterpret_cast<sockaddr *>(&at), &size) == 0)
      port = ntohs(at.sin_port);
  }
  ~Listening() { close(fd); }
};

std::vector<std::string> lines_with(const std::string &text, const std::string &part) {
  std::vector<std::string> found;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);)
    if (line.find(part) != std::string::npos) found.push_back(line);
  return found;
}

}  // namespace

TEST(Sandbox, ASessionsCodeReachesNeitherTheKeysNorOtherProcessesNorTheNetwork) {
  SandboxKeys keys;
  Listening target;
  ASSERT_NE(0, target.port);
  std::string planted_dir = ::testing::TempDir() + "fedcl-shared-cache-" + std::to_string(getpid());
  mkdir(planted_dir.c_str(), 0755);
  std::string planted = planted_dir + "/planted.so";
  StderrCapture capture;
  std::unique_ptr<Cluster> cluster;
  {
    DaemonEnvironment hostile(FEDCL_HOSTILE_BACKEND_PATH,
                              {{"FEDCL_TEST_HOSTILE_READ", keys.list + ":" + keys.daemons},
                               {"FEDCL_TEST_HOSTILE_WRITE", planted},
                               {"FEDCL_TEST_HOSTILE_PORT", std::to_string(target.port)}},
                              true);
    cluster = std::make_unique<Cluster>(1, keys.daemon_args());
  }
  ASSERT_EQ(1u, cluster->devices.size());
  cl_int err;
  cl_context context = clCreateContext(nullptr, 1, &cluster->devices[0], nullptr, nullptr, &err);
  ASSERT_CL_OK(err);
  cl_command_queue queue = create_queue(context, cluster->devices[0]);
  expect_vector_add(context, queue, 1024);  // its launch runs the hostile code
  clReleaseCommandQueue(queue);
  clReleaseContext(context);
  cluster.reset();
  std::string log = capture.text();
  unlink(planted.c_str());
  rmdir(planted_dir.c_str());
  ASSERT_FALSE(lines_with(log, "hostile: done trying").empty()) << "the hostile code did not run:\n" << log;
  for (const std::string &line : lines_with(log, "hostile: ")) {
    if (line.find(": done") != std::string::npos && line.find("done trying") == std::string::npos)
      ADD_FAILURE() << "a session's code got through: " << line;
  }
  // What it tried, so that a test that finds nothing to try fails too.
  for (const char *tried : {"hostile: read ", "hostile: write ", "hostile: connect ", "hostile: signal main",
                            "hostile: ptrace main", "hostile: process_vm_readv main", "hostile: open-mem main",
                            "hostile: signal worker", "hostile: ptrace worker", "hostile: unshare"})
    EXPECT_FALSE(lines_with(log, tried).empty()) << "nothing tried: " << tried << "\n" << log;
  EXPECT_EQ(2u, lines_with(log, "hostile: read ").size()) << log;
  EXPECT_FALSE(lines_with(log, "hostile: dumpable 0, no_new_privs 1").empty()) << log;
}
