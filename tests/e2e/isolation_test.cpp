// A process per session (docs/design-decisions.md, "Processes"): a backend that crashes or hangs in
// one session, a session worker killed from outside, and a client killed in the middle of its work
// end that session alone. Its client gets an error that says what happened; every other client's
// checked work completes; the daemon serves new sessions; its memory goes back to where it was.
//
// Each client is a process of its own (the runtime opens one session per daemon per process), forked
// before the test process makes any OpenCL call; the test process is a client only at the end.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <capnp/serialize.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <sstream>
#include <thread>

#include "auth.h"
#include "cl_harness.h"
#include "raw_session.h"

using namespace fedcl_test;
namespace wire = fedcl::wire;

namespace {


// A client process: body runs in a fork and its return value is the exit status. It ends as a
// program that returns from main does (the runtime says goodbye), unless abrupt: then as one killed
// (no goodbye; the daemon keeps its session for the resume window).
struct Client {
  pid_t pid = -1;
  explicit Client(std::function<int()> body, bool abrupt = true) {
    pid = fork();
    if (pid == 0) {
      int status = 99;
      try {
        status = body();
      } catch (const std::exception &e) {
        std::fprintf(stderr, "client: %s\n", e.what());
      }
      if (!abrupt) std::exit(status);
      _exit(status);
    }
  }
  // The exit status, or 128 + the signal that ended it, or -1 when it is still running at the limit.
  int wait(std::chrono::seconds limit = std::chrono::seconds(60)) {
    auto until = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < until) {
      int status = 0;
      if (waitpid(pid, &status, WNOHANG) == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    return -1;
  }
};

// One pipe between two processes for a one-byte "go": the parent waits for a child to be under way.
struct Signal {
  int fds[2];
  Signal() { EXPECT_EQ(0, pipe(fds)); }
  ~Signal() {
    close(fds[0]);
    close(fds[1]);
  }
  void raise() { EXPECT_EQ(1, write(fds[1], "x", 1)); }
  bool await(int timeout_ms = 20000) {
    pollfd p{fds[0], POLLIN, 0};
    char byte;
    return poll(&p, 1, timeout_ms) == 1 && read(fds[0], &byte, 1) == 1;
  }
  bool raised() { return await(0); }
};

struct Device {
  cl_device_id device = nullptr;
  cl_context context = nullptr;
  cl_command_queue queue = nullptr;
};

Device open_device() {
  Device d;
  std::vector<cl_device_id> devices = fedcl_devices(fedcl_platform());
  if (devices.empty()) throw std::runtime_error("no fedcl device");
  d.device = devices[0];
  cl_int err;
  d.context = clCreateContext(nullptr, 1, &d.device, nullptr, nullptr, &err);
  if (err != CL_SUCCESS) throw std::runtime_error("clCreateContext: " + std::to_string(err));
  d.queue = create_queue(d.context, d.device);
  return d;
}

// Checked work that must not notice the other sessions: builds a program, then runs scale on a
// buffer round after round and checks every element, for `rounds` rounds and then until stop is
// raised (if given); go is raised after the first. 0 when every round was right.
int checked_workload(int rounds, Signal *go, Signal *stop = nullptr) {
  Device d = open_device();
  cl_kernel scale = create_kernel(build_program(d.context, kScaleSource), "scale");
  const size_t n = 1 << 16;
  std::vector<int> start(n);
  for (size_t i = 0; i < n; i++) start[i] = int(i % 1000) - 500;
  for (int round = 0; round < rounds || (stop && !stop->raised()); round++) {
    cl_mem buffer = create_buffer(d.context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, n * sizeof(int), start.data());
    int factor = round % 5 - 2;
    if (clSetKernelArg(scale, 0, sizeof buffer, &buffer) != CL_SUCCESS ||
        clSetKernelArg(scale, 1, sizeof factor, &factor) != CL_SUCCESS)
      return 10;
    if (clEnqueueNDRangeKernel(d.queue, scale, 1, nullptr, &n, nullptr, 0, nullptr, nullptr) != CL_SUCCESS) return 11;
    std::vector<int> out(n);
    cl_int read = clEnqueueReadBuffer(d.queue, buffer, CL_TRUE, 0, n * sizeof(int), out.data(), 0, nullptr, nullptr);
    if (read != CL_SUCCESS) {
      std::fprintf(stderr, "checked workload: read failed with %d in round %d\n", read, round);
      return 12;
    }
    for (size_t i = 0; i < n; i++)
      if (out[i] != start[i] * factor) {
        std::fprintf(stderr, "checked workload: round %d, element %zu is %d, not %d\n", round, i, out[i], start[i] * factor);
        return 13;
      }
    clReleaseMemObject(buffer);
    if (round == 0 && go) go->raise();
  }
  return 0;
}

// A kernel that crashes the backend where it runs (a CPU device runs it inside the session's
// worker): it writes through a pointer it makes of 0.
const char kNullWrite[] =
    "__kernel void crash(__global ulong *where) { __global int *p = (__global int *)where[0]; p[get_global_id(0)] = 1; }\n";

// Runs a kernel that makes the backend crash. 0 when the call that waits for it failed with
// CL_DEVICE_NOT_AVAILABLE, as a lost daemon's calls do.
int crash_the_backend(const std::string &source, const std::string &kernel_name, Signal *about_to) {
  Device d = open_device();
  cl_kernel kernel = create_kernel(build_program(d.context, source), kernel_name.c_str());
  cl_ulong zero = 0;
  cl_mem where = create_buffer(d.context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof zero, &zero);
  if (clSetKernelArg(kernel, 0, sizeof where, &where) != CL_SUCCESS) return 20;
  size_t n = 64;
  if (about_to) about_to->raise();
  if (clEnqueueNDRangeKernel(d.queue, kernel, 1, nullptr, &n, nullptr, 0, nullptr, nullptr) != CL_SUCCESS) return 21;
  cl_int finished = clFinish(d.queue);
  if (finished != CL_DEVICE_NOT_AVAILABLE) {
    std::fprintf(stderr, "crashing client: clFinish returned %d\n", finished);
    return 22;
  }
  // The device is gone for this client: new calls on it fail at once.
  cl_int err = CL_SUCCESS;
  clCreateBuffer(d.context, CL_MEM_READ_WRITE, 64, nullptr, &err);
  return err == CL_DEVICE_NOT_AVAILABLE ? 0 : 23;
}

// The pids of the workers serving sessions, as the daemon's status tells them, by client pid.
std::map<pid_t, pid_t> serving_workers(int port) {
  std::map<pid_t, pid_t> found;
  RawSession raw(port);
  capnp::MallocMessageBuilder message;
  auto request = message.initRoot<wire::Request>();
  request.setSeq(1);
  auto status = request.initDaemonStatus();
  status.setProtocolVersion(wire::PROTOCOL_VERSION);
  status.setNonce(fedcl::as_data(fedcl::fresh_nonce()));
  ReceivedFrame frame;
  if (!raw.send_request(message) || !raw.read_frame(&frame)) return found;
  auto reply = frame.reader->getRoot<wire::Reply>();
  if (reply.which() != wire::Reply::DAEMON_STATUS) return found;
  for (auto session : reply.getDaemonStatus().getSessions()) {
    std::string client = session.getClient();  // "host:pid program"
    size_t colon = client.find(':');
    if (colon != std::string::npos) found[pid_t(std::atoi(client.c_str() + colon + 1))] = pid_t(session.getPid());
  }
  return found;
}

bool maps_mention(pid_t pid, const std::string &library) {
  std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
  std::string line;
  while (std::getline(maps, line))
    if (line.find(library) != std::string::npos) return true;
  return false;
}

// After the clients: the daemon still serves, and the test process is a client that works.
void expect_a_new_session_works(const DaemonProcess &daemon) {
  ASSERT_TRUE(daemon.alive());
  set_hosts(daemon.endpoint());
  std::vector<cl_device_id> devices = fedcl_devices(fedcl_platform());
  ASSERT_FALSE(devices.empty());
  cl_int err;
  cl_context context = clCreateContext(nullptr, 1, devices.data(), nullptr, nullptr, &err);
  ASSERT_CL_OK(err);
  cl_command_queue queue = create_queue(context, devices[0]);
  clReleaseProgram(build_program(context, kScaleSource));
  expect_vector_add(context, queue, 4096);
  EXPECT_CL(CL_SUCCESS, clFinish(queue));
  clReleaseCommandQueue(queue);
  clReleaseContext(context);
}

}  // namespace

// The backend crashes twice in two sessions, with SIGSEGV (a kernel that writes through a null
// pointer, run by the CPU device inside the session's worker) and with SIGABRT (PoCL 3.1 aborts when
// it launches a kernel whose name is over about 250 characters), while a third client runs checked
// work. The crashing clients get CL_DEVICE_NOT_AVAILABLE and a line that names the signal; the
// third never notices; the daemon logs each crash and goes on.
TEST(Isolation, ABackendCrashEndsItsSessionAloneAndItsClientLearnsWhy) {
  StderrCapture capture;  // the daemon's log and the clients' lines
  DaemonProcess daemon;
  set_hosts(daemon.endpoint());
  Signal working, stop;
  Client steady([&] { return checked_workload(10, &working, &stop); });
  ASSERT_TRUE(working.await()) << "the steady client never got going";

  Client segv([] { return crash_the_backend(kNullWrite, "crash", nullptr); });
  std::string long_name(300, 'k');
  Client abrt([&] {
    return crash_the_backend("__kernel void " + long_name + "(__global ulong *where) { where[1] = 1; }\n", long_name,
                             nullptr);
  });
  EXPECT_EQ(0, segv.wait()) << capture.so_far();
  EXPECT_EQ(0, abrt.wait()) << capture.so_far();
  stop.raise();  // the steady client worked on all along
  EXPECT_EQ(0, steady.wait()) << capture.so_far();
  std::string text = capture.text();
  // Each client's one line: its daemon is lost, and why (the main process tells a resuming client).
  EXPECT_NE(std::string::npos, text.find("crashed (SIGSEGV)")) << text;
  EXPECT_NE(std::string::npos, text.find("crashed (SIGABRT)")) << text;
  EXPECT_EQ(2u, count_occurrences(text, "the daemon and its other sessions go on")) << text;
  expect_a_new_session_works(daemon);
}

// A session worker killed from outside (the kernel's OOM killer, an operator) in the middle of a
// long kernel: its client gets CL_DEVICE_NOT_AVAILABLE naming SIGKILL, the other client finishes.
TEST(Isolation, AWorkerKilledMidKernelFailsItsClientAlone) {
  StderrCapture capture;
  DaemonProcess daemon;
  set_hosts(daemon.endpoint());
  Signal working, spinning, stop;
  Client steady([&] { return checked_workload(10, &working, &stop); });
  ASSERT_TRUE(working.await());
  Client victim([&] {
    Device d = open_device();
    // Seconds of work no compiler folds away: a recurrence through memory.
    cl_kernel spin = create_kernel(
        build_program(d.context, "__kernel void spin(volatile __global uint *x, uint n) {\n"
                                 "  for (uint i = 0; i < n; i++) x[0] = x[0] * 1103515245u + 12345u;\n}\n"),
        "spin");
    cl_mem x = create_buffer(d.context, CL_MEM_READ_WRITE, sizeof(cl_uint));
    cl_uint n = 2000000000u;
    clSetKernelArg(spin, 0, sizeof x, &x);
    clSetKernelArg(spin, 1, sizeof n, &n);
    size_t one = 1;
    if (clEnqueueNDRangeKernel(d.queue, spin, 1, nullptr, &one, nullptr, 0, nullptr, nullptr) != CL_SUCCESS) return 30;
    clFlush(d.queue);
    spinning.raise();
    return clFinish(d.queue) == CL_DEVICE_NOT_AVAILABLE ? 0 : 31;
  });
  ASSERT_TRUE(spinning.await());
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the kernel runs
  pid_t worker = serving_workers(daemon.port())[victim.pid];
  ASSERT_GT(worker, 0) << "the daemon's status names no worker for the victim";
  ASSERT_EQ(0, kill(worker, SIGKILL));
  EXPECT_EQ(0, victim.wait()) << capture.so_far();
  stop.raise();
  EXPECT_EQ(0, steady.wait()) << capture.so_far();
  std::string text = capture.text();
  EXPECT_NE(std::string::npos, text.find("was killed (SIGKILL)")) << text;  // the client's line names it
  expect_a_new_session_works(daemon);
}

// What the Khronos CTS did (a test process killed by its time limit in the middle of test_api
// repeated_setup_cleanup, and the sessions of other processes failing afterwards): a client creating
// and releasing contexts in a loop kills itself; another client's checked work completes, and so
// do the sessions that come after.
TEST(Isolation, AClientKilledInAContextLoopHarmsNoOtherSession) {
  DaemonProcess daemon;
  set_hosts(daemon.endpoint());
  Signal working, looping, stop;
  Client steady([&] { return checked_workload(10, &working, &stop); });
  ASSERT_TRUE(working.await());
  Client killed([&] {
    std::vector<cl_device_id> devices = fedcl_devices(fedcl_platform());
    auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(1500);
    for (int i = 0;; i++) {
      cl_int err;
      cl_context context = clCreateContext(nullptr, 1, devices.data(), nullptr, nullptr, &err);
      if (err != CL_SUCCESS) return 40;
      cl_command_queue queue = create_queue(context, devices[0]);
      create_buffer(context, CL_MEM_READ_WRITE, 1 << 20);  // left for the daemon to release
      if (i == 10) looping.raise();
      if (std::chrono::steady_clock::now() > until) kill(getpid(), SIGKILL);  // mid-loop, with objects held
      clReleaseCommandQueue(queue);
      clReleaseContext(context);
    }
  });
  ASSERT_TRUE(looping.await());
  EXPECT_EQ(128 + SIGKILL, killed.wait());
  stop.raise();
  EXPECT_EQ(0, steady.wait());
  Client after([] { return checked_workload(5, nullptr); });
  EXPECT_EQ(0, after.wait());
  expect_a_new_session_works(daemon);
}

// A session that ends leaves what it holds to its worker's end, as a program's objects go with the
// program: a GPU driver frees a process's contexts at once when it exits, where NVIDIA, released one
// by one, took over 30 s for a hundred (the CTS's multiples context_multiple_contexts_same_device),
// holding the GPU's memory meanwhile. So the worker calls clReleaseContext only for what the client
// released itself.
TEST(Isolation, AnEndedSessionsObjectsGoWithItsWorkerProcess) {
  std::string log = ::testing::TempDir() + "fedcl-releases-" + std::to_string(getpid());
  std::remove(log.c_str());
  std::unique_ptr<DaemonProcess> daemon;
  try {
    DaemonEnvironment shim(FEDCL_RELEASE_RECORDING_BACKEND_PATH, {{"FEDCL_TEST_RELEASE_LOG", log}});
    daemon = std::make_unique<DaemonProcess>(std::vector<std::string>{"--resume-window", "0"});
  } catch (const std::exception &e) {
    ADD_FAILURE() << e.what();
  }
  ASSERT_TRUE(daemon);
  set_hosts(daemon->endpoint());
  Signal ready, finish;
  Client holder(
      [&] {
        Device d = open_device();
        for (int i = 0; i < 3; i++) {
          cl_int err;
          cl_context held = clCreateContext(nullptr, 1, &d.device, nullptr, nullptr, &err);
          if (err != CL_SUCCESS) return 41;
          create_buffer(held, CL_MEM_READ_WRITE, 1 << 20);
        }
        cl_int err;
        cl_context released = clCreateContext(nullptr, 1, &d.device, nullptr, nullptr, &err);
        if (err != CL_SUCCESS || clReleaseContext(released) != CL_SUCCESS || clFinish(d.queue) != CL_SUCCESS) return 42;
        ready.raise();
        return finish.await() ? 0 : 43;
      },
      false);  // returns from main: the runtime says goodbye
  ASSERT_TRUE(ready.await());
  pid_t worker = serving_workers(daemon->port())[holder.pid];
  ASSERT_GT(worker, 0);
  finish.raise();
  EXPECT_EQ(0, holder.wait());
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (kill(worker, 0) == 0 && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_NE(0, kill(worker, 0)) << "the worker of the ended session is gone";
  std::ifstream lines(log);
  size_t releases = 0;
  for (std::string line; std::getline(lines, line);) releases += line == "clReleaseContext " + std::to_string(worker);
  std::remove(log.c_str());
  EXPECT_EQ(1u, releases) << "only the context the client released (of 5)";
  expect_a_new_session_works(*daemon);
}

// A worker whose loop stands still (stuck in a driver call; here stopped with SIGSTOP) is ended by
// the main process after --worker-hang-timeout, and its client learns why when it reconnects.
TEST(Isolation, AWorkerThatStandsStillIsEnded) {
  StderrCapture capture;
  DaemonProcess daemon({"--worker-hang-timeout", "2"});
  set_hosts(daemon.endpoint());
  Signal ready;
  Client stuck([&] {
    setenv("FEDCL_DAEMON_TIMEOUT", "60", 1);  // the client waits: the daemon must end it
    Device d = open_device();
    ready.raise();
    sleep(1);  // the test stops the worker meanwhile
    return clFinish(d.queue) == CL_DEVICE_NOT_AVAILABLE ? 0 : 50;
  });
  ASSERT_TRUE(ready.await());
  pid_t worker = serving_workers(daemon.port())[stuck.pid];
  ASSERT_GT(worker, 0);
  ASSERT_EQ(0, kill(worker, SIGSTOP));
  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(0, stuck.wait()) << capture.so_far();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(15));
  std::string text = capture.text();
  EXPECT_NE(std::string::npos, text.find("stood still")) << text;
  expect_a_new_session_works(daemon);
}

// The main process never loads the backend: the driver's library is mapped in the session's worker,
// never in the process that listens.
TEST(Isolation, TheMainProcessNeverLoadsTheBackend) {
  DaemonProcess daemon;
  set_hosts(daemon.endpoint());
  Signal open;
  Signal done;
  Client client([&] {
    Device d = open_device();
    clReleaseProgram(build_program(d.context, kScaleSource));
    open.raise();
    done.await();
    return 0;
  });
  ASSERT_TRUE(open.await());
  pid_t worker = serving_workers(daemon.port())[client.pid];
  ASSERT_GT(worker, 0);
  EXPECT_TRUE(maps_mention(worker, "libpocl")) << "the worker has no backend mapped: is PoCL the backend?";
  EXPECT_FALSE(maps_mention(daemon.pid(), "libpocl"));
  EXPECT_FALSE(maps_mention(daemon.pid(), "libLLVM"));
  done.raise();
  EXPECT_EQ(0, client.wait());
}

// The worker that lists the devices at fedcld's start stays on as the first spare and takes the
// first session: one backend load fewer per start (docs/design-decisions.md, "Processes"). The
// daemon's debug log names that worker; it goes to a file for this test.
TEST(Isolation, TheWorkerThatListedTheDevicesTakesTheFirstSession) {
  char log_path[] = "/tmp/fedcl-lister-log-XXXXXX";
  int log_fd = mkstemp(log_path);
  ASSERT_GE(log_fd, 0);
  int saved_stderr = dup(2);
  dup2(log_fd, 2);  // the daemon inherits it
  close(log_fd);
  setenv("FEDCL_TEST_DAEMON_LOG", "debug", 1);
  auto daemon = std::make_unique<DaemonProcess>();
  unsetenv("FEDCL_TEST_DAEMON_LOG");
  dup2(saved_stderr, 2);
  close(saved_stderr);
  std::stringstream log;
  log << std::ifstream(log_path).rdbuf();
  unlink(log_path);
  std::smatch found;
  std::string text = log.str();
  ASSERT_TRUE(std::regex_search(text, found, std::regex("worker ([0-9]+) started to list the devices"))) << text;
  pid_t lister = pid_t(std::stol(found[1]));

  set_hosts(daemon->endpoint());
  Signal open;
  Signal done;
  Client client([&] {
    Device d = open_device();
    open.raise();
    done.await();
    return d.context ? 0 : 1;
  });
  ASSERT_TRUE(open.await());
  EXPECT_EQ(lister, serving_workers(daemon->port())[client.pid]) << "the first session is not in the listing worker";
  done.raise();
  EXPECT_EQ(0, client.wait());
}

// With no spares the listing worker ends once it has answered, and each session starts a worker.
TEST(Isolation, WithoutSparesTheListingWorkerEndsAndSessionsStillStart) {
  DaemonProcess daemon({"--spare-workers", "0"});
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!daemon.workers().empty() && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_TRUE(daemon.workers().empty()) << "a worker stayed on with --spare-workers 0";
  set_hosts(daemon.endpoint());
  Client client([&] {
    Device d = open_device();
    clReleaseProgram(build_program(d.context, kScaleSource));
    return 0;
  }, false);
  EXPECT_EQ(0, client.wait());
}

// 200 sessions one after another, each with a context, a queue and a buffer written and read back:
// the daemon's memory (its main process and its workers) ends within 10% of what it was idle.
TEST(Isolation, TwoHundredSessionsLeaveTheDaemonsMemoryWhereItWas) {
  DaemonProcess daemon;
  set_hosts(daemon.endpoint());
  auto settled = [&] {
    // Idle: the main process and its spare workers, all started (their count stops changing).
    size_t count = 0;
    for (int i = 0; i < 100; i++) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      size_t now = daemon.workers().size();
      if (now == count && now > 0) break;
      count = now;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    return daemon.rss_mib();
  };
  long idle = settled();
  ASSERT_GT(idle, 0);
  for (int i = 0; i < 200; i++) {
    Client client([] {
      Device d = open_device();
      std::vector<int> data(1 << 14, 7), back(1 << 14);
      cl_mem buffer = create_buffer(d.context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, data.size() * sizeof(int), data.data());
      if (clEnqueueReadBuffer(d.queue, buffer, CL_TRUE, 0, back.size() * sizeof(int), back.data(), 0, nullptr, nullptr) != CL_SUCCESS)
        return 60;
      return back == data ? 0 : 61;
    }, false);
    ASSERT_EQ(0, client.wait()) << "session " << i;
  }
  long after = settled();
  EXPECT_LE(after, idle + idle / 10) << "idle " << idle << " MiB, after 200 sessions " << after << " MiB";
  std::printf("fedcld's memory: idle %ld MiB, after 200 sessions %ld MiB (main %d and %zu workers)\n", idle, after,
              daemon.pid(), daemon.workers().size());
}

// Clients that vanish with commands behind user events they never set (killed, or buggy) must not
// leave those commands, and the memory they hold, in the backend for ever: the daemon fails such
// events when their session ends. Five such sessions of 64 MiB each leave the daemon's memory where
// one left it (resumption off, so that each session ends when its connection does); kept, the four
// after the first would be twice the margin.
TEST(Isolation, ClientsGoneWithCommandsBehindUnsetUserEventsLeaveNoMemoryBehind) {
  DaemonProcess daemon({"--resume-window", "0"});
  set_hosts(daemon.endpoint());
  auto vanish = [] {
    pid_t child = fork();
    if (child == 0) _exit(launch_and_abandon((64 << 20) / sizeof(int), 1, true));
    int status = -1;
    waitpid(child, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  };
  ASSERT_EQ(0, vanish());
  std::this_thread::sleep_for(std::chrono::seconds(1));  // lets the session's end reach the daemon
  long after_one = daemon.rss_mib();  // the main process and its workers
  ASSERT_GT(after_one, 0);
  for (int i = 0; i < 4; i++) ASSERT_EQ(0, vanish()) << "child " << i + 2;
  long after_five = -1;
  // Memory goes back as the daemon ends the sessions and their workers exit: waited for, bounded
  // (a loaded sanitized run takes seconds to end a worker).
  for (int i = 0; i < 300; i++) {
    after_five = daemon.rss_mib();
    if (after_five <= after_one + 128) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_LE(after_five, after_one + 128) << "fedcld's RSS after one such session: " << after_one
                                         << " MiB; after five: " << after_five << " MiB";
  ASSERT_TRUE(daemon.alive());
}

// A session's limits are its worker's: --session-open-files is the worker's RLIMIT_NOFILE, and
// --max-memory still bounds what the session may allocate on the device.
TEST(Isolation, ASessionsLimitsAreItsWorkersOwn) {
  DaemonProcess daemon({"--session-open-files", "100", "--max-memory", "1M"});
  set_hosts(daemon.endpoint());
  Signal open, done;
  Client client([&] {
    Device d = open_device();
    // The daemon makes a buffer when it is first used: a write of 2 MiB into one past the limit
    // fails there, and the queue's next wait says so.
    std::vector<char> bytes(2 << 20);
    cl_mem big = create_buffer(d.context, CL_MEM_READ_WRITE, bytes.size());
    clEnqueueWriteBuffer(d.queue, big, CL_TRUE, 0, bytes.size(), bytes.data(), 0, nullptr, nullptr);
    cl_int finished = clFinish(d.queue);
    open.raise();
    done.await();
    return finished != CL_SUCCESS ? 0 : 70;
  });
  ASSERT_TRUE(open.await());
  pid_t worker = serving_workers(daemon.port())[client.pid];
  ASSERT_GT(worker, 0);
  std::ifstream limits("/proc/" + std::to_string(worker) + "/limits");
  std::string line, files;
  while (std::getline(limits, line))
    if (line.rfind("Max open files", 0) == 0) files = line;
  EXPECT_NE(std::string::npos, files.find(" 100 ")) << files;
  done.raise();
  EXPECT_EQ(0, client.wait());
}

// An integer division by zero in a kernel is no crash: OpenCL leaves its result undefined, and
// PoCL's CPU devices step over the fault with a SIGFPE handler of their own. The worker's crash
// report must leave that to them (it ended the session instead: the CTS's integer_ops
// divideAssign, moduloAssign and quick_*_math through fedcl, 2026-11-27); other faults still end
// the session with a report.
TEST(Isolation, AnIntegerDivisionByZeroInAKernelIsTheBackendsToHandle) {
  DaemonProcess daemon;
  set_hosts(daemon.endpoint());
  Client client([] {
    Device d = open_device();
    cl_kernel divide = create_kernel(
        build_program(d.context,
                      "__kernel void divide(__global int *out, int by) { out[get_global_id(0)] = 7 / by + 7 % by; }\n"),
        "divide");
    const size_t n = 64;
    cl_mem out = create_buffer(d.context, CL_MEM_READ_WRITE, n * sizeof(int));
    int by = 0;
    if (clSetKernelArg(divide, 0, sizeof out, &out) != CL_SUCCESS ||
        clSetKernelArg(divide, 1, sizeof by, &by) != CL_SUCCESS)
      return 30;
    if (clEnqueueNDRangeKernel(d.queue, divide, 1, nullptr, &n, nullptr, 0, nullptr, nullptr) != CL_SUCCESS) return 31;
    cl_int finished = clFinish(d.queue);
    if (finished != CL_SUCCESS) {
      std::fprintf(stderr, "dividing client: clFinish returned %d\n", finished);
      return 32;
    }
    // The session goes on: a checked launch after it.
    by = 7;
    clSetKernelArg(divide, 1, sizeof by, &by);
    if (clEnqueueNDRangeKernel(d.queue, divide, 1, nullptr, &n, nullptr, 0, nullptr, nullptr) != CL_SUCCESS) return 33;
    std::vector<int> got(n);
    if (clEnqueueReadBuffer(d.queue, out, CL_TRUE, 0, n * sizeof(int), got.data(), 0, nullptr, nullptr) != CL_SUCCESS)
      return 34;
    for (int v : got)
      if (v != 1) return 35;
    return 0;
  });
  EXPECT_EQ(0, client.wait());
  expect_a_new_session_works(daemon);
}
