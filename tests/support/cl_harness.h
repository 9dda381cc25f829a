// What the end-to-end tests share: daemons plus the fedcl platform in front of them, OpenCL
// status codes that print by name, and the small steps every test repeats.
//
// The runtime connects once per process, at the first clGetDeviceIDs on the fedcl platform, so a
// Cluster must be made before any OpenCL call: it starts the daemons and sets FEDCL_HOSTS first.
#pragma once

#include <CL/cl.h>
#include <gtest/gtest.h>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <ostream>
#include <string>
#include <vector>

#include "daemon_process.h"

namespace fedcl_test {

constexpr size_t KiB = 1024, MiB = 1024 * KiB;

// An OpenCL status that gtest prints as "CL_INVALID_VALUE (-30)".
struct Status {
  cl_int code;
  bool operator==(const Status &other) const { return code == other.code; }
};
const char *status_name(cl_int code);
void PrintTo(const Status &status, std::ostream *out);

#define EXPECT_CL(expected, expr) EXPECT_EQ(::fedcl_test::Status{expected}, ::fedcl_test::Status{expr})
#define ASSERT_CL(expected, expr) ASSERT_EQ(::fedcl_test::Status{expected}, ::fedcl_test::Status{expr})
#define ASSERT_CL_OK(expr) ASSERT_CL(CL_SUCCESS, expr)

// The platform named "fedcl"; throws if the loader does not offer it.
cl_platform_id fedcl_platform();

// Daemons on loopback and the fedcl devices they serve, in FEDCL_HOSTS order.
struct Cluster {
  explicit Cluster(size_t daemon_count = 1, const std::vector<std::string> &daemon_args = {});
  std::vector<std::unique_ptr<DaemonProcess>> daemons;
  cl_platform_id platform = nullptr;
  std::vector<cl_device_id> devices;
};

// A one-daemon Cluster whose daemon runs with library preloaded and variables set (a backend shim:
// DaemonEnvironment); null, with a test failure added, when it does not start.
std::unique_ptr<Cluster> cluster_with_shim(const std::string &library,
                                           const std::vector<std::pair<std::string, std::string>> &variables,
                                           const std::vector<std::string> &daemon_args = {});

// Sets FEDCL_HOSTS (replacing any earlier value).
void set_hosts(const std::string &hosts);
// All devices of the fedcl platform, or none with the status clGetDeviceIDs returned.
std::vector<cl_device_id> fedcl_devices(cl_platform_id platform, cl_int *status = nullptr);

std::string device_string(cl_device_id device, cl_device_info param);
std::string build_log(cl_program program, cl_device_id device);
// Creates and builds a program for every device of context; throws with the build log on failure.
cl_program build_program(cl_context context, const std::string &source, const char *options = "");
cl_kernel create_kernel(cl_program program, const char *name);
// The binary of a program built for one device (CL_PROGRAM_BINARIES); throws if it has none.
std::vector<unsigned char> program_binary(cl_program program);
cl_mem create_buffer(cl_context context, cl_mem_flags flags, size_t size, void *host_ptr = nullptr);
cl_command_queue create_queue(cl_context context, cl_device_id device, cl_command_queue_properties properties = 0);
// Throws std::runtime_error naming what and the status, unless status is CL_SUCCESS.
void check(cl_int status, const std::string &what);

// Traffic between two daemons: a context over a cluster's first two devices, and a buffer of
// `bytes` written through the first daemon and then migrated to the second (over their sessions'
// peer link). Throws if a step fails.
struct MigratedBuffer {
  MigratedBuffer(const Cluster &cluster, size_t bytes);
  ~MigratedBuffer();
  MigratedBuffer(const MigratedBuffer &) = delete;
  cl_context context = nullptr;
  cl_command_queue queues[2] = {};
  cl_mem buffer = nullptr;
};

// One daemon, its first device, a context and an in-order queue on it: what most tests start from.
// Each test file derives a fixture of its own name from it.
struct OneDeviceFixture : ::testing::Test {
  explicit OneDeviceFixture(const std::vector<std::string> &daemon_args = {}) : cluster(1, daemon_args) {}
  Cluster cluster;
  cl_device_id device = cluster.devices.at(0);
  cl_context context = nullptr;
  cl_command_queue queue = nullptr;

