// A session worker is a boundary (docs/design-decisions.md, "Workers are a boundary"): a kernel on a
// CPU device is native code in the worker, so these tests run a hostile session's code there (a
// preloaded shim, support/hostile_backend.c, and a kernel that reads the worker's memory) and check
// that it reaches neither the keys, nor the main process, nor another worker, nor the network, nor a
// cache another session loads.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <regex>
#include <sstream>

#include "cl_harness.h"

using namespace fedcl_test;

namespace {

const char kAliceKey[] = "alices-key-for-the-sandbox-test";
const char kDaemonsKey[] = "the-daemons-key-of-the-sandbox-test";

struct Keys {
  std::string list, daemons;
  Keys() {
    std::string dir = ::testing::TempDir() + "fedcl-sandbox-" + std::to_string(getpid());
    list = dir + "-users";
    daemons = dir + "-daemons";
    std::ofstream(list) << "alice " << kAliceKey << "\n";
    std::ofstream(daemons) << kDaemonsKey << "\n";
    chmod(list.c_str(), 0600);
    chmod(daemons.c_str(), 0600);
    setenv("FEDCL_USER", "alice", 1);
    setenv("FEDCL_KEY", kAliceKey, 1);
  }
  ~Keys() {
    unlink(list.c_str());
    unlink(daemons.c_str());
  }
  std::vector<std::string> daemon_args() const { return {"--key-list", list, "--peer-key-file", daemons, "--log-level", "info"}; }
};

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
  Keys keys;
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

// The keys never reach a worker's memory: a kernel that copies out every readable page of its own
// worker finds a marker the client put in a buffer (so the copy sees the worker's memory) and no key.
TEST(Sandbox, AKernelThatReadsItsWorkersMemoryFindsNoKey) {
  Keys keys;
  StderrCapture capture;
  Cluster cluster(1, keys.daemon_args());
  std::smatch match;
  std::string so_far = capture.so_far();
  ASSERT_TRUE(std::regex_search(so_far, match, std::regex("session [0-9]+: .* in worker ([0-9]+)"))) << so_far;
  pid_t worker = std::stoi(match[1]);
  cl_int err;
  cl_context context = clCreateContext(nullptr, 1, &cluster.devices[0], nullptr, nullptr, &err);
  ASSERT_CL_OK(err);
  cl_command_queue queue = create_queue(context, cluster.devices[0]);
  const std::string marker = "a-marker-the-client-put-in-a-buffer";
  cl_mem marked = create_buffer(context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, marker.size(), const_cast<char *>(marker.data()));
  ASSERT_CL_OK(clFinish(queue));
  cl_kernel peek = create_kernel(build_program(context, R"(
    __kernel void peek(__global uchar *out, ulong address) {
      size_t i = get_global_id(0);
      out[i] = ((__global const uchar *)address)[i];
    })"), "peek");
  constexpr size_t kChunk = 8 << 20;
  cl_mem out = create_buffer(context, CL_MEM_WRITE_ONLY, kChunk);
  std::vector<char> bytes(kChunk);
  size_t scanned = 0;
  bool marker_seen = false;
  std::ifstream maps("/proc/" + std::to_string(worker) + "/maps");
  ASSERT_TRUE(maps) << "cannot read the worker's maps";
  for (std::string line; std::getline(maps, line);) {
    unsigned long long from = 0, to = 0;
    char perms[5] = {};
    if (std::sscanf(line.c_str(), "%llx-%llx %4s", &from, &to, perms) != 3 || perms[0] != 'r') continue;
    if (line.find("[vvar") != std::string::npos || line.find("[vsyscall]") != std::string::npos ||
        line.find(" /dev/") != std::string::npos || to - from > (256ull << 20))
      continue;
    for (unsigned long long at = from; at < to; at += kChunk) {
      size_t n = size_t(std::min<unsigned long long>(kChunk, to - at));
      cl_ulong address = at;
      ASSERT_CL_OK(clSetKernelArg(peek, 0, sizeof out, &out));
      ASSERT_CL_OK(clSetKernelArg(peek, 1, sizeof address, &address));
      ASSERT_CL_OK(clEnqueueNDRangeKernel(queue, peek, 1, nullptr, &n, nullptr, 0, nullptr, nullptr));
      ASSERT_CL_OK(clEnqueueReadBuffer(queue, out, CL_TRUE, 0, n, bytes.data(), 0, nullptr, nullptr));
      std::string_view seen(bytes.data(), n);
      marker_seen = marker_seen || seen.find(marker) != std::string_view::npos;
      EXPECT_EQ(std::string_view::npos, seen.find(kAliceKey)) << "alice's key in the worker at " << std::hex << at;
      EXPECT_EQ(std::string_view::npos, seen.find(kDaemonsKey)) << "the daemons' key in the worker at " << std::hex << at;
      scanned += n;
    }
  }
  EXPECT_TRUE(marker_seen) << "the copy never saw the client's buffer: it cannot show what it did not find";
  EXPECT_GT(scanned, size_t(1) << 20);
  clReleaseMemObject(marked);
  clReleaseMemObject(out);
  clReleaseKernel(peek);
  clReleaseCommandQueue(queue);
  clReleaseContext(context);
}