  void SetUp() override;
  void TearDown() override;
};

// The same over a daemon whose workers run a backend shim (cluster_with_shim): the fixture of tests
// that make the backend misbehave. The test (or its fixture's SetUp) calls start() with the shim's
// variables; a failed start is a fatal failure.
struct ShimmedDeviceFixture : ::testing::Test {
  void start(const std::string &library, const std::vector<std::pair<std::string, std::string>> &variables,
             const std::vector<std::string> &daemon_args = {});
  void TearDown() override;
  std::unique_ptr<Cluster> cluster;
  cl_device_id device = nullptr;
  cl_context context = nullptr;
  cl_command_queue queue = nullptr;
};

// An event's CL_EVENT_COMMAND_EXECUTION_STATUS (a test failure, and 1234, where the query fails).
cl_int command_status(cl_event event);

// What a context's notify callback receives: pass callback and the object to clCreateContext.
struct ContextNotices {
  static void CL_CALLBACK callback(const char *message, const void *, size_t, void *self);
  // Waits (up to 30 s) for a message containing text.
  bool wait_for(const std::string &text);
  // Every message so far, one a line.
  std::string all();

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<std::string> messages_;
};

template <typename T>
void set_arg(cl_kernel kernel, cl_uint index, const T &value) {
  ASSERT_CL_OK(clSetKernelArg(kernel, index, sizeof value, &value));
}

// Runs c = a + b for n floats on queue (one kernel per call) and checks c against the CPU.
void expect_vector_add(cl_context context, cl_command_queue queue, size_t n);
// A session of the real runtime on the cluster's first daemon, proved alive by a vector add of n.
void expect_runtime_session_works(const Cluster &cluster, size_t n);

// Two daemons' peer link at work: n ints written on the cluster's first device, a kernel on the second
// adds one to each (the data crosses from the first daemon), read back there. capture holds the
// daemons' log (they run with --log-level info): the link must come up and nothing be refused.
class OutputCapture;
void expect_buffer_crosses_peer_link(const Cluster &cluster, OutputCapture &capture, size_t n);

// Kernels several tests use.
extern const char kVectorAddSource[];  // add(a, b, c, n): c = a + b
extern const char kScaleSource[];      // scale(x, factor): x *= factor, and offset(x, add): x += add

// Everything printed on stderr between construction and text(): the runtime's warnings.
// Everything written to stream's file descriptor (stdout or stderr, by this process and the
// children it starts) from construction on lands in a file. so_far() reads it while capturing;
// text() stops and returns it all. A capture of stderr echoes what it caught when it stops, so that
// it still shows in the test's output.
class OutputCapture {
 public:
  explicit OutputCapture(FILE *stream);
  ~OutputCapture();
  std::string so_far();
  std::string text();

 private:
  FILE *stream_;
  int fd_;
  int saved_ = -1;
  std::string path_;
};

// The runtime's warnings.
struct StderrCapture : OutputCapture {
  StderrCapture() : OutputCapture(stderr) {}
};

std::string read_file(const std::string &path);

size_t count_occurrences(const std::string &text, const std::string &needle);

// Runs command through /bin/sh, collecting stdout and stderr; returns its exit status (-1 if it
// did not exit normally).
int run_command(const std::string &command, std::string *output);

// Runs in a forked child: scale(x, 3) launched `launches` times over a buffer of n ints (with
// contents, so that its memory is in use at the daemon), each behind a user event the child never
// sets if gated; then the child exits without releasing anything, its work still queued. Returns the
// child's exit status.
int launch_and_abandon(size_t n, int launches, bool gated);

}  // namespace fedcl_test
